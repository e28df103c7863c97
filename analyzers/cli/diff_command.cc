// `warpscope diff BASE NEW`: what changed between two runs, ranked by impact, with an exit
// status for CI (analyzers/analyses/diff.h, docs/diff.md).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/diff.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/render/output.h"

namespace warpscope {

// The exit status when --fail-on-regression finds one (0 ok, 1 input, 2 usage errors).
inline constexpr int kRegressionExitStatus = 3;

int RunDiffCommand(const CommandArgs& args) {
  FlagSet flags(
      "diff", "BASE.wst NEW.wst [flags]",
      {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
       {"threshold", "", true, "REL", "smallest relative change judged (5% or 0.05)", "5%"},
       {"min-delta", "", true, "DURATION", "smallest impact judged, e.g. 20us, 1ms", "20us"},
       {"min-instances", "", true, "N",
        "instances on both sides to compare per instance (median) instead of total", "5"},
       {"top", "n", true, "N", "rows shown, most impact first (0 = all; totals always)", "20"},
       {"fail-on-regression", "", false, "", "exit with status 3 when anything got slower", ""},
       {"literal-ranges", "", false, "",
        "NVTX ranges by their names as written (step_12, not step_<N>)", ""},
       ShortNamesFlag()});
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, TraceFiles::kCheckedByCommand,
          "Compares NEW with BASE per kernel, NVTX range (the GPU time of its work, and its\n"
          "host time: nvtx-host) and memory operation, and in total\n"
          "(GPU busy, kernel and memory time, wall span); per kernel also achieved occupancy and\n"
          "tail cost (PM samples) and the stall mix (PC samples). A row is slower or faster when "
          "it\nmoved by more than --threshold and its impact on NEW's run exceeds --min-delta. "
          "Exit\nstatus 3 with --fail-on-regression when a row is slower. See docs/diff.md.\n")) {
    return *exit;
  }
  if (flags.positionals().size() != 2) {
    return UsageError(absl::InvalidArgumentError(
        "diff needs two traces, BASE and NEW; see warpscope diff --help"));
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  DiffOptions options;
  absl::StatusOr<double> threshold = ParseRelativeThreshold(flags.Get("threshold"));
  if (!threshold.ok()) return UsageError(threshold.status());
  options.threshold = *threshold;
  absl::StatusOr<double> min_delta = ParseDurationNs(flags.Get("min-delta"));
  if (!min_delta.ok()) return UsageError(min_delta.status());
  options.min_delta_ns = *min_delta;
  absl::StatusOr<int64_t> min_instances = flags.GetInt("min-instances");
  if (!min_instances.ok()) return UsageError(min_instances.status());
  if (*min_instances < 1) {
    return UsageError(absl::InvalidArgumentError("flag --min-instances must be 1 or more"));
  }
  absl::StatusOr<size_t> top = GetCountFlag(flags, "top");
  if (!top.ok()) return UsageError(top.status());
  options.min_instances = static_cast<uint64_t>(*min_instances);
  options.top = *top;
  options.literal_ranges = flags.Has("literal-ranges");

  std::vector<TraceModel> models;
  std::vector<const TraceModel*> pointers;
  if (!LoadTracesForCommand(flags.positionals(), &models, &pointers)) return 1;
  DiffReport report = BuildDiffReport(*pointers[0], *pointers[1], flags.positionals()[0],
                                      flags.positionals()[1], options);
  report.names = KernelNamesOfFlag(flags, pointers);
  std::fputs(RenderDiffReport(report, *format).c_str(), stdout);
  if (flags.Has("fail-on-regression") && report.regressions > 0) {
    std::fprintf(stderr, "warpscope: %s is slower than %s in %llu row(s)\n",
                 flags.positionals()[1].c_str(), flags.positionals()[0].c_str(),
                 static_cast<unsigned long long>(report.regressions));
    return kRegressionExitStatus;
  }
  return 0;
}

}  // namespace warpscope
