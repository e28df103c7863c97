// Active-warp step curves per kernel instance, tail metrics, verdicts and per-name summaries.
#include "analyzers/measures/active_warps.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/sampling_coverage.h"
#include "analyzers/model/trace_limits.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

std::string Pct(double fraction) { return absl::StrFormat("%.0f%%", fraction * 100.0); }

// Why a kernel has no curve: its end overflows, no sample overlaps it, or the samples lack
// GPU-wide active warps.
std::string NoCurveNote(const KernelEvent& kernel, std::span<const SampleOverlap> overlaps,
                        const ActiveWarpSamples& samples) {
  if (EndOverflows(kernel.start_ns, kernel.duration_ns)) {
    return "the kernel's start_ns + duration_ns overflows 64 bits (a corrupt event)";
  }
  if (overlaps.empty()) {
    const uint64_t interval = samples.IntervalOnDevice(kernel.device_id);
    return interval > 0 && kernel.duration_ns < interval
               ? absl::StrCat("no PM samples: kernel shorter than the sampling interval (",
                              MicrosText(kernel.duration_ns), " < ", MicrosText(interval), ")")
               : "no PM samples overlap this kernel";
  }
  return absl::StrCat("the PM metric set has no GPU-wide active warps (", kMetricGpuWarpsElapsed,
                      ")");
}

// Closes gaps: each side of a gap keeps its value up to the middle; the ends stretch to the
// kernel's start and end.
void CloseGaps(std::vector<CurveSegment>& segments, uint64_t start_ns, uint64_t end_ns) {
  std::sort(segments.begin(), segments.end(),
            [](const CurveSegment& a, const CurveSegment& b) { return a.start_ns < b.start_ns; });
  segments.front().start_ns = start_ns;
  for (size_t i = 1; i < segments.size(); ++i) {
    CurveSegment& prev = segments[i - 1];
    CurveSegment& cur = segments[i];
    if (prev.end_ns < cur.start_ns) {
      const uint64_t mid = prev.end_ns + (cur.start_ns - prev.end_ns) / 2;
      prev.end_ns = mid;
      cur.start_ns = mid;
    } else {
      cur.start_ns = prev.end_ns;  // overlapping samples: the earlier one wins
    }
  }
  segments.back().end_ns = end_ns;
  std::erase_if(segments, [](const CurveSegment& s) { return s.end_ns <= s.start_ns; });
}

// Resamples the curve onto `points` equal bins of normalised time.
void Resample(const KernelEvent& kernel, int points, ActiveWarpCurve& c) {
  const double duration = static_cast<double>(kernel.duration_ns);
  const int n = std::max(1, points);
  c.points.assign(n, 0.0);
  size_t first = 0;
  for (int b = 0; b < n; ++b) {
    const double lo = kernel.start_ns + duration * b / n;
    const double hi = kernel.start_ns + duration * (b + 1) / n;
    double sum = 0;
    while (first < c.segments.size() && c.segments[first].end_ns <= lo) ++first;
    for (size_t i = first; i < c.segments.size() && c.segments[i].start_ns < hi; ++i) {
      const double a = std::max<double>(lo, c.segments[i].start_ns);
      const double z = std::min<double>(hi, c.segments[i].end_ns);
      if (z > a) sum += (z - a) * c.segments[i].warps;
    }
    c.points[b] = hi > lo ? sum / (hi - lo) : 0.0;
  }
}

// What qualifies a curve: too few samples, shared samples, low coverage, capped samples.
void AddCurveNotes(const TailOptions& options, double duration, ActiveWarpCurve& c) {
  if (c.samples < options.min_samples) {
    c.has_tail_metrics = false;
    c.verdict.clear();
    c.note = absl::StrCat("only ", c.samples, " PM sample", c.samples == 1 ? "" : "s", " over ",
                          MicrosText(duration),
                          ": too few for tail metrics (record with a shorter --pm-interval)");
  } else if (c.levels_from_shared) {
    c.note = absl::StrCat("every PM sample of this kernel also covers another kernel: the curve, "
                          "steady and peak include that kernel's warps");
  } else if (c.shared_fraction > 0.5) {
    c.note = absl::StrCat(Pct(c.shared_fraction),
                          " of the runtime is in samples shared with other kernels: the curve "
                          "includes their warps there (steady and peak do not)");
  } else if (c.coverage < kLowCoverage) {
    c.note = absl::StrCat("PM samples cover only ", Pct(c.coverage), " of the runtime");
  }
  if (c.above_limit > 0) {
    if (!c.note.empty()) c.note += "; ";
    absl::StrAppend(&c.note, c.above_limit, " PM sample", c.above_limit == 1 ? "" : "s",
                    " above the ", absl::StrFormat("%.0f", c.limit_warps),
                    c.limit_theoretical ? " warps its theoretical occupancy allows on this GPU"
                                        : " warps the GPU holds",
                    " (another kernel ran in ", c.above_limit == 1 ? "it" : "them",
                    "), capped to it");
  }
}

