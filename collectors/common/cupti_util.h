// Small helpers around CUptiResult shared by the CUPTI-facing collector files.
#ifndef WARPSCOPE_COLLECTORS_COMMON_CUPTI_UTIL_H_
#define WARPSCOPE_COLLECTORS_COMMON_CUPTI_UTIL_H_

#include <cupti.h>

#include <string>

namespace warpscope {

// "CUPTI_ERROR_INVALID_KIND (3)"
std::string CuptiErrorText(CUptiResult result);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_COMMON_CUPTI_UTIL_H_
