// KernelNameFilter: the `--kernel REGEX` selection of `occupancy` and `tail`. RE2 (linear
// time, no recursion) searches each distinct demangled name once: templated kernel names run
// to thousands of characters and a trace launches the same kernel many times.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_KERNEL_NAME_FILTER_H_
#define WARPSCOPE_ANALYZERS_MEASURES_KERNEL_NAME_FILTER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "absl/status/statusor.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace warpscope {

class KernelNameFilter {
 public:
  // `pattern` in RE2 syntax (docs/cli.md), searched anywhere in the name (unanchored); an
  // empty pattern accepts every name. InvalidArgument, with RE2's reason, for a pattern RE2
  // does not accept.
  static absl::StatusOr<KernelNameFilter> Create(std::string_view pattern);

  KernelNameFilter(KernelNameFilter&&) noexcept;
  KernelNameFilter& operator=(KernelNameFilter&&) noexcept;
  ~KernelNameFilter();

  // Whether `name` matches. Names from a TraceModel are views into its interned-string table,
  // so every launch of one kernel hands in the same view: the answer is remembered per view
  // (address and length), and the characters are searched once per distinct name.
  bool Matches(std::string_view name);

  bool accepts_all() const { return re_ == nullptr; }

 private:
  KernelNameFilter() = default;

  struct ViewHash {
    size_t operator()(std::string_view v) const {
      return std::hash<const void*>()(v.data()) ^ (v.size() * 0x9e3779b97f4a7c15ull);
    }
  };
  struct SameView {
    bool operator()(std::string_view a, std::string_view b) const {
      return a.data() == b.data() && a.size() == b.size();
    }
  };

  std::unique_ptr<re2::RE2> re_;  // null: accept all
  std::unordered_map<std::string_view, bool, ViewHash, SameView> seen_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_KERNEL_NAME_FILTER_H_
