// `warpscope record [flags] [--] COMMAND ARGS...`: runs COMMAND with warpscope injected,
// forwards termination signals to it, returns its exit status and says where the trace is.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/record/record.h"
#include "proto/common/setting_error.h"
#include "proto/common/settings.h"

extern char** environ;

namespace warpscope {
namespace {

volatile sig_atomic_t g_child = 0;

// Forwards a signal to the child unless the terminal already sent it to the whole process
// group (then the child has it too, and a second copy would cut its clean shutdown short).
void Forward(int sig, siginfo_t* info, void*) {
  if (g_child <= 0) return;
  if (info != nullptr && info->si_code == SI_KERNEL && (sig == SIGINT || sig == SIGQUIT)) return;
  if (info != nullptr && info->si_pid == g_child) return;
  kill(g_child, sig);
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

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

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> current;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) current[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  return current;
}

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// The child: waits for the trace's name on `go` (closed empty: the launcher refused the run),
// then execs the command; a failed exec writes its errno to `exec_status`.
[[noreturn]] void RunChild(const int go[2], const int exec_status[2], const RecordPlan& plan,
                           const std::vector<std::string>& command) {
  // The program's own signal dispositions, before anything can arrive for it.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : kForwardedSignals) sigaction(sig, &dfl, nullptr);
  close(go[1]);
  close(exec_status[0]);
  std::string path;
  char buf[4096];
  for (ssize_t got; (got = read(go[0], buf, sizeof buf)) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) _exit(127);
    path.append(buf, static_cast<size_t>(got));
  }
  if (path.empty()) _exit(127);  // the launcher refused the run
  for (const auto& [k, v] : plan.env) setenv(k.c_str(), v.c_str(), 1);
  // The name is final; the library expands it again, so its '%' are escaped.
  setenv("WARPSCOPE_OUTPUT", LiteralOutputPattern(path).c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  const int err = errno;
  ssize_t ignored = write(exec_status[1], &err, sizeof err);
  (void)ignored;
  _exit(127);
}

// Termination and user signals go to the child (Forward).
void ForwardSignalsToChild() {
  struct sigaction sa = {};
  sa.sa_sigaction = &Forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kForwardedSignals) sigaction(sig, &sa, nullptr);
}

void WriteAll(int fd, const std::string& text) {
  for (size_t sent = 0; sent < text.size();) {
    ssize_t put = write(fd, text.data() + sent, text.size() - sent);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) break;
    sent += static_cast<size_t>(put);
  }
}

int WaitChild(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return 1 << 8;
  }
  return status;
}

// The errno of a failed exec, or 0 once the exec succeeded (the pipe closed empty).
int ExecErrno(int fd) {
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(fd, &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  return got == static_cast<ssize_t>(sizeof exec_errno) ? exec_errno : 0;
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
  absl::StatusOr<std::string> shim = FindShim(self, std::getenv("WARPSCOPE_SHIM"));
  const uint64_t start_ns = MonotonicNs();
  const uint32_t launcher_pid = static_cast<uint32_t>(getpid());
  // Flags first: a usage error is reported even where the library is missing.
  absl::StatusOr<RecordPlan> plan =
      BuildRecordPlan(req, CurrentEnvironment(), shim.ok() ? *shim : "", launcher_pid, start_ns);
  if (!plan.ok()) return UsageError(plan.status());
  if (!shim.ok()) return UsageError(shim.status());
  for (const std::string& w : plan->warnings) std::fprintf(stderr, "%s\n", w.c_str());

  ForwardSignalsToChild();

  // The child waits before exec until the launcher has checked the trace name, which needs
  // the child's pid (%p): `go` carries the name (closed empty: do not run), `exec_status`
  // the errno of a failed exec (closed empty by a successful one: close-on-exec).
  int go[2], exec_status[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(exec_status, O_CLOEXEC) != 0) {
    return InputError(absl::InternalError(absl::StrCat("pipe failed: ", std::strerror(errno))));
  }
  std::string hostname = Hostname();
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    return InputError(absl::InternalError(absl::StrCat("fork failed: ", std::strerror(errno))));
  }
  if (child == 0) RunChild(go, exec_status, *plan, req.command);
  close(go[0]);
  close(exec_status[1]);
  g_child = child;
  // A child that died before reading its name must not take the launcher with it.
  signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<std::string> path =
      ExpectedTracePath(plan->output_pattern, static_cast<uint32_t>(child), hostname);
  absl::StatusOr<bool> existed_before =
      path.ok() ? CheckTraceDestination(*path, plan->force_overwrite, plan->output_name)
                : path.status();
  if (!existed_before.ok()) {
    close(go[1]);
    close(exec_status[0]);
    WaitChild(child);
    return UsageError(existed_before.status());
  }
  WriteAll(go[1], *path);
  close(go[1]);
  const int exec_errno = ExecErrno(exec_status[0]);
  close(exec_status[0]);
  int status = WaitChild(child);
  if (exec_errno != 0) {
    std::fprintf(stderr, "warpscope: cannot run %s: %s; check the command and PATH\n",
                 QuoteValue(req.command[0]).c_str(), std::strerror(exec_errno));
    return 127;
  }
  int code = ChildExitCode(status);
  if (!req.quiet) {
    std::fprintf(stderr, "%s\n",
                 RecordOutcome(*path, *existed_before, launcher_pid, start_ns).c_str());
    if (WIFSIGNALED(status)) {
      std::fprintf(stderr, "warpscope: %s was killed by signal %d\n", req.command[0].c_str(),
                   WTERMSIG(status));
    }
  }
  return code;
}

}  // namespace warpscope
