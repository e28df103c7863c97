// The process side of `warpscope record` (launch.h): fork, a held exec, signal forwarding, wait.
#include "analyzers/launcher/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "proto/settings/settings.h"

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

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
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
  setenv(Setting(SettingId::kOutput).variable.data(), LiteralOutputPattern(path).c_str(), 1);
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

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> current;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) current[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  return current;
}

absl::StatusOr<LaunchResult> LaunchRecorded(const RecordPlan& plan,
                                            const std::vector<std::string>& command) {
  ForwardSignalsToChild();
  // The child waits before exec until the launcher has checked the trace name, which needs
  // the child's pid (%p): `go` carries the name (closed empty: do not run), `exec_status`
  // the errno of a failed exec (closed empty by a successful one: close-on-exec).
  int go[2], exec_status[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(exec_status, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe failed: ", std::strerror(errno)));
  }
  const std::string hostname = Hostname();
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) return absl::InternalError(absl::StrCat("fork failed: ", std::strerror(errno)));
  if (child == 0) RunChild(go, exec_status, plan, command);
  close(go[0]);
  close(exec_status[1]);
  g_child = child;
  // A child that died before reading its name must not take the launcher with it.
  signal(SIGPIPE, SIG_IGN);
  LaunchResult result;
  absl::StatusOr<std::string> path =
      ExpectedTracePath(plan.output_pattern, static_cast<uint32_t>(child), hostname);
  absl::StatusOr<bool> existed_before =
      path.ok() ? PrepareTraceDestination(plan, *path) : path.status();
  if (!existed_before.ok()) {
    close(go[1]);
    close(exec_status[0]);
    WaitChild(child);
    return existed_before.status();
  }
  result.trace_path = *path;
  result.trace_existed = *existed_before;
  WriteAll(go[1], *path);
  close(go[1]);
  result.exec_errno = ExecErrno(exec_status[0]);
  close(exec_status[0]);
  result.wait_status = WaitChild(child);
  return result;
}

}  // namespace warpscope
