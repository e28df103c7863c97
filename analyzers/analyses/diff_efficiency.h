// What `warpscope diff` compares beyond time, per kernel name: achieved and theoretical
// occupancy and the tail cost per launch (from PM samples), and the stall mix (from PC
// samples), taken from the occupancy, tail and stall reports of one trace (docs/diff.md).
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_DIFF_EFFICIENCY_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_DIFF_EFFICIENCY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/measures/pm_attribution.h"
#include "analyzers/analyses/stalls.h"
#include "analyzers/analyses/summary.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

struct KernelEfficiency {
  // Occupancy report rows of this name (all launch configurations and devices), weighted by
  // their launches' time.
  uint64_t occupancy_launches = 0;  // launches with an achieved figure
  double achieved = kNaN;           // 0..1
  double theoretical = kNaN;        // 0..1
  DurationStats tail;               // tail cost per launch with tail metrics (ns)
  uint64_t stall_samples = 0;       // PC samples in warp states
  std::vector<StallShare> stalls;   // ranked by samples
};

struct TraceEfficiency {
  bool has_pm_samples = false;
  bool has_pc_samples = false;
  uint64_t pm_interval_ns = 0;  // the longest PM sampling interval of its metric sets
  std::map<std::string, KernelEfficiency> kernels;  // by demangled name
};

// The figures of `model`; PCs are not mapped to source lines.
TraceEfficiency CollectEfficiency(const TraceModel& model);
// The same for a model that may have been loaded without its events (DiffLoadOptions): one
// with PM or PC samples is loaded again whole (the samples are joined to its kernels). Errors:
// those of loading it again.
absl::StatusOr<TraceEfficiency> CollectEfficiencyOf(const TraceModel& model);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_DIFF_EFFICIENCY_H_
