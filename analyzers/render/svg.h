// What every SVG warpscope draws needs: text escaped for SVG. Each chart lives with its
// analysis (analyses/active_warps_svg.h, the stall bars in analyses/stall_report_render.cc).
#ifndef WARPSCOPE_ANALYZERS_RENDER_SVG_H_
#define WARPSCOPE_ANALYZERS_RENDER_SVG_H_

#include <string>
#include <string_view>

namespace warpscope {

// Escapes &, <, >, " and ' for SVG text and attributes.
std::string SvgEscape(std::string_view text);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_RENDER_SVG_H_
