// `warpscope diff`, a row of the list of analyses (analysis.h, diff.h).
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/diff.h"

namespace warpscope {
namespace {

// The exit status when --fail-on-regression finds one (0 ok, 1 input, 2 usage errors).
inline constexpr int kRegressionExitStatus = 3;

absl::StatusOr<DiffOptions> DiffOptionsOf(const OptionValues& values) {
  DiffOptions options;
  absl::StatusOr<double> threshold = ParseRelativeThreshold(values.Text("threshold"));
  if (!threshold.ok()) return threshold.status();
  options.threshold = *threshold;
  absl::StatusOr<double> min_delta = ParseDurationNs(values.Text("min-delta"));
  if (!min_delta.ok()) return min_delta.status();
  options.min_delta_ns = *min_delta;
  const int64_t min_instances = values.Integer("min-instances");
  if (min_instances < 1) {
    return absl::InvalidArgumentError("flag --min-instances must be 1 or more");
  }
  options.min_instances = static_cast<uint64_t>(min_instances);
  options.top = values.Count("top");
  options.literal_ranges = values.Has("literal-ranges");
  return options;
}

absl::Status CheckDiffOptions(const OptionValues& values) {
  return DiffOptionsOf(values).status();
}

// Only the NVTX ranges: the GPU work is folded from a second pass over each file
// (BuildDiffReportOfFiles), so memory does not grow with events. --short-names reads every
// kernel of both traces: they are loaded whole, as `summary` loads them then.
TraceModelOptions DiffLoad(const OptionValues& values) {
  return values.Has("short-names") ? TraceModelOptions() : DiffLoadOptions();
}

absl::StatusOr<AnalysisResult> RunDiff(const AnalysisInputs& in, const OptionValues& values) {
  absl::StatusOr<DiffOptions> options = DiffOptionsOf(values);
  if (!options.ok()) return options.status();
  absl::StatusOr<DiffReport> folded =
      BuildDiffReportOfFiles(*in.traces[0], *in.traces[1], in.paths[0], in.paths[1], *options);
  if (!folded.ok()) return AsInputError(folded.status());
  DiffReport report = *std::move(folded);
  report.names = KernelNamesOf(values, in.traces);
  AnalysisResult result;
  result.report = DiffReportTables(report);
  if (values.Has("fail-on-regression") && report.regressions > 0) {
    result.exit_status = kRegressionExitStatus;
    result.exit_message = absl::StrCat(in.paths[1], " is slower than ", in.paths[0], " in ",
                                       report.regressions, " row(s)");
  }
  return result;
}

}  // namespace

AnalysisRow DiffAnalysis() {
  AnalysisRow row;
  row.name = "diff";
  row.summary = "what changed between two traces, ranked by impact; exit status for CI";
  row.usage = "BASE.wst NEW.wst [flags]";
  row.input = AnalysisInput::kPair;
  row.options = {
      {"threshold", "", OptionKind::kText, "REL", "smallest relative change judged (5% or 0.05)",
       "5%"},
      {"min-delta", "", OptionKind::kText, "DURATION", "smallest impact judged, e.g. 20us, 1ms",
       "20us"},
      {"min-instances", "", OptionKind::kInteger, "N",
       "instances on both sides to compare per instance (median) instead of total", "5"},
      {"top", "n", OptionKind::kCount, "N",
       "rows shown, most impact first (0 = all; totals always)", "20"},
      {"fail-on-regression", "", OptionKind::kSwitch, "",
       "exit with status 3 when anything got slower", ""},
      LiteralRangesOption(),
      ShortNamesOption()};
  row.about =
      "Compares NEW with BASE per kernel, NVTX range (the GPU time of its work, and its\n"
      "host time: nvtx-host) and memory operation, and in total\n"
      "(GPU busy, kernel and memory time, wall span); per kernel also achieved occupancy and\n"
      "tail cost (PM samples) and the stall mix (PC samples). A row is slower or faster when "
      "it\nmoved by more than --threshold and its impact on NEW's run exceeds --min-delta. "
      "Exit\nstatus 3 with --fail-on-regression when a row is slower. See docs/diff.md.\n";
  row.check = CheckDiffOptions;
  row.load_options = DiffLoad;
  row.run = RunDiff;
  return row;
}

}  // namespace warpscope
