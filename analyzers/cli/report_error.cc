// The one way CLI commands print errors and load traces (commands.h).
#include <cstdio>
#include <string>

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

}  // namespace warpscope
