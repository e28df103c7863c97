// `warpscope job`, a row of the list of analyses (analysis.h, job.h).
#include <string>

#include "absl/status/status.h"

#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/job/job.h"

namespace warpscope {

absl::Status CheckAdviseOptions(const OptionValues& values);  // advise_row.cc: --max-events

namespace {

absl::StatusOr<AnalysisResult> RunJob(const AnalysisInputs& in, const OptionValues& values) {
  JobOptions options;
  options.step = values.Text("step-range");
  options.threads = values.Count("threads");
  options.short_names = values.Has("short-names");
  options.max_events = static_cast<uint64_t>(values.Integer("max-events"));
  options.drawing = values.Has("svg");
  absl::StatusOr<JobView> view = BuildJobView(in.paths, options);
  if (!view.ok()) return AsInputError(view.status());
  AnalysisResult result;
  result.report = JobReport(*view, in.scope);
  if (values.Has("svg")) {
    result.files.push_back({"svg", JobSvg(*view, values.Count("svg-steps")), ""});
  }
  return result;
}

}  // namespace

AnalysisRow JobAnalysis() {
  AnalysisRow row;
  row.name = "job";
  row.summary = "all ranks of a job: collectives matched, waiting, the straggler and its cause";
  row.usage = "TRACE.wst... | DIR [flags]";
  row.input = AnalysisInput::kJob;
  row.options = {
      {"step-range", "", OptionKind::kText, "RANGE",
       "the NVTX range that marks a step (default: a numbered or step-named range)", ""},
      {"threads", "j", OptionKind::kCount, "N",
       "traces read at once (0: the machine's cores)", "0"},
      {"svg", "", OptionKind::kOutputFile, "FILE", "draw the ranks side by side over a few steps",
       "", "job.svg"},
      {"svg-steps", "", OptionKind::kCount, "N", "steps the picture covers (0: all)", "3"},
      {"max-events", "", OptionKind::kInteger, "N",
       "the straggler's own advise reads only its first steps within N timed events",
       std::to_string(kAdviseMaxEvents)},
      ShortNamesOption()};
  row.about =
      "Give every rank's trace (or the folder holding them, as `record -o DIR/` writes).\n"
      "A rank's wait in a collective is its duration minus the shortest among the ranks;\n"
      "see docs/distributed.md for every figure and the straggler rule.\n";
  row.check = CheckAdviseOptions;
  row.run = RunJob;
  return row;
}

}  // namespace warpscope
