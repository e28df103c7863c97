// The `warpscope occupancy` report: per kernel name and launch configuration, theoretical
// occupancy (CUDA's calculator) next to achieved occupancy (PM samples), the gap and advice.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_OCCUPANCY_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_OCCUPANCY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/measures/occupancy_calculator.h"
#include "analyzers/analyses/pm_sweep.h"
#include "analyzers/measures/pm_attribution.h"
#include "analyzers/render/output.h"
#include "analyzers/render/report.h"
#include "analyzers/render/short_names.h"

namespace warpscope {

struct OccupancyReportOptions {
  std::string kernel_regex;  // RE2, searched in the demangled name; empty = all
  int top = 0;               // rows to keep after ranking by total time; 0 = all
};

struct OccupancyRow {
  std::string name;
  uint32_t device_id = 0;
  LaunchConfig launch;  // a copy (id 0 when the launch config was unknown)
  bool launch_known = false;
  uint32_t launches = 0;
  uint64_t total_ns = 0;
  std::optional<TheoreticalOccupancy> theoretical;
  std::string theoretical_error;  // why theoretical is missing
  // Warps resident per active SM cycle over the launches with an estimate, as a share of the
  // SM's warp slots (0..1): Nsight Compute's sm__warps_active.avg.pct_of_peak_sustained_active.
  double achieved = kNaN;
  // The same warps per elapsed cycle of the launches (idle SMs count as empty): Nsight
  // Compute's sm__warps_active.avg.pct_of_peak_sustained_elapsed. NaN without elapsed cycles.
  double achieved_elapsed = kNaN;
  double achieved_elapsed_low = kNaN, achieved_elapsed_high = kNaN;
  uint32_t achieved_launches = 0;
  uint32_t samples = 0;
  uint32_t shared_samples = 0;        // samples that also covered a kernel of another row
  uint32_t launches_from_shared = 0;  // launches measured on shared samples only
  uint32_t above_limit = 0;           // samples above the theoretical warps per SM, capped
  bool time_weighted = false;         // some launch had no active-cycle weights
  double shared_time_fraction = 0;    // over launches with samples, duration-weighted
  // Where achieved can lie: the part of the launches' time no sample of their own covers
  // (samples shared with other kernels, time outside samples, launches measured on shared
  // samples only) may have held anywhere from no warps to the theoretical occupancy, the rest
  // is measured. That part weighs by its active SM cycles, which no sample measured: at most
  // every SM busy at the clock (unseen_share). Bounds, not a statistical interval
  // (docs/occupancy.md). The elapsed figure's bounds weigh the part by its elapsed cycles.
  double achieved_low = kNaN, achieved_high = kNaN;
  // The unseen part's most active cycles as a share of all the launches' active cycles (the
  // measured ones plus it); its share of the time where no clock is known (unseen_by_time).
  double unseen_share = kNaN;
  bool unseen_by_time = false;
  // When the bounds are more than kMaxAchievedWidth apart: what would give enough; "" else.
  std::string too_few;
  // What the achieved figure rests on: the launches with a figure (achieved_launches), and
  // their time inside PM samples as a share of all the row's time; below kLowCoverage the
  // row says so (coverage_note, LowCoverageNote).
  double covered_time_fraction = 0;
  std::string coverage_note;
  std::string achieved_reason;  // why achieved is NaN (or a caveat)
  std::vector<OccupancyAdvice> advice;
};

inline constexpr double kMaxAchievedWidth = 0.10;

struct OccupancyReport {
  std::vector<OccupancyRow> rows;  // ranked by total time
  uint32_t kernels_matched = 0;
  bool has_pm_samples = false;
  std::string pm_samples_unavailable;  // why raw PM samples could not be evaluated, or ""
  KernelNames names;                   // how the renderers name kernels (--short-names)
};

// The launches and PM samples are swept in time order (pm_sweep.h): memory grows with the
// rows and the launches that overlap in time, not with the trace's launches or samples.
absl::StatusOr<OccupancyReport> BuildOccupancyReport(const PmSources& in,
                                                     const OccupancyReportOptions& options);
absl::StatusOr<OccupancyReport> BuildOccupancyReport(const PmInputs& in,
                                                     const OccupancyReportOptions& options);

// The report, rendered by RenderReport: one table "occupancy", a row per kernel (advice joined
// with " | "); its text form the rows for people, then numbered advice and reasons below.
Report OccupancyReportTables(const OccupancyReport& report);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_OCCUPANCY_H_