// Why the report has no curves, or "" when the samples can give them.
std::string MissingSamplesProblem(const PmInputs& in, const ActiveWarpSamples& samples) {
  if (samples.samples.empty() && !in.samples_unavailable.empty()) {
    return std::string(in.samples_unavailable);
  }
  if (samples.samples.empty()) {
    return "the trace has no PM samples: record with `warpscope record --pm-sampling` to get "
           "active-warp curves";
  }
  if (!samples.has_gpu_warps) {
    return absl::StrCat("the PM metric set has no GPU-wide active warps (", kMetricGpuWarpsElapsed,
                        ", or ", kMetricWarpsPerSmActive, " with ", kMetricSmCyclesActive, " and ",
                        kMetricCyclesElapsed, ")");
  }
  return "";
}

// Adds launch `ci`'s curve (one with tail metrics) to its kernel's summary; the rates are
// weighted by duration and divided by the total in FinishSummary.
void AddCurveToSummary(const std::vector<ActiveWarpCurve>& curves, uint32_t ci,
                       KernelTailSummary& sum) {
  const ActiveWarpCurve& c = curves[ci];
  const double w = static_cast<double>(c.duration_ns);
  if (sum.launches_with_curve == 0 || c.tail_cost_ns > curves[sum.worst_instance].tail_cost_ns) {
    sum.worst_instance = ci;
  }
  ++sum.launches_with_curve;
  sum.curve_ns += c.duration_ns;
  sum.covered_ns += c.coverage * w;
  sum.total_tail_cost_ns += c.tail_cost_ns;
  sum.tail_fraction += w * c.tail_fraction;
  sum.tail_low += w * c.tail_low;
  sum.tail_high += w * c.tail_high;
  sum.tail_cost_fraction += w * c.tail_cost_fraction;
  sum.below_50 += w * c.below_50;
  sum.below_25 += w * c.below_25;
  sum.steady += w * c.steady;
  sum.peak = std::max(sum.peak, c.peak);
  sum.shared_samples += c.shared_samples;
  sum.above_limit += c.above_limit;
  if (c.levels_from_shared) ++sum.launches_levels_from_shared;
  sum.limit_warps = std::max(sum.limit_warps, c.limit_warps);
}

// Turns a summary's weighted sums into rates, and gives its verdict.
void FinishSummary(const TailOptions& options, KernelTailSummary& sum) {
  if (sum.launches_with_curve == 0) return;
  const double w = static_cast<double>(sum.curve_ns);
  if (w <= 0) return;
  sum.tail_fraction /= w;
  sum.tail_low /= w;
  sum.tail_high /= w;
  if (sum.tail_high - sum.tail_low > kMaxTailWidth) {
    // Each edge is known to one PM sample: samples a twentieth of a launch keep it within 10%.
    const double launch_ns = w / sum.launches_with_curve;
    sum.too_few = absl::StrFormat(
        "its tail is known only to %.0f-%.0f%% of the runtime (a launch of %s spans few PM "
        "samples): record with --pm-interval %s or shorter",
        100 * sum.tail_low, 100 * sum.tail_high, FormatDuration(launch_ns),
        FormatDuration(std::max(1000.0, launch_ns / 20)));
  }
  sum.tail_cost_fraction /= w;
  sum.below_50 /= w;
  sum.below_25 /= w;
  sum.steady /= w;
  sum.verdict = TailVerdict(sum.tail_fraction, sum.tail_cost_fraction, sum.below_50, sum.below_25,
                            sum.curve_ns, options);
  sum.coverage_note =
      LowCoverageNote("PM", sum.launches_with_curve, sum.launches, sum.covered_fraction());
  if (sum.launches_with_curve < sum.launches) {
    sum.note = absl::StrCat(sum.launches - sum.launches_with_curve, " of ", sum.launches,
                            " launches without tail metrics: ", sum.note);
  } else {
    sum.note.clear();
  }
}

}  // namespace

