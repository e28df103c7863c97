// The picture of `warpscope memory --svg`: memory in use (and reserved) over time per device,
// a step line through the timeline's curve, with the steps as vertical lines and the NVTX
// phases as bands along the top.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/memory_timeline.h"
#include "analyzers/measures/steps.h"
#include "analyzers/render/output.h"
#include "analyzers/render/svg.h"

namespace warpscope {
namespace {

constexpr double kLeft = 90, kWidth = 900, kPlotHeight = 220, kBand = 16, kGap = 40;

struct Frame {
  uint64_t begin = 0, end = 1;
  double X(uint64_t t) const {
    return kLeft + kWidth * static_cast<double>(std::clamp(t, begin, end) - begin) /
                       static_cast<double>(end - begin);
  }
};

// A step line of one curve's values (in_use or reserved), scaled to `top`.
std::string StepLine(const std::vector<MemoryPoint>& curve, bool reserved, const Frame& f,
                     double y0, double top, const char* color) {
  std::string points;
  double last_y = y0 + kPlotHeight;
  for (const MemoryPoint& p : curve) {
    const double v = static_cast<double>(reserved ? p.reserved_bytes : p.in_use_bytes);
    const double y = y0 + kPlotHeight - (top <= 0 ? 0 : kPlotHeight * v / top);
    absl::StrAppendFormat(&points, "%.1f,%.1f %.1f,%.1f ", f.X(p.time_ns), last_y, f.X(p.time_ns),
                          y);
    last_y = y;
  }
  absl::StrAppendFormat(&points, "%.1f,%.1f", kLeft + kWidth, last_y);
  return absl::StrFormat(
      "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", color,
      points);
}

std::string DevicePlot(const DeviceMemory& d, const Frame& f, const std::vector<Step>& steps,
                       double y0) {
  uint64_t top = std::max<uint64_t>(d.peak_bytes, d.peak_reserved_bytes);
  std::string out = absl::StrFormat(
      "<text x=\"4\" y=\"%.1f\" font-size=\"12\">device %u</text>\n"
      "<text x=\"4\" y=\"%.1f\" font-size=\"10\">%s</text>\n"
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
      "stroke=\"#999\"/>\n",
      y0 + 14, d.device_id, y0 + 30, SvgEscape(FormatBytes(static_cast<double>(top))), kLeft,
      y0, kWidth, kPlotHeight);
  for (const Step& s : steps) {
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\">"
                          "<title>%s</title></line>\n",
                          f.X(s.start_ns), y0, f.X(s.start_ns), y0 + kPlotHeight,
                          SvgEscape(s.name));
  }
  absl::StrAppend(&out, StepLine(d.curve, true, f, y0, static_cast<double>(top), "#e69f00"),
                  StepLine(d.curve, false, f, y0, static_cast<double>(top), "#0072b2"));
  return out;
}

}  // namespace

std::string MemorySvg(const MemoryTimeline& timeline, const std::vector<Step>& steps,
                      const std::vector<std::pair<std::string, MemoryInterval>>& phases) {
  Frame f{timeline.first_ns, std::max(timeline.last_ns, timeline.first_ns + 1)};
  const double bands = kBand + 10;
  const double height =
      bands + static_cast<double>(timeline.devices.size()) * (kPlotHeight + kGap) + 30;
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\">\n<text x=\"4\" y=\"12\" font-size=\"11\">memory in use "
      "(blue) and reserved (orange) over time; steps as grey lines, NVTX phases on top</text>\n",
      kLeft + kWidth + 20, height);
  for (const auto& [name, interval] : phases) {
    const double x = f.X(interval.start_ns);
    absl::StrAppendFormat(&out,
                          "<rect x=\"%.1f\" y=\"18\" width=\"%.1f\" height=\"%.1f\" "
                          "fill=\"#009e73\" fill-opacity=\"0.3\"><title>%s</title></rect>\n",
                          x, std::max(1.0, f.X(interval.end_ns) - x), kBand, SvgEscape(name));
  }
  double y = bands + 18;
  for (const DeviceMemory& d : timeline.devices) {
    absl::StrAppend(&out, DevicePlot(d, f, steps, y));
    y += kPlotHeight + kGap;
  }
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

}  // namespace warpscope
