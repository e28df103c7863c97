// Short kernel names (--short-names): a demangled C++ name cut to what tells it apart from
// the other names of the traces shown, and the KernelNames that reports show names through.
#ifndef WARPSCOPE_ANALYZERS_RENDER_SHORT_NAMES_H_
#define WARPSCOPE_ANALYZERS_RENDER_SHORT_NAMES_H_

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace warpscope {

// A C++ function's base name, as Nsight Systems' "base" naming shows it: without return type,
// namespaces, classes, template arguments or parameter list ("void ns::gemm<float, 4>(float
// const*, int)" -> "gemm"). A lambda or an operator keeps the name it is declared in
// ("ns::f(int)::{lambda(float)#1}" -> "f::{lambda(float)#1}"), as they say nothing alone. A name
// that is not a C++ signature comes back as it is. Tells two names apart only by chance: for
// names shown side by side use KernelNames::Short.
std::string BaseFunctionName(std::string_view name);

// How deep ShortNameForm looks into a name. Levels from 0 up: base name; the function's own
// template arguments, each as its base name; then one level of template arguments more each
// step. Then kQualifiedNameLevel: every scope (namespaces, classes, the functions a lambda is
// declared in) and every template argument, with scopes, but no parameter list. Then
// kWholeNameLevel: the name as written.
inline constexpr int kQualifiedNameLevel = 1000;
inline constexpr int kWholeNameLevel = 1001;
std::string ShortNameForm(std::string_view name, int level);

// How a report shows kernel names. By default whole, and cut to 80 columns in text tables
// (ShortKernelName). Built with Short(), each name at the lowest level of ShortNameForm that
// no other name of the set shares, so that two kernels never read alike:
// "cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(...)" and its "_nt_" twin
// show as "Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>" and "..._nt_align1>", and a
// kernel that no other shares its base name with as its base name.
class KernelNames {
 public:
  KernelNames() = default;  // whole names
  // Short names, distinct over `names`: every kernel name of the traces a command shows, so
  // that a kernel reads the same in each table and with any --top.
  static KernelNames Short(const std::vector<std::string_view>& names);

  bool is_short() const { return shown_ != nullptr; }
  // `name` as the report shows it; whole names are cut to 80 columns in text (`text`), short
  // ones never (cutting could make two alike). A name that was not in the set is shown whole:
  // an API call, a copy, an NVTX path, which may hold '<' or ':' and are no C++ names.
  std::string Show(std::string_view name, bool text) const;
  // `text` with every whole name of the set in it shown short: for lines that name kernels
  // inside a sentence ("long tail in NAME"). Names that are not C++ signatures are left as
  // they are, so that a kernel named like a word does not rewrite prose.
  std::string ShortenIn(std::string_view text) const;

 private:
  // Whole name -> shown name; shared, as reports are copied with their names.
  std::shared_ptr<const std::unordered_map<std::string, std::string>> shown_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_RENDER_SHORT_NAMES_H_
