// Renders an active-warp curve as a standalone SVG (no scripts, no external fonts or CSS).
#include "analyzers/measures/active_warps_svg.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/render/svg.h"

namespace warpscope {
namespace {

constexpr double kWidth = 880, kHeight = 460;
constexpr double kLeft = 78, kRight = 24, kBottom = 56;

// A "nice" tick step (1, 2, 5 x 10^k) giving about `target` ticks over [0, max].
double NiceStep(double max, int target) {
  if (max <= 0) return 1;
  const double raw = max / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

// MicrosText with the micro sign, for the chart.
std::string Micros(double ns) {
  std::string t = MicrosText(ns);
  if (t.size() > 3 && t.compare(t.size() - 3, 3, " us") == 0) t.replace(t.size() - 2, 2, "\u00b5s");
  return t;
}

std::string Num(double v) {
  if (std::fabs(v) >= 100 || v == std::floor(v)) return absl::StrFormat("%.0f", v);
  if (std::fabs(v) >= 10) return absl::StrFormat("%.1f", v);
  return absl::StrFormat("%.2f", v);
}

// Greedy word wrap.
std::vector<std::string> Wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(pos, end - pos);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    pos = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// The plot's geometry: where a time (µs since the kernel's start) and a warp count land.
struct Chart {
  Chart(const ActiveWarpCurve& curve, size_t verdict_lines, double gpu_max_warps)
      : top(44 + 16.0 * verdict_lines + 14),
        plot_w(kWidth - kLeft - kRight),
        plot_h(kHeight - top - kBottom),
        duration_us(curve.duration_ns / 1e3),
        start_ns(curve.start_ns) {
    y_max = std::max(curve.peak, curve.steady);
    for (const CurveSegment& seg : curve.segments) y_max = std::max(y_max, seg.warps);
    if (gpu_max_warps > 0 && gpu_max_warps <= 1.25 * y_max) y_max = gpu_max_warps;
    if (y_max <= 0) y_max = 1;
    y_step = NiceStep(y_max * 1.05, 5);
    y_max = std::ceil(y_max * 1.05 / y_step) * y_step;
    x_step = NiceStep(duration_us, 8);
  }
  double X(double us) const { return kLeft + (duration_us > 0 ? us / duration_us : 0) * plot_w; }
  double Y(double warps) const { return top + plot_h - warps / y_max * plot_h; }
  double Us(uint64_t ns) const { return (static_cast<double>(ns) - start_ns) / 1e3; }

  double top, plot_w, plot_h, duration_us;
  double start_ns;
  double y_max = 1, y_step = 1, x_step = 1;
};

void AppendTitle(const std::string& name, const std::vector<std::string>& verdict_lines,
                 bool material, std::string& s) {
  absl::StrAppendFormat(&s,
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                        "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, "
                        "sans-serif\" font-size=\"12\">\n",
                        kWidth, kHeight, kWidth, kHeight);
  absl::StrAppend(&s, "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
  absl::StrAppendFormat(&s,
                        "<text x=\"%.0f\" y=\"24\" font-size=\"15\" font-weight=\"bold\" "
                        "fill=\"#111\">%s</text>\n",
                        kLeft - 60, SvgEscape(name));
  double line_y = 44;
  for (const std::string& line : verdict_lines) {
    absl::StrAppendFormat(&s, "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n", kLeft - 60,
                          line_y, material ? "#b02a1a" : "#555", SvgEscape(line));
    line_y += 16;
  }
}

// Grid and axes. Ticks are counted rather than summed up to the maximum: next to a tiny
// maximum (a corrupt trace's 1e-300 warps) an absolute tolerance means 10^290 ticks.
void AppendGrid(const Chart& c, std::string& s) {
  constexpr int kMaxTicks = 50;
  for (int i = 0; i <= kMaxTicks && i * c.y_step <= c.y_max * (1 + 1e-9); ++i) {
    const double v = i * c.y_step;
    absl::StrAppendFormat(
        &s,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\">%s</text>\n",
        kLeft, c.Y(v), kLeft + c.plot_w, c.Y(v), kLeft - 6, c.Y(v) + 4, Num(v));
  }
  for (int i = 0; i <= kMaxTicks && i * c.x_step <= c.duration_us * (1 + 1e-9); ++i) {
    const double t = i * c.x_step;
    absl::StrAppendFormat(
        &s,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#f0f0f0\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#444\">%s</text>\n",
        c.X(t), c.top, c.X(t), c.top + c.plot_h, c.X(t), c.top + c.plot_h + 16, Num(t));
  }
}

// The tail region, then the curve as filled steps.
void AppendTailAndCurve(const Chart& c, const ActiveWarpCurve& curve, std::string& s) {
  if (curve.has_tail_metrics && curve.drain_ns > 0) {
    const double from = c.duration_us - curve.drain_ns / 1e3;
    absl::StrAppendFormat(&s,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                          "fill=\"#f4b6ae\" fill-opacity=\"0.45\"/>\n"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#b02a1a\">"
                          "tail %.0f%% (%s)</text>\n",
                          c.X(from), c.top, c.X(c.duration_us) - c.X(from), c.plot_h,
                          (c.X(from) + c.X(c.duration_us)) / 2, c.top + 14,
                          curve.tail_fraction * 100, SvgEscape(Micros(curve.drain_ns)));
  }
  if (curve.segments.empty()) return;
  std::string path = absl::StrFormat("M%.2f,%.2f", c.X(0), c.Y(0));
  for (const CurveSegment& seg : curve.segments) {
    absl::StrAppendFormat(&path, " L%.2f,%.2f L%.2f,%.2f", c.X(c.Us(seg.start_ns)), c.Y(seg.warps),
                          c.X(c.Us(seg.end_ns)), c.Y(seg.warps));
  }
  absl::StrAppendFormat(&path, " L%.2f,%.2f Z", c.X(c.duration_us), c.Y(0));
  absl::StrAppendFormat(&s,
                        "<path d=\"%s\" fill=\"#4a78b5\" fill-opacity=\"0.25\" "
                        "stroke=\"#1f4e8c\" stroke-width=\"1.6\" stroke-linejoin=\"round\"/>\n",
                        path);
}

// Samples shared with other kernels: their value includes those kernels, so they are drawn
// in orange and left out of steady and peak; a value capped at the limit gets a "capped" mark.
void AppendSegmentMarks(const Chart& c, const ActiveWarpCurve& curve, std::string& s) {
  for (const CurveSegment& seg : curve.segments) {
    if (seg.shared) {
      absl::StrAppendFormat(&s,
                            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
                            "stroke=\"#e07b00\" stroke-width=\"3.5\" stroke-dasharray=\"5,3\">"
                            "<title>PM sample shared with other kernels: %s warps</title></line>\n",
                            c.X(c.Us(seg.start_ns)), c.Y(seg.warps), c.X(c.Us(seg.end_ns)),
                            c.Y(seg.warps), Num(seg.warps));
    }
    if (seg.clamped) {
      const double x = (c.X(c.Us(seg.start_ns)) + c.X(c.Us(seg.end_ns))) / 2;
      absl::StrAppendFormat(&s,
                            "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
                            "fill=\"#b02a1a\" font-size=\"10\">capped</text>\n",
                            x, c.Y(seg.warps) - 5);
    }
  }
}

void AppendReferenceLines(const Chart& c, const ActiveWarpCurve& curve, double gpu_max_warps,
                          std::string& s) {
  auto hline = [&](double v, const char* color, const char* dash, const std::string& label,
                   double label_dy = -4) {
    if (v <= 0 || v > c.y_max) return;
    absl::StrAppendFormat(&s,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                          "stroke-width=\"1.3\" stroke-dasharray=\"%s\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\">%s</text>\n",
                          kLeft, c.Y(v), kLeft + c.plot_w, c.Y(v), color, dash,
                          kLeft + c.plot_w - 4, c.Y(v) + label_dy, color, SvgEscape(label));
  };
  if (gpu_max_warps > 0)
    hline(gpu_max_warps, "#777", "2,3", absl::StrCat("GPU capacity ", Num(gpu_max_warps)));
  // The launch's own limit (theoretical occupancy x SMs), when below the GPU's capacity.
  const bool own_limit = curve.limit_theoretical && curve.limit_warps > 0 &&
                         (gpu_max_warps <= 0 || curve.limit_warps < gpu_max_warps);
  if (own_limit) {
    hline(curve.limit_warps, "#8250df", "2,3",
          absl::StrCat("theoretical limit ", Num(curve.limit_warps)));
  }
  if (curve.steady <= 0) return;
  // A steady level close to a labelled limit would print over its label: put it below.
  auto near = [&](double v) { return v > 0 && std::fabs(c.Y(v) - c.Y(curve.steady)) < 14; };
  const bool crowded = near(gpu_max_warps) || (own_limit && near(curve.limit_warps));
  hline(curve.steady, "#1a7f37", "7,4",
        absl::StrCat("steady ", Num(curve.steady),
                     curve.levels_from_shared ? " (from shared samples)" : ""),
        crowded ? 13 : -4);
  hline(0.5 * curve.steady, "#9a6700", "4,4", "50% of steady");
  hline(0.25 * curve.steady, "#cf222e", "4,4", "25% of steady");
}

void AppendAxes(const Chart& c, const ActiveWarpCurve& curve, std::string& s) {
  absl::StrAppendFormat(&s,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                        "stroke=\"#333\"/>\n",
                        kLeft, c.top, c.plot_w, c.plot_h);
  std::string samples_text = absl::StrCat(curve.samples, " PM samples");
  if (curve.shared_samples > 0) {
    absl::StrAppend(&samples_text, ", ", curve.shared_samples, " shared with other kernels (orange",
                    curve.levels_from_shared ? ")" : ", not in steady/peak)");
  }
  if (curve.above_limit > 0) absl::StrAppend(&samples_text, ", ", curve.above_limit, " capped");
  absl::StrAppendFormat(&s,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#222\">time "
                        "since kernel start (\u00b5s) \u2014 %s total, %s</text>\n",
                        kLeft + c.plot_w / 2, kHeight - 14, SvgEscape(Micros(curve.duration_ns)),
                        SvgEscape(samples_text));
  absl::StrAppendFormat(&s,
                        "<text transform=\"translate(16,%.1f) rotate(-90)\" text-anchor=\"middle\" "
                        "fill=\"#222\">active warps (whole GPU)</text>\n",
                        c.top + c.plot_h / 2);
}

}  // namespace

std::string RenderActiveWarpSvg(const ActiveWarpCurve& curve, std::string_view kernel_name,
                                double gpu_max_warps) {
  std::string name(kernel_name);
  if (name.size() > 100) name = name.substr(0, 97) + "...";
  std::string verdict = curve.verdict;
  if (verdict.empty()) {
    verdict = curve.has_tail_metrics ? "no material tail (balanced)" : curve.note;
  }
  const std::vector<std::string> verdict_lines = Wrap(verdict, 118);
  const Chart chart(curve, verdict_lines.size(), gpu_max_warps);
  std::string s;
  AppendTitle(name, verdict_lines, /*material=*/!curve.verdict.empty(), s);
  AppendGrid(chart, s);
  AppendTailAndCurve(chart, curve, s);
  AppendSegmentMarks(chart, curve, s);
  AppendReferenceLines(chart, curve, gpu_max_warps, s);
  AppendAxes(chart, curve, s);
  s += "</svg>\n";
  return s;
}

}  // namespace warpscope
