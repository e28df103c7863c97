// The `warpscope stalls` report: per kernel, the warp states of its PC samples (stall reasons
// named as Nsight Compute names them), an estimate of warp cycles per issued instruction,
// advice in plain words for the top reasons, and optionally the hottest PCs.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_STALLS_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_STALLS_H_

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/render/output.h"
#include "analyzers/render/report.h"
#include "analyzers/render/short_names.h"
#include "analyzers/measures/source_lines.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// A CUPTI stall reason name as Nsight Compute shows it:
// "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued" -> {"long_scoreboard", true}.
struct WarpStateName {
  std::string state;
  bool not_issued = false;  // the `_not_issued` variant: samples in which nothing was issued
};
WarpStateName ParseStallReasonName(std::string_view cupti_name);

// What a warp state usually means and what usually helps, in one sentence; "" for a state the
// table does not know.
std::string_view StallReasonAdvice(std::string_view state);

// The PC sampling period (2^N cycles) a trace was recorded with: WARPSCOPE_PC_PERIOD in its
// header's configuration, else the default, 15.
uint32_t PcSamplingPeriodExponent(const TraceModel& model);

// Every state StallReasonAdvice knows, in table order.
std::vector<std::string_view> KnownWarpStates();

// Warp cycles per issued instruction, estimated as samples / samples in the `selected` state
// (each sample is one warp-cycle); NaN when nothing was selected.
double WarpCyclesPerIssue(uint64_t samples, uint64_t selected);

// How many of `available` rows a report with --top `top` shows: all of them when top <= 0.
size_t StallRowsShown(size_t available, int top);

// What the report lists per kernel: its reasons, its hottest PCs, or its hottest source lines.
enum class StallView { kKernel, kPc, kLine };

struct StallReportOptions {
  std::string kernel_regex;  // RE2, searched in the demangled name; empty = all
  int top = 5;               // reasons (or PCs, or lines) shown per kernel; 0 = all
  StallView view = StallView::kKernel;
  // Map PCs to source lines (source_lines.h) with this locator; an empty function maps none.
  SassLocator locator = CuptiSassToSource;
  // Where to look for a source file (by its name) when the path recorded in the cubin cannot
  // be read here, e.g. a checkout of the program's sources on the analysis machine.
  std::vector<std::string> source_dirs;
};

struct StallShare {
  std::string state;  // e.g. "long_scoreboard"; "reason_<index>" for an index the trace does
                      // not name
  uint64_t samples = 0;
  double fraction = 0;  // of the kernel's (or PC's) samples
  // Kernel rows: the 95% interval of `fraction` (Wilson, over the kernel's sampling instants,
  // StallKernelRow::sampling_instants); 0 and 1 where not computed (PCs, lines).
  double low = 0, high = 1;
};

struct PcHotspot {
  uint64_t cubin_crc = 0;
  uint64_t pc_offset = 0;
  std::string function;   // mangled, for the source lookup
  SourceLocation source;  // line 0 when the PC has no source line
  uint64_t samples = 0;
  double fraction = 0;              // of the kernel's samples
  std::vector<StallShare> reasons;  // ranked by samples
};

// The samples of every PC of a kernel that maps to one source line.
struct LineHotspot {
  SourceLocation source;
  std::string code;  // the line's text, trimmed, when the file could be read; else ""
  uint64_t samples = 0;
  uint64_t pcs = 0;                 // distinct PCs of the line that have samples
  double fraction = 0;              // of the kernel's samples
  std::vector<StallShare> reasons;  // ranked by samples
};

