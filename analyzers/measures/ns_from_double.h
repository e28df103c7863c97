// Nanoseconds computed in floating point, turned back into a duration that cannot overflow.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_NS_FROM_DOUBLE_H_
#define WARPSCOPE_ANALYZERS_MEASURES_NS_FROM_DOUBLE_H_

#include <cstdint>

namespace warpscope {

// NaN and negative values give 0, values beyond the range of uint64_t give its maximum (a
// damaged trace can hold any timestamps, and a cost computed from them any value).
inline uint64_t NsFromDouble(double ns) {
  if (!(ns > 0)) return 0;
  if (ns >= 0x1p64) return UINT64_MAX;
  return static_cast<uint64_t>(ns);
}

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_NS_FROM_DOUBLE_H_
