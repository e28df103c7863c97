// `warpscope start|stop|dump|status [PID...] [--rank LIST] [--job ID] [--all]`: commands to
// running processes through their control channel (analyzers/launcher/control_client.h). One
// line a process addressed; exit status 0 when every one did it, 1 otherwise, 2 for usage.
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/launcher/control_client.h"
#include "analyzers/render/output.h"
#include "proto/control/control_protocol.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

constexpr char kAbout[] =
    "Without PID, the processes of this user (all, for root) whose warpscope listens for\n"
    "control commands are found in /proc/net/unix; --rank, --job and --all choose among them.\n"
    "Only the process's own user or root may send commands; see docs/record.md, \"Windows on\n"
    "demand\".\n";

const char* CommandAbout(ControlCommand command) {
  switch (command) {
    case ControlCommand::kStart: return "open a capture window now in running processes";
    case ControlCommand::kStop: return "close the open capture window in running processes";
    case ControlCommand::kDump: return "write running processes' flight recorder out";
    case ControlCommand::kStatus: return "list running processes with warpscope and their capture state";
  }
  return "";
}

// A process addressed, with its status when it answered one.
struct Target {
  int64_t pid = 0;
  std::optional<ControlStatus> status;
};

void PrintLine(const std::string& line) { std::printf("warpscope: %s\n", line.c_str()); }

// The status of `pid`, or the line that says why there is none.
absl::StatusOr<ControlStatus> AskStatus(int64_t pid) {
  absl::StatusOr<ControlReply> reply = SendControlRequest(pid, {ControlCommand::kStatus, {}});
  if (!reply.ok()) {
    if (absl::IsNotFound(reply.status())) {
      return absl::NotFoundError(absl::StrCat(
          "no warpscope in pid ", pid,
          " (not injected, or its warpscope has no control channel); see `warpscope status`"));
    }
    return absl::Status(reply.status().code(), absl::StrCat("pid ", pid, ": ",
                                                            reply.status().message()));
  }
  if (reply->result != ControlResult::kOk) {
    return absl::PermissionDeniedError(absl::StrCat(
        "pid ", pid, ": ", std::string(ControlResultName(reply->result)), ": ", reply->text));
  }
  ControlStatus status;
  std::string error;
  if (!ParseControlStatus(reply->text, &status, &error)) {
    return absl::DataLossError(absl::StrCat("pid ", pid, ": unreadable status: ", error));
  }
  return status;
}

// The processes named on the command line; those that cannot be addressed get their line.
std::vector<Target> NamedTargets(const std::vector<int64_t>& pids, int* failures) {
  std::vector<Target> targets;
  for (int64_t pid : pids) {
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      PrintLine(absl::StrCat("no process ", pid));
      ++*failures;
      continue;
    }
    absl::StatusOr<ControlStatus> status = AskStatus(pid);
    if (!status.ok()) {
      PrintLine(std::string(status.status().message()));
      ++*failures;
      continue;
    }
    targets.push_back({pid, *status});
  }
  return targets;
}

// The processes found listening that `selection` chooses. Exit code when there is nothing to do.
std::optional<int> FoundTargets(ControlCommand command, const ControlSelection& selection,
                                const std::string& selection_text, std::vector<Target>* targets,
                                int* failures) {
  absl::StatusOr<std::vector<int64_t>> pids = FindControlPids();
  if (!pids.ok()) return InputError(pids.status());
  if (pids->empty()) {
    return InputError(absl::NotFoundError(
        "no process with warpscope's control channel found (in this network namespace, of "
        "this user); name a PID, or start the program with `warpscope record`"));
  }
  std::vector<Target> found;
  std::vector<std::string> unanswered;
  for (int64_t pid : *pids) {
    absl::StatusOr<ControlStatus> status = AskStatus(pid);
    if (status.ok()) {
      found.push_back({pid, *status});
    } else if (selection.all || !selection.any()) {
      // Addressed, but it cannot be asked: its line now.
      PrintLine(std::string(status.status().message()));
      ++*failures;
    } else {
      unanswered.push_back(absl::StrCat(pid));
    }
  }
  const size_t all_found = found.size();
  std::vector<std::string> seen;
  for (const Target& t : found) seen.push_back(ControlProcessName(t.pid, &*t.status));
  std::erase_if(found, [&](const Target& t) { return !selection.Matches(*t.status); });
  if (selection.any() && found.empty()) {
    std::string what = absl::StrJoin(seen, ", ");
    if (!unanswered.empty()) absl::StrAppend(&what, "; no status from pid ", absl::StrJoin(unanswered, ", pid "));
    return InputError(absl::NotFoundError(absl::StrCat(
        "no process with warpscope matches ", selection_text, " (found: ", what, ")")));
  }
  if (!selection.any() && command != ControlCommand::kStatus && all_found > 1) {
    return UsageError(absl::InvalidArgumentError(absl::StrCat(
        all_found, " processes have warpscope's control channel (", absl::StrJoin(seen, ", "),
        "); name PIDs, or choose with --rank, --job or --all")));
  }
  *targets = std::move(found);
  return std::nullopt;
}

