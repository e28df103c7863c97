// Speed of light per kernel from PM samples: each sample's per-unit throughput (share of the
// unit's peak, pm_metric_sets.h) attributed to the kernel launches it overlaps, weighted by
// the overlap, then summarised per kernel name: median and p90 over launches with an interval,
// or, for kernels shorter than the sampling interval, pooled over their launches. Pure: plain
// model structs in (docs/sol.md).
#ifndef WARPSCOPE_ANALYZERS_MEASURES_SOL_ATTRIBUTION_H_
#define WARPSCOPE_ANALYZERS_MEASURES_SOL_ATTRIBUTION_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string_view>
#include <vector>

#include "analyzers/measures/pm_attribution.h"
#include "collectors/pm_sampling/pm_metric_sets.h"

namespace warpscope {

inline constexpr size_t kSolUnitCount = std::size(kSolUnits);
using SolUnitValues = std::array<double, kSolUnitCount>;  // percent of peak, by kSolUnits
SolUnitValues NoSolValues();                              // all NaN

// The samples with their unit values, in time order per device. `times` holds what the
// attribution reads (device, start, end, interval; its warp metrics are left NaN), the vectors
// beside it are parallel to times.samples.
struct SolSamples {
  ActiveWarpSamples times;
  std::vector<SolUnitValues> pct;   // NaN where the sample's set lacks the unit
  std::vector<double> dram_bytes;   // read + write over the sample; NaN without both
  std::vector<double> fma_inst;     // FMA-pipe warp instructions over the sample; NaN without
  std::array<bool, kSolUnitCount> has_unit{};  // some set carries the unit
  bool any_unit() const;
};
SolSamples ExtractSolSamples(const PmInputs& in);

// One launch. A sample s that the launch overlaps by o, whose kernels are busy for B of its
// length D, gives the launch `o / B` of what the sample measured: of a unit's activity,
// pct_s · D · o / B (idle time in the sample belongs to no kernel), of a count, count · o / B.
// The launch's figure for a unit is Σ pct_s · D_s · o_s / B_s over Σ o_s: the sample's value
// where the launch fills it, more where idle time diluted it. Samples shared with a kernel of
// another name are left out when the launch has samples of its own; a launch with none is
// measured on its shared samples (from_shared).
struct SolLaunch {
  uint64_t duration_ns = 0;
  double covered_ns = 0;  // time inside any sample
  double own_ns = 0;      // time inside samples no kernel of another name touched
  double used_ns = 0;     // Σ o over the samples used (own ones, else the shared ones)
  SolUnitValues activity{};  // Σ pct · D · o / B over them, per unit (0 where none)
  std::array<double, kSolUnitCount> unit_ns{};  // Σ o over the used samples with that unit
  double dram_bytes = 0, dram_ns = 0;  // attributed bytes and the time they rest on
  double fma_inst = 0, fma_ns = 0;
  bool from_shared = false;
  uint32_t capped = 0;  // unit figures above 100% (other work in the sample), capped at 100
  double Figure(size_t unit) const;  // percent, NaN without samples of that unit
};

// Per kernel name and device: what `warpscope sol` shows.
struct SolKernel {
  std::string_view name;
  uint32_t device_id = 0;
  uint32_t launches = 0;
  uint32_t measured_launches = 0;  // launches with a figure
  uint32_t shared_launches = 0;    // measured on shared samples only
  uint64_t total_ns = 0;
  uint64_t median_duration_ns = 0;
  double covered_fraction = 0;  // share of its time inside samples
  double own_fraction = 0;      // share of its time inside samples of its own
  // Shorter than the interval: one figure pooled over its launches (Σ activity / Σ o); else
  // the median and p90 over launches.
  bool pooled = false;
  SolUnitValues value{};  // the figure shown: median over launches, or the pooled figure
  SolUnitValues p90{};    // NaN when pooled
  // 95% interval of `value`: for a median, order statistics of the launches' bounds; for a
  // pooled figure, its bounds. Each bound lets the time no own sample saw hold 0..100%.
  SolUnitValues low{}, high{};
  // Its figures unmixed from the samples it shares with other kernels (sol_unmix.h), with a
  // jackknife interval; unmixed_ok is false where no sample holds it.
  bool unmixed_ok = false;
  SolUnitValues unmixed{}, unmixed_low{}, unmixed_high{};
  double dram_bytes_per_s = kNaN;      // attributed DRAM bytes over the time they rest on
  double fma_flop_per_s = kNaN;        // FMA-pipe instructions x 32 lanes x 2 (as if FFMA)
  uint32_t capped = 0;
};

// `kernels` as the trace holds them; kernels with a name matching nothing are kept (the caller
// filters). Rows in first-seen order.
std::vector<SolKernel> BuildSolKernels(std::span<const KernelEvent> kernels,
                                       const SolSamples& samples);

// The launch figures behind BuildSolKernels, for tests and the median's interval.
std::vector<SolLaunch> AttributeSolSamples(std::span<const KernelEvent> kernels,
                                           const SolSamples& samples,
                                           std::span<const uint32_t> kernel_group);
std::vector<SolLaunch> AttributeSolSamples(std::span<const KernelEvent> kernels,
                                           const SolSamples& samples,
                                           const PmAttribution& attribution);

// Median (upper middle of an even count) and nearest-rank p90 of `values` (NaN when empty);
// the 95% interval of the median by order statistics: ranks n/2 -+ 0.98 sqrt(n) of the sorted
// lows and highs (n <= 2: the lowest low and highest high).
double SolMedian(std::vector<double> values);
double SolP90(std::vector<double> values);
void SolMedianInterval(std::vector<double> lows, std::vector<double> highs, double* low,
                       double* high);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_SOL_ATTRIBUTION_H_
