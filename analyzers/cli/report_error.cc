// The one way CLI commands print errors, parse the flags they share, write files and load
// traces (commands.h).
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

std::optional<int> ParseCommandFlags(FlagSet& flags, const CommandArgs& args, TraceFiles traces,
                                     const char* about) {
  if (absl::Status status = flags.Parse(args); !status.ok()) return UsageError(status);
  if (flags.help_requested()) {
    std::fputs(flags.HelpText().c_str(), stdout);
    if (about != nullptr && about[0] != '\0') std::fprintf(stdout, "\n%s", about);
    return 0;
  }
  const size_t n = flags.positionals().size();
  const bool several = traces == TraceFiles::kOneOrMore;
  if (traces == TraceFiles::kCheckedByCommand || (several ? n >= 1 : n == 1)) return std::nullopt;
  return UsageError(absl::InvalidArgumentError(
      absl::StrCat(flags.command(), " needs ", several ? "at least" : "exactly",
                   " one trace file; see warpscope ", flags.command(), " --help")));
}

absl::StatusOr<size_t> GetCountFlag(const FlagSet& flags, const std::string& name) {
  absl::StatusOr<int64_t> value = flags.GetInt(name);
  if (!value.ok()) return value.status();
  if (*value < 0) {
    return absl::InvalidArgumentError(absl::StrCat("flag --", name, " must be 0 or more"));
  }
  return static_cast<size_t>(std::min<int64_t>(*value, int64_t{1} << 20));
}

absl::StatusOr<std::optional<uint32_t>> GetDeviceFlag(const FlagSet& flags) {
  if (!flags.Has("device")) return std::optional<uint32_t>();
  absl::StatusOr<int64_t> device = flags.GetInt("device");
  if (!device.ok()) return device.status();
  if (*device < 0 || *device > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag --device must be a device id, 0 or more, not ", *device));
  }
  return std::optional<uint32_t>(static_cast<uint32_t>(*device));
}

absl::Status WriteOutputFile(const std::string& path, const std::string& flag,
                             const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    return absl::InternalError(
        absl::StrCat("cannot write ", flag, " ", QuoteValue(path), ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

int ReportError(const absl::Status& status, int exit_code) {
  std::fprintf(stderr, "warpscope: %s\n", std::string(status.message()).c_str());
  return exit_code;
}

absl::StatusOr<TraceModel> LoadTraceForCommand(const std::string& path,
                                               const TraceModelOptions& options) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path, options);
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
                          std::vector<const TraceModel*>* pointers,
                          const TraceModelOptions& options) {
  models->clear();
  models->reserve(paths.size());
  for (const std::string& path : paths) {
    absl::StatusOr<TraceModel> model = LoadTraceForCommand(path, options);
    if (!model.ok()) return false;
    models->push_back(std::move(*model));
  }
  pointers->clear();
  for (const TraceModel& m : *models) pointers->push_back(&m);
  return true;
}

}  // namespace warpscope
