// `warpscope job TRACE... | DIR`: the traces of all ranks of a job read together: collectives
// matched across ranks, waiting split from data movement, per-step compute and communication,
// and the straggler with its cause (analyzers/analyses/job/job.h).
#include <cstdio>
#include <string>

#include "analyzers/analyses/job/job.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/render/output.h"
#include "analyzers/render/output_path.h"
#include "analyzers/render/report.h"

namespace warpscope {

int RunJobCommand(const CommandArgs& args) {
  FlagSet flags(
      "job", "TRACE.wst... | DIR [flags]",
      {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
       {"table", "t", true, "NAME",
        "only this table: scalars, ranks, collectives, steps, instances, rank_collectives, "
        "problems",
        ""},
       {"step", "", true, "RANGE",
        "the NVTX range that marks a step (default: a numbered or step-named range)", ""},
       {"threads", "j", true, "N", "traces read at once (0: the machine's cores, at most 8)",
        "0"},
       {"svg", "", true, "FILE", "draw the ranks side by side over a few steps", ""},
       {"svg-steps", "", true, "N", "steps the picture covers (0: all)", "3"},
       ShortNamesFlag()});
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, TraceFiles::kOneOrMore,
          "Give every rank's trace (or the folder holding them, as `record -o DIR/` writes).\n"
          "A rank's wait in a collective is its duration minus the shortest among the ranks;\n"
          "see docs/distributed.md for every figure and the straggler rule.\n")) {
    return *exit;
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  absl::StatusOr<size_t> threads = GetCountFlag(flags, "threads");
  if (!threads.ok()) return UsageError(threads.status());
  absl::StatusOr<size_t> svg_steps = GetCountFlag(flags, "svg-steps");
  if (!svg_steps.ok()) return UsageError(svg_steps.status());
  const std::string svg_path = flags.Get("svg");
  if (flags.Has("svg")) {
    if (absl::StatusOr<bool> ok = CheckOutputPath(svg_path, "--svg", "job.svg"); !ok.ok()) {
      return UsageError(ok.status());
    }
  }
  JobOptions options;
  options.step = flags.Get("step");
  options.threads = *threads;
  options.short_names = flags.Has("short-names");
  absl::StatusOr<JobView> view = BuildJobView(flags.positionals(), options);
  if (!view.ok()) return InputError(view.status());
  absl::StatusOr<std::string> text = RenderReport(JobReport(*view), *format, flags.Get("table"));
  if (!text.ok()) return UsageError(text.status());
  std::fputs(text->c_str(), stdout);
  if (flags.Has("svg")) {
    if (absl::Status s = WriteOutputFile(svg_path, "--svg", JobSvg(*view, *svg_steps)); !s.ok()) {
      return InputError(s);
    }
    std::fprintf(stderr, "warpscope: wrote %s\n", svg_path.c_str());
  }
  return 0;
}

}  // namespace warpscope
