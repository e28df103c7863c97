// CUptiResult formatting.
#include "collectors/common/cupti_util.h"

namespace warpscope {

std::string CuptiErrorText(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown";
  return std::string(text) + " (" + std::to_string(static_cast<int>(result)) + ")";
}

}  // namespace warpscope
