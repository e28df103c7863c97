// `warpscope advise TRACE`: findings ranked by the time a fix would save, as a table, CSV,
// JSON and, with --html, a one-page report (analyzers/analyses/advise.h, docs/advise.md).
#include <cstdio>
#include <string>

#include "analyzers/analyses/advise.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/render/output.h"
#include "analyzers/render/output_path.h"

namespace warpscope {

int RunAdviseCommand(const CommandArgs& args) {
  FlagSet flags("advise", "TRACE.wst [flags]",
                {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
                 {"html", "", true, "FILE", "also write a one-page HTML report", ""},
                 {"top", "n", true, "N", "findings shown, costliest first (0 = all)", "0"},
                 {"device", "d", true, "N", "only GPU work of this device", ""}});
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, TraceFiles::kOne,
          "Findings ranked by what a fix would save: GPU idle gaps with their cause (host\n"
          "synchronization, a blocking read of a GPU value, a blocking copy, a host NVTX range\n"
          "without GPU work, launch-bound stretches), pageable copies, copies that do not\n"
          "overlap compute, and with PM/PC samples long tails, low occupancy and stalls.\n"
          "One-time start-up gaps are a finding of their own, ranked last. Each finding says\n"
          "where, the evidence and the fix. See docs/advise.md for every rule, threshold and\n"
          "cost model.\n")) {
    return *exit;
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  AdviseOptions options;
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

  const std::string& path = flags.positionals()[0];
  absl::StatusOr<TraceModel> model = LoadTraceForCommand(path);
  if (!model.ok()) return 1;
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
