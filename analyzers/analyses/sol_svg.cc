// The roofline of `warpscope sol --svg`: the device's roofs from its attributes and each top
// kernel's achieved FLOP/s against its DRAM bytes/s (sol.h, docs/sol.md).
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/sol.h"
#include "analyzers/render/svg.h"

namespace warpscope {
namespace {

// GH100 per SM per clock (Hopper architecture whitepaper, dense): 128 FP32 FMA lanes (256
// FLOP), tensor cores 4096 FLOP at FP16/BF16 and 2048 at TF32, 64 FP64 FMA lanes (128 FLOP).
constexpr double kFp32FlopPerSmClock = 256;
constexpr double kTensorFp16FlopPerSmClock = 4096;
constexpr double kTensorTf32FlopPerSmClock = 2048;
constexpr double kFp64FlopPerSmClock = 128;

size_t Unit(std::string_view name) {
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (kSolUnits[u].unit == name) return u;
  }
  return 0;
}

// The sustained DRAM bandwidth the counters imply: bytes/s over the share of peak, the median
// over samples that moved at least 5% of it.
double BandwidthFromSamples(const SolSamples& samples) {
  const size_t dram = Unit("dram");
  std::vector<double> peaks;
  for (size_t i = 0; i < samples.times.samples.size(); ++i) {
    const double pct = samples.pct[i][dram];
    const double bytes = samples.dram_bytes[i];
    const ActiveWarpSample& s = samples.times.samples[i];
    if (std::isnan(pct) || std::isnan(bytes) || pct < 5 || s.end_ns <= s.start_ns) continue;
    peaks.push_back(bytes / static_cast<double>(s.end_ns - s.start_ns) * 1e9 / (pct / 100));
  }
  return SolMedian(peaks);
}

}  // namespace

SolRoofs SolRoofsOf(const DeviceInfo& device, const SolSamples& samples) {
  SolRoofs r;
  const double sm_clock = static_cast<double>(device.sm_count) *
                          static_cast<double>(device.core_clock_khz) * 1e3;
  r.fp32 = sm_clock * kFp32FlopPerSmClock;
  r.tensor_fp16 = sm_clock * kTensorFp16FlopPerSmClock;
  r.tensor_tf32 = sm_clock * kTensorTf32FlopPerSmClock;
  r.fp64 = sm_clock * kFp64FlopPerSmClock;
  if (device.global_memory_bandwidth_kbps > 0) {
    r.dram_bytes_per_s = static_cast<double>(device.global_memory_bandwidth_kbps) * 1024;
    r.dram_source = "the device record";
  } else if (const double measured = BandwidthFromSamples(samples); measured > 0) {
    r.dram_bytes_per_s = measured;
    r.dram_source = "the samples (bytes/s over the DRAM share of peak)";
  }
  return r;
}

namespace {

constexpr double kWidth = 760, kHeight = 480, kLeft = 80, kTop = 40, kPlotW = 520, kPlotH = 380;
constexpr double kMinX = 1e-2, kMaxX = 1e4;  // FLOP per byte

struct Axes {
  double min_y, max_y;
  double X(double ai) const {
    return kLeft + kPlotW * (std::log10(ai / kMinX) / std::log10(kMaxX / kMinX));
  }
  double Y(double flops) const {
    return kTop + kPlotH * (1 - std::log10(flops / min_y) / std::log10(max_y / min_y));
  }
};

std::string Roof(const Axes& a, double flops, double bandwidth, std::string_view label,
                 std::string_view color) {
  // Sloped part up to the ridge (flops / bandwidth), flat after it.
  const double ridge = bandwidth > 0 ? flops / bandwidth : kMinX;
  const double start = std::max(kMinX, a.min_y / std::max(bandwidth, 1.0));
  std::string out;
  if (bandwidth > 0 && ridge > kMinX) {
    absl::StrAppendFormat(&out, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s'/>\n",
                          a.X(start), a.Y(start * bandwidth), a.X(std::min(ridge, kMaxX)),
                          a.Y(std::min(ridge, kMaxX) * bandwidth), color);
  }
  absl::StrAppendFormat(&out,
                        "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s'/>\n"
                        "<text x='%.1f' y='%.1f' font-size='11' fill='%s'>%s %.1f TFLOP/s</text>\n",
                        a.X(std::max(ridge, kMinX)), a.Y(flops), a.X(kMaxX), a.Y(flops), color,
                        a.X(kMaxX) + 4, a.Y(flops) + 4, color, SvgEscape(label), flops / 1e12);
  return out;
}

}  // namespace

