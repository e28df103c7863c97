// PM samples attributed to kernel launches in bounded memory (docs/validation.md, "Trace
// size"): the launches and the samples are sorted by device and start through temporary files
// (SpillSorter), then swept in time order, and each launch is handed its samples as soon as no
// later sample can touch it. The samples and their counts are those of
// ExtractActiveWarpSamples and AttributeSamples (pm_attribution.h). Memory: the sorter's budget
// plus the launches and samples that overlap in time, not the trace's launches or samples.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_PM_SWEEP_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_PM_SWEEP_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "analyzers/measures/pm_attribution.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// Where the launches and PM samples come from: a loaded model's tables or its file read again
// (PmSourcesOf(model)), or tables a test built (PmSourcesOf(inputs)). Each source hands every
// item to the visitor in the trace's order; names and launch configs live until it returns.
struct PmSources {
  std::span<const PmMetricSet> metric_sets;
  std::span<const DeviceInfo> devices;
  std::function<absl::Status(const std::function<void(const KernelEvent&)>&)> kernels;
  std::function<absl::Status(const std::function<void(const PmSample&)>&)> samples;
  std::string_view samples_unavailable;  // TraceModel::pm_samples_unavailable
};
PmSources PmSourcesOf(const TraceModel& model);  // ForEachEvent, ForEachPmSample
PmSources PmSourcesOf(const PmInputs& in);       // the spans; `in` must outlive the sources

// One launch as the sweep hands it over.
struct SweptKernel {
  uint64_t index = 0;  // its place among the launches, in the trace's order
  uint32_t group = 0;  // from group_of (AttributeSamples' kernel_group)
  uint64_t start_ns = 0, duration_ns = 0;
  uint32_t device_id = 0;
};

// A launch's samples as ComputeAchievedOccupancy reads them: `samples` holds just the launch's
// samples, in time order, with the totals of all (intervals, clocks, flags); `attribution` the
// counts of those samples (kernels and groups touching each, busy time) and the samples per
// device; `overlaps` the launch's share of each (sample i of `samples` is overlaps[i]).
struct SweptSamples {
  const ActiveWarpSamples& samples;
  const PmAttribution& attribution;
  std::span<const SampleOverlap> overlaps;
};

// What the sweep found over all samples.
struct PmSweepTotals {
  ActiveWarpSamples samples;  // ActiveWarpSampleExtractor::Finish: all but the samples
  uint64_t used_samples = 0;  // samples with their metrics resolved (not skipped)
};

// Hands visit(kernel, its samples) once per launch, in no set order. group_of(kernel) is called
// once per launch in the trace's order, before any visit: the group two launches share when a
// sample that only they touch counts as unshared. `totals`, when given, is filled before the
// first visit. Errors: those of the sources and of the sort's temporary files.
absl::Status SweepPmSamples(
    const PmSources& sources, const std::function<uint32_t(const KernelEvent&)>& group_of,
    const std::function<void(const SweptKernel&, const SweptSamples&)>& visit,
    PmSweepTotals* totals = nullptr);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_PM_SWEEP_H_
