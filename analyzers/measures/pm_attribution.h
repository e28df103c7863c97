// Attribution of PM samples (per device, no kernel id) to kernel instances by time overlap,
// and the achieved occupancy per kernel that follows from it. Pure: plain model structs in.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_PM_ATTRIBUTION_H_
#define WARPSCOPE_ANALYZERS_MEASURES_PM_ATTRIBUTION_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzers/model/trace_model.h"

namespace warpscope {

// PM sampling metric names warpscope reads (CUPTI names, without NCU's "pmsampling:" prefix).
inline constexpr char kMetricWarpsPerSmActive[] = "sm__warps_active.avg.per_cycle_active";
inline constexpr char kMetricGpuWarpsElapsed[] = "sm__warps_active.sum.per_cycle_elapsed";
inline constexpr char kMetricSmCyclesActive[] = "sm__cycles_active.avg";
inline constexpr char kMetricCyclesElapsed[] = "gr__cycles_elapsed.max";

// The tables the PM analyses read; a TraceModel provides them (PmInputsOf), tests build them.
struct PmInputs {
  std::span<const KernelEvent> kernels;
  std::span<const PmSample> samples;
  std::span<const PmMetricSet> metric_sets;
  std::span<const DeviceInfo> devices;
  // Why the trace's raw PM samples could not be evaluated (TraceModel::pm_samples_unavailable).
  std::string_view samples_unavailable = {};
};
PmInputs PmInputsOf(const TraceModel& model);

// One sentence when the trace's pm_sampling.* data-loss counters are non-zero (time without
// samples, hardware buffer overflows, decode errors, samples dropped or invalid): achieved
// occupancy and curves of kernels in the affected stretches rest on fewer samples or none.
// "" when nothing was lost.
std::string PmDataLossNote(std::span<const StatCounter> stats);

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One PM sample with the active-warp metrics pulled out (NaN where the set lacks them).
struct ActiveWarpSample {
  uint32_t device_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t interval_ns = 0;        // the set's requested interval
  double warps_per_sm = kNaN;      // sm__warps_active.avg.per_cycle_active
  double sm_active_cycles = kNaN;  // sm__cycles_active.avg (cycles per SM in the sample)
  // Warps resident on the whole GPU per elapsed cycle: sm__warps_active.sum.per_cycle_elapsed,
  // else warps_per_sm * sm_count * sm__cycles_active.avg / gr__cycles_elapsed.max.
  double gpu_warps = kNaN;
  // SM elapsed cycles in the sample (per SM, the SM clock's): warps_per_sm * sm_count *
  // sm__cycles_active.avg / sm__warps_active.sum.per_cycle_elapsed when that is > 0, else the
  // most cycles per ns any sample of the device saw (else the device record's clock) times the
  // sample's length, at least its active cycles. NaN without active cycles or a clock.
  // (gr__cycles_elapsed.max counts another clock.)
  double elapsed_cycles = kNaN;
};

// Samples in time order per device (stable across devices), with metrics resolved. Samples
// whose set is unknown, whose value count does not match or that are out of range
// (PmSampleProblem) are skipped and counted.
struct ActiveWarpSamples {
  std::vector<ActiveWarpSample> samples;
  uint64_t skipped = 0;
  bool has_warps_per_sm = false;  // some set carries sm__warps_active.avg.per_cycle_active
  bool has_gpu_warps = false;     // some sample has a GPU-wide active-warp value
  std::vector<std::pair<uint32_t, uint64_t>> intervals;  // (device id, interval ns)
  uint64_t IntervalOnDevice(uint32_t device_id) const;   // 0 when the device has no set
  // SM cycles per ns per device, an upper bound for the bounds: the faster of the device
  // record's clock and the most SM elapsed cycles (else active cycles) per ns of any sample at
  // least half the interval long. The most an SM can be active in time no sample measured; 0
  // when neither says.
  std::vector<std::pair<uint32_t, double>> clocks;
  double ClockOnDevice(uint32_t device_id) const;
};
ActiveWarpSamples ExtractActiveWarpSamples(const PmInputs& in);

// ExtractActiveWarpSamples a sample at a time, for a caller that does not hold the samples:
// Add each sample, then Finish; FillElapsed then gives a sample the SM elapsed cycles that
// depend on the clocks of all of them. `sets` and `devices` must outlive it.
class ActiveWarpSampleExtractor {
 public:
  ActiveWarpSampleExtractor(std::span<const PmMetricSet> sets,
                            std::span<const DeviceInfo> devices);
  // The sample with its metrics resolved; nullopt for one that is skipped (counted).
  std::optional<ActiveWarpSample> Add(const PmSample& s);
  // Every field of ActiveWarpSamples but `samples` (left empty), over the samples added.
  const ActiveWarpSamples& Finish();
  void FillElapsed(ActiveWarpSample& sample) const;  // after Finish

