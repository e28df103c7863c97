// `warpscope info TRACE`: prints what a trace holds (analyzers/analyses/info.h).
#include <cstdio>
#include <string>

#include "analyzers/analyses/info.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"

namespace warpscope {

int RunInfoCommand(const CommandArgs& args) {
  FlagSet flags("info", "TRACE.wst [--format text|json]",
                {{"format", "f", true, "FORMAT", "text or json", "text"}});
  if (std::optional<int> exit = ParseCommandFlags(flags, args, TraceFiles::kOne, "")) return *exit;
  absl::StatusOr<std::string> format_name = flags.GetChoice("format", {"text", "table", "json"});
  if (!format_name.ok()) return UsageError(format_name.status());
  const std::string& path = flags.positionals()[0];
  // Info needs counts, the span and the problems, not the events: memory stays with what the
  // trace defines however long it is.
  TraceModelOptions options;
  options.keep_events = 0;
  absl::StatusOr<TraceModel> model = TraceModel::Load(path, options);
  if (!model.ok()) return InputError(model.status());
  const OutputFormat format = *format_name == "json" ? OutputFormat::kJson : OutputFormat::kTable;
  std::fputs(RenderTraceInfo(*model, format).c_str(), stdout);
  if (model->truncation.truncated()) {
    std::fprintf(stderr,
                 "warpscope: %s was cut short: %s; it was read up to its last whole "
                 "packet\n",
                 path.c_str(), model->truncation.Describe().c_str());
  }
  return 0;
}

}  // namespace warpscope