// --rank, --job and --all as a selection, with the words that name it in messages. Exit code
// when they are refused.
std::optional<int> ParseSelection(const FlagSet& flags, ControlSelection* selection,
                                  std::string* selection_text) {
  std::vector<std::string> selection_words;
  if (flags.Has("rank")) {
    absl::StatusOr<RankList> ranks = RankList::Parse(flags.Get("rank"));
    if (!ranks.ok()) return UsageError(ranks.status());
    selection->ranks = *ranks;
    selection_words.push_back("--rank " + flags.Get("rank"));
  }
  if (flags.Has("job")) {
    selection->job = flags.Get("job");
    if (selection->job.empty()) {
      return UsageError(absl::InvalidArgumentError("--job needs a job id; see `warpscope status`"));
    }
    selection_words.push_back("--job " + selection->job);
  }
  selection->all = flags.Has("all");
  if (selection->all && (selection->ranks || !selection->job.empty())) {
    return UsageError(absl::InvalidArgumentError(
        "--all chooses every process; give it alone, or --rank/--job without it"));
  }
  *selection_text = absl::StrJoin(selection_words, " ");
  return std::nullopt;
}

// The process ids named on the command line. Exit code when a word is not one.
std::optional<int> ParsePids(const FlagSet& flags, const std::string& name,
                             std::vector<int64_t>* pids) {
  for (const std::string& word : flags.positionals()) {
    int64_t pid = 0;
    if (!absl::SimpleAtoi(word, &pid) || pid <= 0 || pid > 0x7fffffff) {
      return UsageError(absl::InvalidArgumentError(absl::StrCat(
          QuoteValue(word), " is not a process id; see `warpscope ", name, " --help`")));
    }
    pids->push_back(pid);
  }
  return std::nullopt;
}

// Sends `command` to each target, one line a process; returns how many did not do it.
int SendToTargets(ControlCommand command, const std::vector<Target>& targets) {
  int failures = 0;
  for (const Target& t : targets) {
    const std::string who = ControlProcessName(t.pid, t.status ? &*t.status : nullptr);
    absl::StatusOr<ControlReply> reply = SendControlRequest(t.pid, {command, {}});
    if (!reply.ok()) {
      PrintLine(absl::StrCat(who, ": ", reply.status().message()));
      ++failures;
    } else if (reply->result != ControlResult::kOk) {
      PrintLine(absl::StrCat(who, ": ", std::string(ControlResultName(reply->result)), ": ",
                             reply->text));
      ++failures;
    } else {
      PrintLine(absl::StrCat(who, ": ", reply->text));
    }
  }
  return failures;
}

int RunControlCommand(ControlCommand command, const CommandArgs& args) {
  const std::string name(ControlCommandName(command));
  std::vector<FlagSpec> specs = {
      {"rank", "", true, "LIST", "the processes of these ranks: 0,2-3", ""},
      {"job", "", true, "ID", "the processes of this job (its job id, e.g. SLURM_JOB_ID=123 or 123)",
       ""},
      {"all", "", false, "", "every process found", ""}};
  if (command == ControlCommand::kStatus) {
    specs.push_back({"format", "f", true, "FORMAT", "text, csv or json", "text"});
  }
  FlagSet flags(name, "[PID...] [--rank LIST] [--job ID] [--all]", specs);
  if (absl::Status parsed = flags.Parse(args); !parsed.ok()) return UsageError(parsed);
  if (flags.help_requested()) {
    std::printf("%s: %s\n\n%s\n%s", name.c_str(), CommandAbout(command), flags.HelpText().c_str(),
                kAbout);
    return 0;
  }
  OutputFormat format = OutputFormat::kTable;
  if (command == ControlCommand::kStatus) {
    absl::StatusOr<OutputFormat> f = ParseOutputFormat(flags.Get("format"));
    if (!f.ok()) return UsageError(f.status());
    format = *f;
  }
  ControlSelection selection;
  std::string selection_text;
  if (std::optional<int> exit = ParseSelection(flags, &selection, &selection_text)) return *exit;
  std::vector<int64_t> pids;
  if (std::optional<int> exit = ParsePids(flags, name, &pids)) return *exit;
  if (!pids.empty() && selection.any()) {
    return UsageError(absl::InvalidArgumentError(
        "name PIDs or choose with --rank, --job or --all, not both"));
  }

  int failures = 0;
  std::vector<Target> targets;
  if (!pids.empty()) {
    targets = NamedTargets(pids, &failures);
  } else if (std::optional<int> exit =
                 FoundTargets(command, selection, selection_text, &targets, &failures)) {
    return *exit;
  }
  if (command == ControlCommand::kStatus) {
    std::vector<ControlStatus> statuses;
    for (const Target& t : targets) statuses.push_back(*t.status);
    if (!statuses.empty()) std::fputs(ControlStatusTable(statuses).Render(format).c_str(), stdout);
    return failures == 0 ? 0 : 1;
  }
  failures += SendToTargets(command, targets);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int RunStartCommand(const CommandArgs& args) { return RunControlCommand(ControlCommand::kStart, args); }
int RunStopCommand(const CommandArgs& args) { return RunControlCommand(ControlCommand::kStop, args); }
int RunDumpCommand(const CommandArgs& args) { return RunControlCommand(ControlCommand::kDump, args); }
int RunStatusCommand(const CommandArgs& args) {
  return RunControlCommand(ControlCommand::kStatus, args);
}

}  // namespace warpscope
