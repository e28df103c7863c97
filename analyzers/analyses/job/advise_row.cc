// `warpscope advise`, a row of the list of analyses (analysis.h, advise/advise.h). It sits
// in job/ because a job's advise (several traces, or a folder) reads the ranks together
// (job.h), and job/ already builds on advise/ (the other way round would be a cycle).
#include <string>
#include <vector>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/advise/advise_sample.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/job/job.h"

namespace warpscope {
namespace {

AdviseOptions AdviseOptionsOf(const OptionValues& values) {
  AdviseOptions options;
  options.literal_ranges = values.Has("literal-ranges");
  options.step = values.Text("step-range");
  options.short_names = values.Has("short-names");
  options.top = values.Count("top");
  options.device = values.Device();
  return options;
}

AnalysisResult AdviseResult(const AdviseReport& report) {
  AnalysisResult result;
  result.report = AdviseReportTables(report);
  return result;
}

// A job's advise: every rank's trace read together (job.h); the HTML page draws the ranks
// side by side and the straggler's worst stretch.
absl::StatusOr<AnalysisResult> RunJobAdvise(const AnalysisInputs& in, const OptionValues& values) {
  const AdviseOptions options = AdviseOptionsOf(values);
  JobOptions job_options;
  job_options.step = options.step;
  job_options.short_names = options.short_names;
  job_options.max_events = static_cast<uint64_t>(values.Integer("max-events"));
  job_options.drawing = values.Has("html");
  absl::StatusOr<JobView> view = BuildJobView(in.paths, job_options);
  if (!view.ok()) return AsInputError(view.status());
  absl::StatusOr<AdviseReport> report =
      BuildJobAdviseReport(*view, options, values.Count("per-rank"));
  if (!report.ok()) return AsInputError(report.status());
  std::string page;
  if (values.Has("html")) {
    const RankDigest* shown = &view->ranks.front();
    for (const RankDigest& r : view->ranks) {
      if (view->straggler.rank == r.RankOrIndex()) shown = &r;
    }
    absl::StatusOr<TraceModel> model = TraceModel::Load(shown->path);
    if (!model.ok()) return AsInputError(model.status());
    // The timeline is the straggler's: its boxes named as its own findings name kernels.
    AdviseReport shown_report = *report;
    if (options.short_names) shown_report.names = KernelNames::Short(KernelDisplayNames(*model));
    page = RenderAdviseHtml(shown_report, *model, "The ranks side by side", JobSvg(*view));
  }
  AnalysisResult result = AdviseResult(std::move(*report));
  if (values.Has("html")) result.files.push_back({"html", std::move(page), ""});
  return result;
}


// A single trace is loaded with its NVTX ranges only; RunAdvise reads its events again, whole
// or their first steps within --max-events (advise_sample.h). A job reads its ranks itself.
TraceModelOptions AdviseLoad(const OptionValues&) { return AdviseRangesLoadOptions(); }

absl::StatusOr<AnalysisResult> RunAdvise(const AnalysisInputs& in, const OptionValues& values) {
  if (in.traces.empty()) return RunJobAdvise(in, values);
  const TraceModel& ranges = *in.traces[0];
  const AdviseOptions options = AdviseOptionsOf(values);
  if (absl::Status s = ranges.CheckDevice(options.device); !s.ok()) return s;
  const auto max_events = static_cast<uint64_t>(values.Integer("max-events"));
  absl::StatusOr<AdviseSample> sample = PlanAdviseSample(ranges, max_events, options.step);
  if (!sample.ok()) return AsInputError(sample.status());
  absl::StatusOr<TraceModel> model = LoadAdviseSample(ranges, &*sample);
  if (!model.ok()) return AsInputError(model.status());
  AdviseReport report = BuildAdviseReport(*model, in.paths[0], options);
  if (std::string note = AdviseSampleNote(*sample, ranges, max_events); !note.empty()) {
    report.notes.insert(report.notes.begin(), std::move(note));
  }
  std::string page;
  if (values.Has("html")) page = RenderAdviseHtml(report, *model);
  AnalysisResult result = AdviseResult(std::move(report));
  if (values.Has("html")) result.files.push_back({"html", std::move(page), ""});
  return result;
}

}  // namespace

// --max-events, of `advise` and of `job` (the straggler's own advise): at least 1000.
absl::Status CheckAdviseOptions(const OptionValues& values) {
  if (values.Integer("max-events") < 1000) {
    return absl::InvalidArgumentError("flag --max-events must be at least 1000");
  }
  return absl::OkStatus();
}

AnalysisRow AdviseAnalysis() {
  AnalysisRow row;
  row.name = "advise";
  row.summary = "findings ranked by the time a fix would save; HTML report";
  row.usage = "TRACE.wst... | DIR [flags]";
  row.input = AnalysisInput::kTraceOrJob;
  row.options = {
      {"html", "", OptionKind::kOutputFile, "FILE", "also write a one-page HTML report", "",
       "advise.html"},
      {"top", "n", OptionKind::kCount, "N", "findings shown, costliest first (0 = all)", "0"},
      {"device", "d", OptionKind::kDevice, "N", "only GPU work of this device", ""},
      {"per-rank", "", OptionKind::kCount, "N", "a job's: findings kept of each rank's advise",
       "5"},
      {"step-range", "", OptionKind::kText, "RANGE",
       "the NVTX range that marks steps (default: found)", ""},
      {"max-events", "", OptionKind::kInteger, "N",
       "a trace with more timed events: only its first steps within N are read",
       std::to_string(kAdviseMaxEvents)},
      LiteralRangesOption(),
      ShortNamesOption()};
  row.about =
      "Findings ranked by what a fix would save: GPU idle gaps with their cause (host\n"
      "synchronization, a blocking read of a GPU value, a blocking copy, a host NVTX range\n"
      "without GPU work, launch-bound stretches), pageable copies, copies that do not\n"
      "overlap compute, and with PM/PC samples long tails, low occupancy and stalls.\n"
      "A finding covers every step: numbered ranges (step_12, ProfilerStep#12) are one\n"
      "place, step_<N>; with steps, findings are ranked by their cost per steady step\n"
      "(after the warm-up steps). One-time costs (start-up gaps, warm-up steps, copies\n"
      "of the weights) are findings of their own, listed apart after them. Each finding says\n"
      "where, the evidence and the fix. See docs/advise.md for every rule, threshold and\n"
      "cost model.\n"
      "Several traces (or a folder of them) are the ranks of one job: the rank the others\n"
      "wait for comes first when it costs the most, then each rank's own findings, their\n"
      "waits in collectives measured against the other ranks (docs/distributed.md).\n"
      "A trace of more than --max-events timed events is read only in part, so that\n"
      "memory stays bounded: its first steps within the budget; a note says how many.\n";
  row.check = CheckAdviseOptions;
  row.load_options = AdviseLoad;
  row.run = RunAdvise;
  return row;
}

}  // namespace warpscope
