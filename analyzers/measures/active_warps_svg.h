// Self-contained SVG chart of one kernel's active-warp curve: steady level, 50%/25% lines,
// shaded tail and the verdict in the title, for pasting into a bug report.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_ACTIVE_WARPS_SVG_H_
#define WARPSCOPE_ANALYZERS_MEASURES_ACTIVE_WARPS_SVG_H_

#include <string>
#include <string_view>

#include "analyzers/measures/active_warps.h"

namespace warpscope {

// `gpu_max_warps` (SMs x max warps per SM) draws a "GPU capacity" line when > 0 and within
// reach of the curve.
std::string RenderActiveWarpSvg(const ActiveWarpCurve& curve, std::string_view kernel_name,
                                double gpu_max_warps);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_ACTIVE_WARPS_SVG_H_