ActiveWarpCurve BuildActiveWarpCurve(uint32_t kernel_index, const KernelEvent& kernel,
                                     std::span<const SampleOverlap> overlaps,
                                     const ActiveWarpSamples& samples,
                                     const PmAttribution& attribution,
                                     const ResidentWarpLimit& limit, const TailOptions& options) {
  ActiveWarpCurve c;
  c.kernel_index = kernel_index;
  c.start_ns = kernel.start_ns;
  c.duration_ns = kernel.duration_ns;
  c.limit_warps = limit.gpu;
  c.limit_theoretical = limit.theoretical && limit.gpu > 0;
  const uint64_t k_end = kernel.end_ns();
  double covered = 0, shared = 0;
  for (const SampleOverlap& o : overlaps) {
    const ActiveWarpSample& s = samples.samples[o.sample];
    if (std::isnan(s.gpu_warps)) continue;
    CurveSegment seg;
    seg.start_ns = std::max(s.start_ns, kernel.start_ns);
    seg.end_ns = std::min(s.end_ns, k_end);
    if (seg.end_ns <= seg.start_ns) continue;
    const double busy = static_cast<double>(attribution.sample_busy_ns[o.sample]);
    const double length = static_cast<double>(s.end_ns - s.start_ns);
    seg.warps = s.gpu_warps * (busy > 0 ? length / busy : 1.0);
    if (limit.gpu > 0 && seg.warps > limit.gpu) {
      seg.warps = limit.gpu;
      seg.clamped = true;
      ++c.above_limit;
    }
    seg.shared = attribution.sample_kernel_count[o.sample] > 1;
    covered += seg.end_ns - seg.start_ns;
    if (seg.shared) {
      shared += seg.end_ns - seg.start_ns;
      ++c.shared_samples;
    }
    c.segments.push_back(seg);
  }
  c.samples = static_cast<uint32_t>(c.segments.size());
  if (c.segments.empty() || kernel.duration_ns == 0) {
    c.segments.clear();
    c.note = NoCurveNote(kernel, overlaps, samples);
    return c;
  }
  const double duration = static_cast<double>(kernel.duration_ns);
  c.coverage = std::min(1.0, covered / duration);
  c.shared_fraction = std::min(1.0, shared / duration);

  CloseGaps(c.segments, kernel.start_ns, k_end);
  Resample(kernel, options.points, c);
  ComputeTailMetrics(c, options);
  AddCurveNotes(options, duration, c);
  return c;
}

void ComputeTailMetrics(ActiveWarpCurve& c, const TailOptions& options) {
  c.has_tail_metrics = false;
  if (c.segments.empty()) return;
  double total = 0, area = 0, own = 0;
  for (const CurveSegment& s : c.segments) {
    const double len = static_cast<double>(s.end_ns - s.start_ns);
    total += len;
    area += len * s.warps;
    if (!s.shared) own += len;
  }
  if (total <= 0) return;
  c.mean = area / total;
  // A sample shared with another kernel measured that kernel's warps too (a heavier neighbour
  // starting inside the kernel's last sample lifts it above anything the kernel can hold), so
  // the levels are the kernel's own as long as it has samples of its own.
  c.levels_from_shared = own <= 0;
  c.peak = 0;
  std::vector<std::pair<double, double>> by_value;  // (warps, length)
  for (const CurveSegment& s : c.segments) {
    if (s.shared && !c.levels_from_shared) continue;
    c.peak = std::max(c.peak, s.warps);
    by_value.emplace_back(s.warps, static_cast<double>(s.end_ns - s.start_ns));
  }
  const double level_time = c.levels_from_shared ? total : own;
  // Steady level: the time-weighted 95th percentile, i.e. the highest level the kernel holds
  // for at least 5% of its runtime. Unlike the peak, one noisy sample does not set it; unlike
  // a median, a tail of up to 95% of the runtime does not pull it down.
  std::sort(by_value.begin(), by_value.end());
  double acc = 0;
  c.steady = by_value.back().first;
  for (const auto& [warps, len] : by_value) {
    acc += len;
    if (acc >= options.steady_percentile * level_time) {
      c.steady = warps;
      break;
    }
  }
  if (c.steady <= 0) {
    c.note = "no active warps measured during this kernel";
    return;
  }
  double below_50 = 0, below_25 = 0, cost = 0;
  for (const CurveSegment& s : c.segments) {
    const double len = static_cast<double>(s.end_ns - s.start_ns);
    if (s.warps < 0.5 * c.steady) below_50 += len;
    if (s.warps < 0.25 * c.steady) below_25 += len;
    cost += std::max(0.0, c.steady - s.warps) * len;
  }
  c.below_50 = below_50 / total;
  c.below_25 = below_25 / total;
  c.tail_cost_ns = cost / c.steady;
  c.tail_cost_fraction = c.tail_cost_ns / total;
  // The drain runs from the last high sample to the last sample of the kernel's own: a
  // shared last sample is high when the next kernel starts in it, and says nothing of how
  // this kernel ends.
  uint64_t last_high = c.segments.front().start_ns;
  uint64_t own_end = 0;
  double high_len = 0, after_len = 0;  // the last high segment's length, the next one's
  for (auto it = c.segments.rbegin(); it != c.segments.rend(); ++it) {
    if (it->shared && !c.levels_from_shared) continue;
    if (own_end == 0) own_end = it->end_ns;
    if (it->warps >= options.drain_threshold * c.steady) {
      last_high = it->end_ns;
      high_len = static_cast<double>(it->end_ns - it->start_ns);
      break;
    }
    after_len = static_cast<double>(it->end_ns - it->start_ns);
  }
  if (own_end == 0) own_end = c.segments.back().end_ns;
  c.drain_ns = static_cast<double>(own_end - std::min(own_end, last_high));
  c.tail_fraction = c.drain_ns / total;
  // The drain may have begun anywhere in the last high sample, or not before the end of the
  // first low one; past the last own sample, the kernel may still have been draining.
  const double unseen_end = static_cast<double>(c.segments.back().end_ns - own_end);
  c.tail_low = std::max(0.0, c.drain_ns - after_len) / total;
  c.tail_high = std::min(total, c.drain_ns + high_len + unseen_end) / total;
  c.has_tail_metrics = true;
  c.verdict = TailVerdict(c.tail_fraction, c.tail_cost_fraction, c.below_50, c.below_25,
                          c.duration_ns, options);
}

