// The one way CLI commands print errors and load traces (commands.h).
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/cli/commands.h"

namespace warpscope {

int ReportError(const absl::Status& status, int exit_code) {
  std::fprintf(stderr, "warpscope: %s\n", std::string(status.message()).c_str());
  return exit_code;
}

absl::StatusOr<TraceModel> LoadTraceForCommand(const std::string& path) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
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

bool LoadTracesForCommand(const std::vector<std::string>& paths, std::vector<TraceModel>* models,
                          std::vector<const TraceModel*>* pointers) {
  models->clear();
  models->reserve(paths.size());
  for (const std::string& path : paths) {
    absl::StatusOr<TraceModel> model = LoadTraceForCommand(path);
    if (!model.ok()) return false;
    models->push_back(std::move(*model));
  }
  pointers->clear();
  for (const TraceModel& m : *models) pointers->push_back(&m);
  return true;
}

}  // namespace warpscope
