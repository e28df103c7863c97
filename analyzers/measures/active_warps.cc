// Active-warp step curves per kernel instance, tail metrics and verdicts.
#include "analyzers/measures/active_warps.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/sampling_coverage.h"
#include "analyzers/model/trace_limits.h"

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

}  // namespace

ActiveWarpCurve BuildActiveWarpCurve(uint64_t kernel_index, const KernelEvent& kernel,
                                     std::span<const SampleOverlap> overlaps,
                                     const ActiveWarpSamples& samples,
                                     const PmAttribution& attribution,
                                     const ResidentWarpLimit& limit, const TailOptions& options) {
  ActiveWarpCurve c;
  c.kernel_index = kernel_index;
  c.device_id = kernel.device_id;
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

}  // namespace warpscope
