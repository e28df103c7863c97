// Which NVTX push/pop events matter to a watched range (the -p capture range, the flight
// recorder's --slow-step), decided without a lock: the caller keeps one depth counter per
// thread (thread_local in the session) for the watched domain, and only the pushes of the
// watched name, and the pop that ends such a push, need the session's lock. Every other push
// or pop costs a domain compare, a counter update and, for a push, a name compare.
#ifndef WARPSCOPE_LIBINJECT_NVTX_RANGE_MATCH_H_
#define WARPSCOPE_LIBINJECT_NVTX_RANGE_MATCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warpscope {

class NvtxRangeMatch {
 public:
  NvtxRangeMatch() = default;
  // `domain` empty = the default domain.
  NvtxRangeMatch(std::string name, std::string domain)
      : name_(std::move(name)), domain_(std::move(domain)) {}

  bool empty() const { return name_.empty(); }
  const std::string& name() const { return name_; }
  const std::string& domain() const { return domain_; }

  // A push on the thread whose counter is `depth`. Returns the pushed range's depth (0 =
  // outermost in the watched domain) when it is the watched name in the watched domain.
  std::optional<uint32_t> Push(uint32_t& depth, std::string_view name,
                               std::string_view domain) const {
    if (name_.empty() || domain != domain_) return std::nullopt;
    const uint32_t at = depth++;
    if (name != name_) return std::nullopt;
    return at;
  }

  // A pop on the thread whose counter is `depth`: the depth of the range it ends, in the
  // watched domain; nullopt for another domain or a pop without a push (one made before the
  // session started counting).
  std::optional<uint32_t> Pop(uint32_t& depth, std::string_view domain) const {
    if (name_.empty() || domain != domain_ || depth == 0) return std::nullopt;
    return --depth;
  }

 private:
  std::string name_;
  std::string domain_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_NVTX_RANGE_MATCH_H_
