// `warpscope advise TRACE`: findings ranked by the time a fix would save, as a table, CSV,
// JSON and, with --html, a one-page report (analyzers/analyses/advise/advise.h, docs/advise.md).
#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/render/output.h"
#include "analyzers/render/output_path.h"

namespace warpscope {
namespace {

bool IsDirectoryPath(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A job's advise: every rank's trace read together (job.h); the HTML page draws the ranks
// side by side and the straggler's worst stretch.
int RunJobAdvise(const std::vector<std::string>& paths, const AdviseOptions& options,
                 size_t per_rank, OutputFormat format, const std::string& html_path) {
  JobOptions job_options;
  job_options.step = options.step;
  job_options.short_names = options.short_names;
  absl::StatusOr<JobView> view = BuildJobView(paths, job_options);
  if (!view.ok()) return InputError(view.status());
  absl::StatusOr<AdviseReport> report = BuildJobAdviseReport(*view, options, per_rank);
  if (!report.ok()) return InputError(report.status());
  std::fputs(RenderAdviseReport(*report, format).c_str(), stdout);
  if (html_path.empty()) return 0;
  const RankDigest* shown = &view->ranks.front();
  for (const RankDigest& r : view->ranks) {
    if (view->straggler.rank == r.RankOrIndex()) shown = &r;
  }
  absl::StatusOr<TraceModel> model = LoadTraceForCommand(shown->path);
  if (!model.ok()) return 1;
  // The timeline is the straggler's: its boxes named as its own findings name kernels.
  if (options.short_names) report->names = KernelNames::Short(KernelDisplayNames(*model));
  const std::string page = RenderAdviseHtml(*report, *model, "The ranks side by side",
                                            JobSvg(*view));
  if (absl::Status s = WriteOutputFile(html_path, "--html", page); !s.ok()) return InputError(s);
  std::fprintf(stderr, "warpscope: wrote %s\n", html_path.c_str());
  return 0;
}

}  // namespace

int RunAdviseCommand(const CommandArgs& args) {
  FlagSet flags("advise", "TRACE.wst... | DIR [flags]",
                {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
                 {"html", "", true, "FILE", "also write a one-page HTML report", ""},
                 {"top", "n", true, "N", "findings shown, costliest first (0 = all)", "0"},
                 {"device", "d", true, "N", "only GPU work of this device", ""},
                 {"per-rank", "", true, "N", "a job's: findings kept of each rank's advise", "5"},
                 {"step", "", true, "RANGE", "the NVTX range that marks steps (default: found)",
                  ""},
                 {"literal-ranges", "", false, "",
                  "keep NVTX range names as written (step_12, not step_<N>)", ""},
                 ShortNamesFlag()});
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, TraceFiles::kOneOrMore,
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
          "waits in collectives measured against the other ranks (docs/distributed.md).\n")) {
    return *exit;
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  AdviseOptions options;
  options.literal_ranges = flags.Has("literal-ranges");
  options.step = flags.Get("step");
  options.short_names = flags.Has("short-names");
  absl::StatusOr<size_t> top = GetCountFlag(flags, "top");
  if (!top.ok()) return UsageError(top.status());
  options.top = *top;
  absl::StatusOr<std::optional<uint32_t>> device = GetDeviceFlag(flags);
  if (!device.ok()) return UsageError(device.status());
  options.device = *device;
  const std::string html_path = flags.Get("html");
  if (flags.Has("html")) {
    if (absl::StatusOr<bool> ok = CheckOutputPath(html_path, "--html", "advise.html"); !ok.ok()) {
      return UsageError(ok.status());
    }
  }

  absl::StatusOr<size_t> per_rank = GetCountFlag(flags, "per-rank");
  if (!per_rank.ok()) return UsageError(per_rank.status());
  const std::string& path = flags.positionals()[0];
  if (flags.positionals().size() > 1 || IsDirectoryPath(path)) {
    return RunJobAdvise(flags.positionals(), options, *per_rank, *format, html_path);
  }
  absl::StatusOr<TraceModel> model = LoadTraceForCommand(path);
  if (!model.ok()) return 1;
  if (absl::Status s = model->CheckDevice(options.device); !s.ok()) return UsageError(s);
  const AdviseReport report = BuildAdviseReport(*model, path, options);
  std::fputs(RenderAdviseReport(report, *format).c_str(), stdout);
  if (flags.Has("html")) {
    if (absl::Status s = WriteOutputFile(html_path, "--html", RenderAdviseHtml(report, *model));
        !s.ok()) {
      return InputError(s);
    }
    std::fprintf(stderr, "warpscope: wrote %s\n", html_path.c_str());
  }
  return 0;
}

}  // namespace warpscope