 private:
  // Resolved metric positions of one set.
  struct SetLayout {
    const PmMetricSet* set = nullptr;
    int warps_per_sm = -1, gpu_warps = -1, sm_cycles = -1, elapsed = -1;
    uint32_t sm_count = 0;
  };
  std::span<const DeviceInfo> devices_;
  std::unordered_map<uint32_t, SetLayout> layouts_;
  std::vector<std::pair<uint32_t, double>> seen_clocks_;  // the most cycles/ns a sample saw
  ActiveWarpSamples totals_;
};

// A sample's share in one kernel.
struct SampleOverlap {
  uint32_t sample = 0;      // index into ActiveWarpSamples::samples
  uint64_t overlap_ns = 0;  // |kernel ∩ sample|, > 0
};

// Which samples touch which kernels (same device, positive overlap). Kernels whose end
// overflows 64 bits get no samples.
struct PmAttribution {
  std::vector<std::vector<SampleOverlap>> kernel_samples;  // by kernel index, in time order
  std::vector<uint32_t> sample_kernel_count;  // kernels overlapping each sample (>1: shared)
  // Distinct kernel groups overlapping each sample (AttributeSamples' kernel_group; without
  // groups, equal to sample_kernel_count). A sample with one group measured only that group.
  std::vector<uint32_t> sample_group_count;
  std::vector<uint64_t> sample_busy_ns;       // union of kernel time inside each sample
  std::vector<uint64_t> device_sample_count;  // not indexed by id: see SamplesOnDevice
  std::vector<uint32_t> device_ids;
  uint64_t SamplesOnDevice(uint32_t device_id) const;
};
// `kernel_group` (empty, or one id per kernel) names the launches that an analysis counts as
// one: the occupancy report's rows (name, launch configuration, device). Two back-to-back
// launches of one row that share a sample then leave it unshared for that row.
PmAttribution AttributeSamples(std::span<const KernelEvent> kernels,
                               const ActiveWarpSamples& samples,
                               std::span<const uint32_t> kernel_group = {});

// Achieved occupancy of one kernel instance from its samples.
//   mean warps/SM = Σ w_s · warps_per_sm_s / Σ w_s,  w_s = C_s · o_s / B_s
// where C_s is the sample's active SM cycles (sm__cycles_active.avg), o_s the kernel's overlap
// with the sample and B_s the union of all kernels' time in the sample. A sample that only this
// kernel touches thus counts with all its active cycles, and idle time inside it has none: this
// is Nsight Compute's "warps per active cycle" estimator restricted to the kernel's samples,
// exact however the sample is cut by the kernel's start and end.
//
// Samples shared with kernels of another group (back to back inside one sample, or
// concurrent; PmAttribution::sample_group_count) measure those kernels too, so they are left
// out whenever the kernel has samples of its own; only a kernel without any is measured on
// shared samples, split by overlap, and says so (from_shared_samples). A sample shared only
// with launches of the kernel's own group is used, split by overlap: summed over the group's
// launches, it counts with all its active cycles and accumulated warps, so the group's figure
// is the ratio over all its launches, ramp-up and drain at launch boundaries included. A value
// above `limit_warps_per_sm` (ResidentWarpLimit::per_sm; 0: no limit) cannot be this kernel's
// alone: it is capped at the limit and counted (above_limit). Without sm__cycles_active.avg the
// weights are the overlaps o_s (time_weighted): a long tail, where few SMs are active, then counts
// as much as the full part and the figure reads low.
//
// Beside it, the occupancy per *elapsed* cycle (Nsight Compute's
// sm__warps_active.avg.pct_of_peak_sustained_elapsed): the same warps over the kernel's elapsed
// cycles in those samples (E_s · o_s / duration_s), in which idle SMs count as empty. And what
// the bounds of both need: the warps and cycles of the samples of its own, and the most active
// and elapsed cycles the kernel can have had in the rest of its time (docs/occupancy.md).
struct AchievedOccupancy {
  uint32_t samples = 0;
  uint32_t shared_samples = 0;       // samples that also overlap a kernel of another group
  bool from_shared_samples = false;  // no sample of its own: the figure includes other kernels
  uint32_t above_limit = 0;          // samples used whose value exceeded the limit (capped)
  bool time_weighted = false;        // no active-cycle metric: weights are overlap times
  double mean_warps_per_sm = kNaN;
  double achieved = kNaN;           // mean_warps_per_sm / max warps per SM, 0..1
  double coverage = 0;              // share of the kernel's time inside some sample
  double shared_time_fraction = 0;  // share of its time inside shared (left out) samples
  double weight = 0;                // Σ w_s, for aggregation over launches
  // Per elapsed cycle: Σ w_s · warps_per_sm_s / Σ E_s · o_s / duration_s, over the same samples;
  // NaN when a sample used lacks elapsed cycles (elapsed_weighted then 0).
  double achieved_elapsed = kNaN;  // 0..1
  double elapsed_weight = 0;       // Σ E_s · o_s / duration_s, for aggregation over launches
  // Over the samples of its own only (none when it has none): Σ w_s · warps_per_sm_s / max
  // warps per SM, Σ w_s and Σ E_s · o_s / duration_s (NaN when a sample lacks E_s).
  double seen_occupied = 0, seen_active_cycles = 0, seen_elapsed_cycles = 0;
  // Its time outside samples of its own, and the most active cycles per SM it can have had in
  // it: the clock (ActiveWarpSamples::ClockOnDevice) times the time, but no more than a shared
  // sample's own active cycles. NaN without a clock; unseen elapsed cycles are clock · unseen_ns.
  double unseen_ns = 0;
  double unseen_active_cycles_max = kNaN;
  double unseen_elapsed_cycles = kNaN;
  std::string reason;  // why achieved is NaN
};
AchievedOccupancy ComputeAchievedOccupancy(const KernelEvent& kernel,
                                           std::span<const SampleOverlap> overlaps,
                                           const ActiveWarpSamples& samples,
                                           const PmAttribution& attribution,
                                           uint32_t max_warps_per_sm,
                                           double limit_warps_per_sm = 0);

// "12.5 us" style formatting used in reasons.
std::string MicrosText(double ns);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_PM_ATTRIBUTION_H_