struct StallKernelRow {
  std::string name;  // demangled
  uint64_t samples = 0;             // warp-state samples (the `_not_issued` variants excluded)
  uint64_t selected = 0;            // samples in the `selected` state
  uint64_t not_issued = 0;          // samples of the `_not_issued` variants (a subset)
  double fraction = 0;              // of all kernels' samples in the report
  double cycles_per_issue = 0;      // WarpCyclesPerIssue; NaN when nothing was selected
  std::vector<StallShare> reasons;  // ranked by samples, all of them
  std::vector<PcHotspot> pcs;       // ranked by samples, all of them
  // Ranked by samples; empty when none of the kernel's PCs has a source line. The samples of
  // PCs without a line are not in any entry (see unlocated_samples).
  std::vector<LineHotspot> lines;
  uint64_t unlocated_samples = 0;   // samples at PCs without a source line
  // How many independent looks at the kernel its samples amount to: each SM sub-partition
  // samples a warp every 2^period cycles, all at the same instants, and warps of one kernel
  // at one instant tend to be in the same phase (all at the barrier), so the samples of one
  // instant count as one draw. Instants = the kernel's recorded time x SM clock / 2^period
  // (summed over launches and traces), at most `samples`; without kernel records or a clock,
  // samples / the SM sub-partitions. The share intervals rest on it.
  double sampling_instants = 0;
  // When the top share's interval is wider than kMaxStallHalfWidth on either side: what would
  // give enough (a lower --pc-period, more launches); "" otherwise.
  std::string too_few;
  // What the shares rest on: the kernel's launches in the traces, those that ran while PC
  // sampling ran (PcSampledSpans), and the share of its time they ran sampled. All 0 when
  // the traces have no kernel records of it. Below kLowCoverage, coverage_note says so.
  uint64_t launches = 0;
  uint64_t covered_launches = 0;
  double covered_time_fraction = 0;
  std::string coverage_note;
};

// A kernel's shares are "too few" beyond this half-width of its top share's interval.
inline constexpr double kMaxStallHalfWidth = 0.05;

struct StallReport {
  std::vector<StallKernelRow> rows;  // ranked by samples
  KernelNames names;                 // how the renderers name kernels (--short-names)
  int top = 5;                       // from the options: reasons, PCs or lines per kernel
  StallView view = StallView::kKernel;
  uint64_t samples = 0;                 // over the rows
  uint64_t unknown_reason_samples = 0;  // with an index the trace's stall reasons do not name
  std::set<uint32_t> unknown_reasons;
  uint64_t dropped_samples = 0;       // CUPTI's droppedSamples, summed over batches
  uint64_t buffer_full_batches = 0;   // batches read with the hardware buffer full
  std::vector<std::string> traces_without_samples;  // labels of traces with no PC record
  SourceMapping source;  // the PC-to-line lookup's counts and first problem (`lines` cleared)
  bool source_mapped = false;  // whether the lookup ran (options.locator set)
};

// Sums the PC samples of every trace (one per rank, say) per kernel name, and maps the PCs of
// the kernels in the report to source lines (with options.locator). FailedPrecondition,
// saying how to record them, when no trace has PC samples; InvalidArgument for a bad regex.
absl::StatusOr<StallReport> BuildStallReport(const std::vector<const TraceModel*>& traces,
                                             const std::vector<std::string>& labels,
                                             const StallReportOptions& options);

// The report as typed tables, what the CLI's CSV and JSON give and Python's warpscope.stalls
// turns into DataFrames: "kernels" (a row per kernel: samples, pct, selected, not_issued,
// cycles_per_issue, sampling_instants, too_few, coverage, hottest_line) and "reasons" (a row per
// kernel and warp state, with its 95% interval) or, by PC, "pcs" (a row per hot PC and warp
// state); by line also "lines" (a row per hot line). Percentages are of 100. The text form
// (text blocks): by kernel, a row per kernel with its top reasons and hottest line, then each
// kernel's top reasons with advice; by PC or line, a row per hot PC or line. Notes:
// StallReportNotes.
Report StallReportTables(const StallReport& report, bool by_pc);

// What qualifies the figures (unknown reason indices, dropped samples, a full hardware buffer,
// traces without samples), one sentence each; the table prints them below itself.
std::vector<std::string> StallReportNotes(const StallReport& report);

// One stacked horizontal bar per kernel (its top reasons, the rest as "other"), self-contained.
std::string RenderStallSvg(const StallReport& report);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_STALLS_H_
