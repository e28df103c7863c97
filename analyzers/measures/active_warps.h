// Active-warp curves per kernel instance (from PM samples) and the long-tail metrics derived
// from them: steady level, time below 50%/25% of it, drain time, tail cost and a verdict
// (per kernel name: tail_summary.h).
// Definitions and thresholds are explained in docs/tail.md.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_ACTIVE_WARPS_H_
#define WARPSCOPE_ANALYZERS_MEASURES_ACTIVE_WARPS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analyzers/measures/occupancy_calculator.h"
#include "analyzers/measures/pm_attribution.h"

namespace warpscope {

struct TailOptions {
  int points = 50;                  // resampled curve length (normalised time 0..1)
  double steady_percentile = 0.95;  // steady level = this time-weighted percentile
  double drain_threshold = 0.5;     // drain starts after the last time at >= this x steady
  uint32_t min_samples = 4;         // fewer samples: no tail metrics, only the curve
  // Verdict thresholds (docs/tail.md): a tail is material when the drain lasts at least
  // verdict_tail_fraction of the runtime and costs at least verdict_cost_fraction of it.
  double verdict_tail_fraction = 0.2;
  double verdict_cost_fraction = 0.1;
};

// One piece of the step curve: GPU-wide active warps over [start_ns, end_ns) (absolute).
struct CurveSegment {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  double warps = 0;
  bool shared = false;   // the sample also covered another kernel
  bool clamped = false;  // the sample's value exceeded the kernel's limit and was capped
};

struct ActiveWarpCurve {
  uint64_t kernel_index = 0;  // the launch's place among the trace's kernels (its table index)
  uint32_t device_id = 0;
  uint32_t summary = 0;  // its kernel name's row in TailReport::summaries (tail_summary.h)
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint32_t samples = 0;
  double coverage = 0;                 // share of the lifetime inside samples (before gap filling)
  double shared_fraction = 0;          // share of the lifetime in samples shared with other kernels
  uint32_t shared_samples = 0;         // samples that also covered another kernel
  uint32_t above_limit = 0;            // samples whose value exceeded limit_warps (capped to it)
  double limit_warps = 0;              // ResidentWarpLimit::gpu of the launch; 0: none known
  bool limit_theoretical = false;      // limit_warps is the theoretical occupancy's, not capacity
  // Steady and peak come from the kernel's own samples (not shared with another kernel); only
  // a kernel without any takes them from shared samples, and then this is true.
  bool levels_from_shared = false;
  std::vector<CurveSegment> segments;  // gap-free, covering [start, end) when non-empty
  std::vector<double> points;          // resampled means over `points` equal bins
  bool has_tail_metrics = false;       // enough samples (TailOptions::min_samples)
  std::string note;                    // why there are no tail metrics, or caveats

  double peak = 0;
  double mean = 0;
  double steady = 0;
  double below_50 = 0;            // share of the lifetime below 50% of steady
  double below_25 = 0;            // share below 25% of steady
  double drain_ns = 0;            // end minus last time at >= drain_threshold x steady
  double tail_fraction = 0;       // drain_ns / duration
  // Where the drain begins is known to within the sample it falls in, and where it ends to
  // within the kernel's last own sample (a shared or missing last sample says nothing): the
  // tail fraction lies in [tail_low, tail_high] (each a share of the duration).
  double tail_low = 0, tail_high = 0;
  double tail_cost_ns = 0;        // ∫ max(steady - active, 0) dt / steady
  double tail_cost_fraction = 0;  // tail_cost_ns / duration
  std::string verdict;            // empty unless material
};

// Builds the curve of one kernel from the samples attributed to it. Each sample contributes
// its GPU-wide value over its overlap with the kernel. A sample that also covers idle time
// (no kernel on the device) is scaled by sample length / busy time, because the counter
// averages over the whole sample. A value above `limit` (ResidentWarpLimit::gpu; 0: none)
// measured another kernel as well: it is capped at the limit and counted (above_limit).
// Samples shared with other kernels stay on the curve, marked, and are left out of the steady
// and peak levels (ComputeTailMetrics).
ActiveWarpCurve BuildActiveWarpCurve(uint64_t kernel_index, const KernelEvent& kernel,
                                     std::span<const SampleOverlap> overlaps,
                                     const ActiveWarpSamples& samples,
                                     const PmAttribution& attribution,
                                     const ResidentWarpLimit& limit, const TailOptions& options);

// Tail metrics and verdict on an already built step curve (exposed for tests). Steady and peak
// are taken over the segments not marked shared when there are any (levels_from_shared false),
// else over all; the time shares, drain and tail cost are measured on the whole curve.
void ComputeTailMetrics(ActiveWarpCurve& curve, const TailOptions& options);

// The verdict sentence for given metrics, or "" when the tail is not material.
std::string TailVerdict(double tail_fraction, double tail_cost_fraction, double below_50,
                        double below_25, uint64_t duration_ns, const TailOptions& options);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_ACTIVE_WARPS_H_
