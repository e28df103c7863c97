// The one way CLI commands print errors, parse flags, write files and load traces
// (commands.h).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/cli/commands.h"
#include "proto/settings/setting_error.h"

namespace warpscope {

std::optional<int> ParseCommandFlags(FlagSet& flags, const CommandArgs& args,
                                     std::string_view about) {
  if (absl::Status status = flags.Parse(args); !status.ok()) return UsageError(status);
  if (!flags.help_requested()) return std::nullopt;
  std::fputs(flags.HelpText().c_str(), stdout);
  if (!about.empty()) std::fprintf(stdout, "\n%s", std::string(about).c_str());
  return 0;
}

FlagSpec FlagOf(const AnalysisOption& o) {
  return {o.name, o.short_name, o.kind != OptionKind::kSwitch, o.value_name, o.help,
          o.default_value};
}

int ReportError(const absl::Status& status, int exit_code) {
  std::fprintf(stderr, "warpscope: %s\n", std::string(status.message()).c_str());
  return exit_code;
}

namespace {

absl::StatusOr<TraceModel> LoadTraceForCommand(const std::string& path,
                                               const TraceModelOptions& options,
                                               const SliceRequest& slice) {
  absl::StatusOr<TraceModel> model = LoadSlicedTrace(path, options, slice);
  if (!model.ok()) {
    ReportError(model.status(), 1);
    return model;
  }
  if (model->truncation.truncated()) {
    std::fprintf(stderr, "warpscope: %s was cut short: %s; figures cover what was written\n",
                 path.c_str(), model->truncation.Describe().c_str());
  }
  return model;
}

}  // namespace

bool LoadTracesForCommand(const std::vector<std::string>& paths, std::vector<TraceModel>* models,
                          std::vector<const TraceModel*>* pointers,
                          const TraceModelOptions& options, const SliceRequest& slice) {
  models->clear();
  models->reserve(paths.size());
  for (const std::string& path : paths) {
    absl::StatusOr<TraceModel> model = LoadTraceForCommand(path, options, slice);
    if (!model.ok()) return false;
    models->push_back(std::move(*model));
  }
  pointers->clear();
  for (const TraceModel& m : *models) pointers->push_back(&m);
  return true;
}

}  // namespace warpscope
