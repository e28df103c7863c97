// `warpscope record [flags] [--] COMMAND ARGS...`: runs COMMAND with warpscope injected
// (analyzers/launcher: the plan, the launch), returns its exit status and says which traces the
// run wrote.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/launcher/launch.h"
#include "analyzers/launcher/record.h"
#include "proto/settings/setting_error.h"
#include "proto/settings/settings.h"

namespace warpscope {
namespace {

// The flags and their help, from the settings table: each default is the table's.
std::vector<FlagSpec> RecordFlagSpecs() {
  std::vector<FlagSpec> specs;
  for (const SettingSpec& s : kSettings) {
    if (s.flag.empty()) continue;
    std::string help(s.help);
    if (!s.default_note.empty())
      absl::StrAppend(&help, " (default: ", std::string(s.default_note), ")");
    specs.push_back({std::string(s.flag), std::string(s.short_flag), !s.flag_is_switch,
                     std::string(s.value_name), help, std::string(s.default_value)});
  }
  return specs;
}

RecordRequest RequestFromFlags(const FlagSet& flags) {
  RecordRequest req;
  for (const SettingSpec& spec : kSettings) {
    const std::string flag(spec.flag);
    if (!flag.empty() && flags.Has(flag)) SetRecordFlag(spec.id, flags.Get(flag), &req);
  }
  req.command = flags.positionals();
  req.command.insert(req.command.end(), flags.rest().begin(), flags.rest().end());
  return req;
}

}  // namespace

int RunRecordCommand(const CommandArgs& args) {
  FlagSet flags("record", "[flags] [--] COMMAND [ARGS...]", RecordFlagSpecs());
  if (absl::Status status = flags.Parse(args, /*stop_at_first_positional=*/true); !status.ok()) {
    return UsageError(status);
  }
  if (flags.help_requested()) {
    std::fputs(flags.HelpText().c_str(), stdout);
    return 0;
  }
  const RecordRequest req = RequestFromFlags(flags);
  char self[4096] = {0};
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) std::snprintf(self, sizeof self, "warpscope");
  absl::StatusOr<std::string> shim =
      FindShim(self, std::getenv(Setting(SettingId::kShim).variable.data()));
  const uint64_t start_ns = MonotonicNs();
  const uint32_t launcher_pid = static_cast<uint32_t>(getpid());
  // Flags first: a usage error is reported even where the library is missing.
  absl::StatusOr<RecordPlan> plan =
      BuildRecordPlan(req, CurrentEnvironment(), shim.ok() ? *shim : "", launcher_pid, start_ns);
  if (!plan.ok()) return UsageError(plan.status());
  if (!shim.ok()) return UsageError(shim.status());
  for (const std::string& w : plan->warnings) std::fprintf(stderr, "%s\n", w.c_str());

  absl::StatusOr<LaunchResult> run = LaunchRecorded(*plan, req.command);
  if (!run.ok())
    return absl::IsInternal(run.status()) ? InputError(run.status()) : UsageError(run.status());
  if (run->exec_errno != 0) {
    std::fprintf(stderr, "warpscope: cannot run %s: %s; check the command and PATH\n",
                 QuoteValue(req.command[0]).c_str(), std::strerror(run->exec_errno));
    return 127;
  }
  const int status = run->wait_status;
  int code = ChildExitCode(status);
  if (!req.quiet) {
    const RecordedRun recorded{.output_pattern = plan->output_pattern,
                               .child_trace = run->trace_path,
                               .child_trace_existed = run->trace_existed,
                               .launcher_pid = launcher_pid,
                               .start_ns = start_ns};
    std::fprintf(stderr, "%s\n", RecordOutcome(recorded).c_str());
    if (WIFSIGNALED(status)) {
      std::fprintf(stderr, "warpscope: %s was killed by signal %d\n", req.command[0].c_str(),
                   WTERMSIG(status));
    }
  }
  return code;
}

}  // namespace warpscope
