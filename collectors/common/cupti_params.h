// CUPTI's profiler-era calls take a params struct whose unused fields must be zero and whose
// structSize says which version the caller was built against.
#ifndef WARPSCOPE_COLLECTORS_COMMON_CUPTI_PARAMS_H_
#define WARPSCOPE_COLLECTORS_COMMON_CUPTI_PARAMS_H_

#include <cstddef>
#include <cstring>

namespace warpscope {

// A zeroed CUPTI params struct with its structSize set (pass the header's *_STRUCT_SIZE).
template <typename T>
T CuptiParams(size_t struct_size) {
  T params{};
  params.structSize = struct_size;
  return params;
}

// The same for the PC sampling API's params, whose version field is `size` (pass the header's
// *ParamsSize). Zeroed byte by byte: some hold unions.
template <typename T>
T CuptiSizedParams(size_t size) {
  T params;
  std::memset(&params, 0, sizeof(params));
  params.size = size;
  return params;
}

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_COMMON_CUPTI_PARAMS_H_