std::string SolRooflineSvg(const SolReport& report, const SolRoofs& roofs,
                           const KernelNames& names, size_t top) {
  Axes a{1e9, std::max(roofs.tensor_fp16, 1e12) * 2};
  std::string body;
  absl::StrAppendFormat(&body,
                        "<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' fill='none' "
                        "stroke='#888'/>\n",
                        kLeft, kTop, kPlotW, kPlotH);
  for (double x = kMinX; x <= kMaxX; x *= 10) {
    absl::StrAppendFormat(&body, "<text x='%.1f' y='%.1f' font-size='10'>%g</text>\n", a.X(x) - 8,
                          kTop + kPlotH + 14, x);
  }
  for (double y = a.min_y; y <= a.max_y; y *= 10) {
    absl::StrAppendFormat(&body, "<text x='%.1f' y='%.1f' font-size='10'>%g</text>\n", 10.0,
                          a.Y(y) + 3, y);
  }
  body += Roof(a, roofs.tensor_fp16, roofs.dram_bytes_per_s, "tensor FP16", "#7a3");
  body += Roof(a, roofs.tensor_tf32, roofs.dram_bytes_per_s, "tensor TF32", "#aa3");
  body += Roof(a, roofs.fp32, roofs.dram_bytes_per_s, "FP32 FMA", "#37a");
  body += Roof(a, roofs.fp64, roofs.dram_bytes_per_s, "FP64", "#a37");
  const size_t tensor = Unit("tensor");
  size_t drawn = 0, skipped = 0;
  for (const SolRow& r : report.rows) {
    if (drawn >= top) break;
    const SolKernel& k = r.kernel;
    double flops = std::isnan(k.fma_flop_per_s) ? 0 : k.fma_flop_per_s;
    if (!std::isnan(k.value[tensor])) flops += k.value[tensor] / 100 * roofs.tensor_fp16;
    if (!(flops > 0) || !(k.dram_bytes_per_s > 0)) {
      ++skipped;
      continue;
    }
    const double ai = std::clamp(flops / k.dram_bytes_per_s, kMinX, kMaxX);
    ++drawn;
    absl::StrAppendFormat(
        &body,
        "<circle cx='%.1f' cy='%.1f' r='5' fill='#d52'><title>%s: %.2f TFLOP/s, %.1f GB/s, "
        "%s</title></circle>\n<text x='%.1f' y='%.1f' font-size='10'>%d</text>\n",
        a.X(ai), a.Y(std::max(flops, a.min_y)), SvgEscape(names.Show(k.name, false)), flops / 1e12,
        k.dram_bytes_per_s / 1e9, SolVerdictName(r.verdict), a.X(ai) + 6,
        a.Y(std::max(flops, a.min_y)) - 6, static_cast<int>(drawn));
    absl::StrAppendFormat(&body, "<text x='%.0f' y='%.1f' font-size='10'>%d %s</text>\n", kLeft,
                          kTop + kPlotH + 34 + 12.0 * static_cast<double>(drawn),
                          static_cast<int>(drawn), SvgEscape(names.Show(k.name, true)));
  }
  const double height = kHeight + 12.0 * static_cast<double>(drawn);
  return absl::StrFormat(
      "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
      "font-family='sans-serif'>\n<text x='%.0f' y='20' font-size='13'>Roofline: achieved FLOP/s "
      "(FMA pipe as FFMA + tensor pipe as FP16) against FLOP per DRAM byte; DRAM roof %.0f GB/s "
      "from %s%s</text>\n%s</svg>\n",
      kWidth, height, kLeft, roofs.dram_bytes_per_s / 1e9,
      roofs.dram_source.empty() ? "nowhere (unknown)" : roofs.dram_source,
      skipped > 0 ? absl::StrCat("; ", skipped, " kernel(s) without FLOP or bytes left out") : "",
      body);
}

}  // namespace warpscope