std::string TailVerdict(double tail_fraction, double tail_cost_fraction, double below_50,
                        double below_25, uint64_t duration_ns, const TailOptions& options) {
  if (tail_fraction >= options.verdict_tail_fraction &&
      tail_cost_fraction >= options.verdict_cost_fraction) {
    const bool deep = below_25 >= 0.8 * tail_fraction;
    return absl::StrCat(
        "last ", Pct(tail_fraction), " of runtime below ",
        deep ? "25%" : absl::StrFormat("%.0f%%", options.drain_threshold * 100),
        " of steady active warps (tail costs ", Pct(tail_cost_fraction), ", ",
        MicrosText(tail_cost_fraction * duration_ns),
        "): likely load imbalance between blocks (a few blocks run much longer); consider "
        "splitting work more evenly or a persistent/work-stealing grid");
  }
  if (tail_cost_fraction >= 2 * options.verdict_cost_fraction &&
      below_50 >= options.verdict_tail_fraction) {
    return absl::StrCat(
        "active warps below half the steady level for ", Pct(below_50),
        " of runtime, not only at the end (costs ", Pct(tail_cost_fraction),
        "): phases with little parallelism (serial sections, dependent waves, a grid that does "
        "not fill the GPU)");
  }
  return "";
}

TailReport BuildTailReport(const PmInputs& in, const TailOptions& options,
                           const std::function<bool(std::string_view)>& select) {
  TailReport report;
  const ActiveWarpSamples samples = ExtractActiveWarpSamples(in);
  report.problem = MissingSamplesProblem(in, samples);
  const PmAttribution attribution = AttributeSamples(in.kernels, samples);
  // Per (device, launch configuration): the calculator runs once per configuration.
  std::map<std::pair<uint32_t, uint64_t>, ResidentWarpLimit> limits;
  std::map<std::string_view, size_t> by_name;
  for (uint32_t k = 0; k < in.kernels.size(); ++k) {
    const KernelEvent& kernel = in.kernels[k];
    if (select && !select(kernel.name)) continue;
    auto [it, inserted] = by_name.emplace(kernel.name, report.summaries.size());
    if (inserted) {
      report.summaries.emplace_back();
      report.summaries.back().name = std::string(kernel.name);
    }
    KernelTailSummary& sum = report.summaries[it->second];
    ++sum.launches;
    sum.total_ns += kernel.duration_ns;
    const uint64_t launch_id = kernel.launch ? kernel.launch->id : 0;
    auto [limit_it, new_limit] = limits.try_emplace({kernel.device_id, launch_id});
    if (new_limit) {
      const DeviceInfo* device = nullptr;
      for (const DeviceInfo& d : in.devices) {
        if (d.id == kernel.device_id) device = &d;
      }
      limit_it->second = ResidentWarpLimitOf(device, kernel.launch);
    }
    report.curves.push_back(BuildActiveWarpCurve(k, kernel, attribution.kernel_samples[k], samples,
                                                 attribution, limit_it->second, options));
    const ActiveWarpCurve& c = report.curves.back();
    const uint32_t ci = static_cast<uint32_t>(report.curves.size() - 1);
    if (!c.has_tail_metrics) {
      if (sum.note.empty()) sum.note = c.note;
      continue;
    }
    AddCurveToSummary(report.curves, ci, sum);
  }
  for (KernelTailSummary& sum : report.summaries) FinishSummary(options, sum);
  std::stable_sort(report.summaries.begin(), report.summaries.end(),
                   [](const KernelTailSummary& a, const KernelTailSummary& b) {
                     if (a.total_tail_cost_ns != b.total_tail_cost_ns) {
                       return a.total_tail_cost_ns > b.total_tail_cost_ns;
                     }
                     return a.total_ns > b.total_ns;
                   });
  return report;
}

}  // namespace warpscope
