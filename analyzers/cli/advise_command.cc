// `warpscope advise TRACE`: findings ranked by the time a fix would save, as a table, CSV,
// JSON and, with --html, a one-page report (analyzers/analyses/advise.h, docs/advise.md).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/advise.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/render/output.h"
#include "analyzers/render/output_path.h"
#include "proto/common/setting_error.h"

namespace warpscope {

int RunAdviseCommand(const CommandArgs& args) {
  FlagSet flags("advise", "TRACE.wst [flags]",
                {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
                 {"html", "", true, "FILE", "also write a one-page HTML report", ""},
                 {"top", "n", true, "N", "findings shown, costliest first (0 = all)", "0"},
                 {"device", "d", true, "N", "only GPU work of this device", ""}});
  if (absl::Status status = flags.Parse(args); !status.ok()) return UsageError(status);
  if (flags.help_requested()) {
    std::fputs(flags.HelpText().c_str(), stdout);
    std::fputs(
        "\nFindings ranked by what a fix would save: GPU idle gaps with their cause (host\n"
        "synchronization, a blocking read of a GPU value, a blocking copy, a host NVTX range\n"
        "without GPU work, launch-bound stretches), pageable copies, copies that do not\n"
        "overlap compute, and with PM/PC samples long tails, low occupancy and stalls.\n"
        "One-time start-up gaps are a finding of their own, ranked last. Each finding says\n"
        "where, the evidence and the fix. See docs/advise.md for every rule, threshold and\n"
        "cost model.\n",
        stdout);
    return 0;
  }
  if (flags.positionals().size() != 1) {
    return UsageError(absl::InvalidArgumentError(
        "advise needs exactly one trace file; see warpscope advise --help"));
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  AdviseOptions options;
  absl::StatusOr<int64_t> top = flags.GetInt("top");
  if (!top.ok()) return UsageError(top.status());
  if (*top < 0) return UsageError(absl::InvalidArgumentError("flag --top must be 0 or more"));
  options.top = static_cast<size_t>(std::min<int64_t>(*top, 1 << 20));
  if (flags.Has("device")) {
    absl::StatusOr<int64_t> device = flags.GetInt("device");
    if (!device.ok()) return UsageError(device.status());
    if (*device < 0 || *device > UINT32_MAX) {
      return UsageError(absl::InvalidArgumentError("flag --device must be a device id, 0 or more"));
    }
    options.device = static_cast<uint32_t>(*device);
  }
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
    std::ofstream out(html_path, std::ios::binary | std::ios::trunc);
    out << RenderAdviseHtml(report, *model);
    out.close();
    if (!out) {
      return InputError(absl::InternalError(
          absl::StrCat("cannot write --html ", QuoteValue(html_path), ": ", std::strerror(errno))));
    }
    std::fprintf(stderr, "warpscope: wrote %s\n", html_path.c_str());
  }
  return 0;
}

}  // namespace warpscope
