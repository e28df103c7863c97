// The session's signals: the handlers of termination signals and of the capture signal (they
// only wake the watcher), the crash path (a fatal signal's handler waits for the watcher's
// flight-recorder dump, or for it to close the trace, then lets the program's own disposition
// run), and putting the program's handlers back.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <string>

#include "libinject/session_internal.h"

namespace warpscope::session_internal {
namespace {

constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP};
// These dump what the flight recorder holds, or close the trace with the signal as its end,
// before the program's own disposition runs.
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
// A program with its own handler for a fault may come back from it (a JVM's null checks, a
// garbage collector's barriers): without the flight recorder, those are left to it.
bool ProgramMayRecover(int sig, const struct sigaction& old) {
  const bool handler = (old.sa_flags & SA_SIGINFO) != 0 ||
                       (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN);
  return sig != SIGABRT && handler;
}

extern "C" void TerminationHandler(int sig) { SignalToPipe(static_cast<unsigned char>(sig)); }
extern "C" void CaptureSignalHandler(int) { SignalToPipe(kWakeCapture); }
extern "C" void CrashHandler(int sig, siginfo_t* info, void*) {
  if (g_session != nullptr) g_session->OnCrash(sig, info != nullptr && info->si_code > 0);
}

}  // namespace

void Session::InstallSignalHandlers() {
  struct sigaction sa = {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (config_.handle_signals) {
    for (int sig : kTerminationSignals) {
      struct sigaction old = {};
      if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      sa.sa_handler = &TerminationHandler;
      if (sigaction(sig, &sa, &old_actions_[sig]) == 0) installed_[sig] = true;
    }
  }
  if (config_.capture_range == CaptureRange::kSignal) {
    int sig = config_.capture_signal;
    sa.sa_handler = &CaptureSignalHandler;
    if (sigaction(sig, &sa, &old_actions_[sig]) == 0) installed_[sig] = true;
  }
  if (config_.handle_signals) {
    for (int sig : kCrashSignals) {
      struct sigaction old = {};
      if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      if (!flight_ && ProgramMayRecover(sig, old)) continue;
      // On the program's alternate stack where it has one (a stack overflow's SIGSEGV is
      // only delivered there), with siginfo to tell a fault from a sent signal.
      struct sigaction crash = {};
      sigemptyset(&crash.sa_mask);
      crash.sa_sigaction = &CrashHandler;
      crash.sa_flags = SA_SIGINFO | SA_ONSTACK;
      if (sigaction(sig, &crash, &old_actions_[sig]) == 0) installed_[sig] = true;
    }
  }
}

void Session::OnCrash(int sig, bool fault) {
  // Only atomics, read, write, poll, sigaction and raise: the program is in a fatal signal's
  // handler. The watcher dumps or closes the trace (session_watcher.cc); we wait for it at
  // most kQuickExitWaitMs, once per process (a crash signal raised while
  // handling another, e.g. abort() in the program's SIGSEGV handler, does not wait again).
  const int saved_errno = errno;
  if (!crashing_.exchange(true) && running() && watcher_running_.load() &&
      closed_pipe_[0] >= 0 && !pthread_equal(pthread_self(), watcher_pthread_)) {
    DrainClosedPipe();
    crash_signal_.store(sig);
    SignalToPipe(kWakeCrash);
    WaitWatcherWake(kQuickExitWaitMs);
  }
  // The program's own disposition, for this signal and the other crash signals.
  for (int crash : kCrashSignals) {
    if (installed_[crash]) {
      sigaction(crash, &old_actions_[crash], nullptr);
      installed_[crash] = false;
    }
  }
  errno = saved_errno;
  // A fault happens again when the instruction runs again, now with the program's handler
  // and the real siginfo; a sent signal is sent again (blocked while we run: it is delivered
  // on return).
  if (!fault) raise(sig);
}

void Session::RestoreSignalHandlers() {
  // Only where our handler is still in place: one the program installed after us stays.
  const void* ours[] = {reinterpret_cast<void*>(&TerminationHandler),
                        reinterpret_cast<void*>(&CaptureSignalHandler),
                        reinterpret_cast<void*>(&CrashHandler)};
  for (int sig = 1; sig < 65; ++sig) {
    if (!installed_[sig]) continue;
    installed_[sig] = false;
    struct sigaction now = {};
    if (sigaction(sig, nullptr, &now) != 0) continue;
    const void* handler = (now.sa_flags & SA_SIGINFO) != 0
                              ? reinterpret_cast<void*>(now.sa_sigaction)
                              : reinterpret_cast<void*>(now.sa_handler);
    if (std::find(std::begin(ours), std::end(ours), handler) != std::end(ours)) {
      sigaction(sig, &old_actions_[sig], nullptr);
    }
  }
}

void Session::HandleTermination(int sig) {
  Log(LogLevel::kInfo, "warpscope: signal " + std::to_string(sig) + ": closing the trace");
  Shutdown(EndReason::kSignal, static_cast<uint32_t>(sig));
  // Put the program's own disposition back and deliver the signal again: the default
  // action ends the process, an application handler runs as if we had not been there.
  if (installed_[sig]) {
    sigaction(sig, &old_actions_[sig], nullptr);
    installed_[sig] = false;
  }
  kill(getpid(), sig);
}

}  // namespace warpscope::session_internal
