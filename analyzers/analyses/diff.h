// `warpscope diff BASE NEW`: what changed between two runs of a program, per kernel, NVTX
// range, memory operation and in total (GPU busy time, kernel and memory time, wall span),
// ranked by the time the change costs in the new run, with a verdict per row so that a CI job
// can fail on a regression (docs/diff.md).
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_DIFF_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_DIFF_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"
#include "analyzers/render/report.h"
#include "analyzers/render/short_names.h"

namespace warpscope {

struct DiffOptions {
  // A change is a regression (or an improvement) when the compared figure moved by more than
  // both thresholds: `threshold` of the base figure and `min_delta_ns`.
  double threshold = 0.05;
  double min_delta_ns = 20000;
  // Rows with at least this many instances on both sides are compared per instance (median
  // duration, or mean for NVTX ranges), which a different number of steps does not move;
  // rows with fewer are compared by total time.
  uint64_t min_instances = 5;
  size_t top = 0;  // rows shown, most impact first; 0 = all (totals always shown)
  // NVTX rows by the names as written, not with numbers replaced (step_12, not step_<N>).
  bool literal_ranges = false;
};

// What a row is about. Occupancy, tail and stall rows are per kernel name, from PM samples
// (occupancy, tail) and PC samples (stalls) when a trace has them.
// kNvtx compares the GPU time of the work a range launched, kNvtxHost its host time (a host
// stall inside a range changes the second, not the first).
enum class DiffSection {
  kTotal, kKernel, kNvtx, kNvtxHost, kMemory, kOccupancy, kTail, kStalls
};
// "total", "kernel", "nvtx", "nvtx-host", "memory", "occupancy", "tail", "stalls"
std::string_view DiffSectionName(DiffSection section);

enum class DiffVerdict { kUnchanged, kRegression, kImprovement, kAdded, kRemoved };
std::string_view DiffVerdictName(DiffVerdict verdict);  // "", "slower", "faster", "new", "gone"

struct DiffRow {
  DiffSection section = DiffSection::kTotal;
  std::string name;  // kernel name, NVTX domain:path, memory operation, or the total's name
  uint64_t base_count = 0, new_count = 0;        // instances (1 for totals)
  uint64_t base_total_ns = 0, new_total_ns = 0;  // time over the whole run
  bool per_instance = false;  // compared per instance (both sides >= min_instances)
  double base_ns = 0, new_ns = 0;  // the compared figure: per instance or total
  double delta_ns = 0;             // new_ns - base_ns
  double delta_fraction = 0;       // delta_ns / base_ns; 0 when base_ns is 0
  // The time the change costs the new run: (new_ns - base_ns) x new_count per instance, the
  // difference of totals otherwise. Rows are ranked by its size.
  double impact_ns = 0;
  DiffVerdict verdict = DiffVerdict::kUnchanged;

  // Occupancy and stall rows compare a fraction (0..1; NaN: the trace has no figure, "n/a"):
  // achieved occupancy, or the share of the warp state `figure` in the kernel's PC samples.
  // An occupancy row's counts are the launches with an achieved figure, its ns figures and
  // impact the kernel row's (the time the change cost), its delta_fraction the relative
  // change of achieved occupancy. Stall rows count PC samples and have no impact or verdict.
  // Tail rows compare the tail cost per launch (ns; NaN: n/a) like kernel rows their time.
  std::string figure;  // stall rows: the warp state, e.g. "long_scoreboard"
  double base_fraction = std::numeric_limits<double>::quiet_NaN();
  double new_fraction = std::numeric_limits<double>::quiet_NaN();
  double base_theoretical = std::numeric_limits<double>::quiet_NaN();  // occupancy rows
  double new_theoretical = std::numeric_limits<double>::quiet_NaN();
};

struct DiffReport {
  std::string base_label, new_label;
  DiffOptions options;
  std::vector<DiffRow> totals;  // GPU busy, kernel time, memory time, wall span
  std::vector<DiffRow> rows;    // kernels, NVTX ranges, memory operations; by |impact|
  uint64_t regressions = 0;     // rows (totals included) judged slower
  uint64_t improvements = 0;
  std::vector<std::string> notes;  // e.g. which trace has no PM samples (its figures are n/a)
  KernelNames names;  // how the renderer names kernels (--short-names: over both traces')
};

// Compares `next` with `base`. Kernels match by demangled name over all devices, NVTX ranges
// by domain and path over all threads, memory operations by kind. Occupancy and tail rows
// appear when either trace has PM samples, stall rows when either has PC samples.
// The models are loaded whole (TraceModel::Load's default).
DiffReport BuildDiffReport(const TraceModel& base, const TraceModel& next,
                           std::string base_label, std::string new_label,
                           const DiffOptions& options);
// The same for models loaded with DiffLoadOptions: each trace's GPU work and API calls are
// read again and folded as `summary` folds them (SummarizeTraceFiles), so that memory grows
// with names and NVTX ranges, not with events; a trace with PM or PC samples is loaded again
// whole for the occupancy, tail and stall rows. Errors: those of reading a file again.
absl::StatusOr<DiffReport> BuildDiffReportOfFiles(const TraceModel& base, const TraceModel& next,
                                                  std::string base_label, std::string new_label,
                                                  const DiffOptions& options);
// What BuildDiffReportOfFiles needs loaded: the NVTX ranges.
TraceModelOptions DiffLoadOptions();

// The report, rendered by RenderReport: scalars (labels, verdict counts, thresholds) and one
// typed table "rows" (the totals, then the rows; durations in ns), with its notes. Its text
// form: the totals, then the rows with base, new, change and verdict; a last line counts the
// regressions.
Report DiffReportTables(const DiffReport& report);

// Parses "5%", "0.05" (a fraction) or "5 %" into a fraction; InvalidArgument otherwise.
absl::StatusOr<double> ParseRelativeThreshold(std::string_view text);
// Parses a duration with its unit, "500ns", "20us", "1.5ms", "2s", into ns.
absl::StatusOr<double> ParseDurationNs(std::string_view text);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_DIFF_H_
