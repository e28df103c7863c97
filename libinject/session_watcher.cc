// The session's watcher thread: it sleeps on the wake pipe (signal handlers and callbacks
// write a byte there) and the control socket, and acts where nothing else may: signals, a
// quick exit or a crash, window deadlines, slow-step dumps, new devices and the periodic
// flush. Also the waits of _exit and of a crash for what it does.
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "libinject/session_internal.h"
#include "proto/writer/stats_table.h"

namespace warpscope::session_internal {

std::atomic<int> g_pipe_write{-1};

void SignalToPipe(unsigned char byte) {
  int fd = g_pipe_write.load(std::memory_order_relaxed);
  if (fd < 0) return;
  int saved = errno;
  ssize_t ignored = ::write(fd, &byte, 1);
  (void)ignored;
  errno = saved;
}

void Session::StartWatcher(bool have_pipe) {
  watcher_running_.store(have_pipe);  // before the thread: it clears the flag when it ends
  try {
    watcher_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "ws-watcher");  // names show in gdb, top -H, ps -L
      watcher_pthread_ = pthread_self();
      WatcherLoop();
      watcher_running_.store(false);
    });
    watcher_id_ = watcher_.get_id();
  } catch (...) {
    watcher_running_.store(false);
    RestoreSignalHandlers();
    ReportCollectorFailure(
        "session", "warpscope: cannot start the flush thread; the trace is written at exit only");
  }
}

void Session::WatcherLoop() {
  uint64_t next_flush = TraceClockNs() + config_.flush_interval_ms * 1000000ull;
  while (!shut_down_.load()) {
    const int timeout_ms = WatcherTimeoutMs(next_flush);
    pollfd fds[2] = {{pipe_[0], POLLIN, 0}, {control_.fd(), POLLIN, 0}};
    const pollfd& pfd = fds[0];
    int r = poll(fds, control_.fd() >= 0 ? 2 : 1, timeout_ms);
    if (shut_down_.load()) break;
    if (r > 0 && (fds[1].revents & POLLIN)) {
      control_.Serve([this](ControlCommand command, const std::vector<std::string>&) {
        return HandleControl(command);
      });
    }
    if (r > 0 && (pfd.revents & POLLIN) && !ReadWakes()) return;
    PassNewDevices();
    const uint64_t now = TraceClockNs();
    {
      std::lock_guard<std::mutex> lock(window_mu_);
      ApplyEdge(window_->Tick(now));
    }
    DumpDueSlowSteps(now);
    if (now >= next_flush) {
      FlushPeriodically(now);
      next_flush = now + config_.flush_interval_ms * 1000000ull;
    }
  }
}

// Until the next flush, window deadline or slow-step dump, whichever comes first.
int Session::WatcherTimeoutMs(uint64_t next_flush) {
  uint64_t now = TraceClockNs();
  uint64_t wake = next_flush;
  {
    std::lock_guard<std::mutex> lock(window_mu_);
    uint64_t deadline = window_->next_deadline_ns();
    if (deadline != 0 && deadline < wake) wake = deadline;
  }
  const uint64_t step_due = slow_step_due_ns_.load();
  if (step_due != 0 && step_due < wake) wake = step_due;
  return wake > now ? static_cast<int>((wake - now + 999999) / 1000000) : 0;
}

bool Session::ReadWakes() {
  unsigned char bytes[64];
  ssize_t got = ::read(pipe_[0], bytes, sizeof bytes);
  for (ssize_t i = 0; i < got; ++i) {
    if (!OnWake(bytes[i])) return false;
  }
  return true;
}

bool Session::OnWake(unsigned char b) {
  if (b == kWakeQuit) return false;
  if (b == kWakeQuickExit) {
    Debug("_exit: closing the trace");
    Shutdown(EndReason::kExit);
    const unsigned char done = 1;
    if (closed_pipe_[1] >= 0 && ::write(closed_pipe_[1], &done, 1) < 0) {
      // The caller's wait times out instead.
    }
    return false;
  }
  if (b == kWakeCrash) {
    // The flight recorder dumps what it holds, without CUPTI (the crashed thread may hold
    // its locks). A trace is closed as at exit, with the signal as its end: CUPTI's buffers
    // are flushed, and if that hangs on a lock the crashed thread holds, its handler's wait
    // runs out and the trace stays as written so far, cut short.
    std::string result;
    if (flight_) {
      Dump(CaptureTrigger::kCrash, /*flush_cupti=*/false, &result);
    } else {
      Debug("fatal signal: closing the trace");
      Shutdown(EndReason::kCrash, static_cast<uint32_t>(crash_signal_.load()));
    }
    const unsigned char done = 1;
    if (closed_pipe_[1] >= 0 && ::write(closed_pipe_[1], &done, 1) < 0) {
      // The handler's wait times out instead.
    }
    return flight_;
  }
  if (b == kWakeSlowStep) return true;  // the due time is in slow_step_due_ns_
  if (b == kWakeOutOfMemory) {
    AfterOutOfMemory();
    return true;
  }
  if (b == kWakeCapture && flight_) {
    std::string result;
    Dump(CaptureTrigger::kSignal, /*flush_cupti=*/true, &result);
  } else if (b == kWakeFlush) {
    collectors_.OnFlush();
  } else if (b == kWakeCapture) {
    if (window_files_) collectors_.OnFlush();  // the last window's records to its file
    std::lock_guard<std::mutex> lock(window_mu_);
    ApplyEdge(window_->Signal(TraceClockNs()));
  } else if (b < 65 && b > 0) {
    HandleTermination(b);
    return false;
  }
  return true;
}

void Session::PassNewDevices() {
  std::vector<uint32_t> devices;
  {
    std::lock_guard<std::mutex> lock(devices_mu_);
    devices.assign(pending_devices_.begin(), pending_devices_.end());
    pending_devices_.clear();
  }
  for (uint32_t d : devices) collectors_.OnNewDevice(d);
}

void Session::DumpDueSlowSteps(uint64_t now) {
  const uint64_t due = slow_step_due_ns_.load();
  if (due != 0 && now >= due) {
    slow_step_due_ns_.store(0);
    std::string note, result;
    {
      std::lock_guard<std::mutex> lock(step_mu_);
      note.swap(slow_step_note_);
    }
    if (!note.empty()) writer_->WriteNotice(Severity::kInfo, "flight_recorder", note, now);
    Dump(CaptureTrigger::kSlowStep, /*flush_cupti=*/true, &result);
  }
}

void Session::FlushPeriodically(uint64_t now) {
  collectors_.OnFlush();  // activity first: flush, counters
  CheckWindowSize(now);
  if (control_.refused() != 0) {
    writer_->SetCounter(stats::kControlRefused.name, control_.refused(),
                        stats::kControlRefused.severity);
  }
}

void Session::DrainClosedPipe() {
  unsigned char bytes[16];
  while (closed_pipe_[0] >= 0 && ::read(closed_pipe_[0], bytes, sizeof bytes) > 0) {
  }
}

bool Session::WaitWatcherWake(int timeout_ms) {
  pollfd done = {closed_pipe_[0], POLLIN, 0};
  int waited_ms = 0;
  while (waited_ms < timeout_ms) {
    const int r = poll(&done, 1, 100);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
    waited_ms += 100;
  }
  return false;
}

void Session::CloseBeforeQuickExit() {
  // Only atomics, getpid, pthread_self, write and poll here: _exit may run in a signal handler.
  if (!running() || !watcher_running_.load() || closed_pipe_[0] < 0) return;
  if (pthread_equal(pthread_self(), watcher_pthread_)) return;
  DrainClosedPipe();
  SignalToPipe(kWakeQuickExit);
  WaitWatcherWake(kQuickExitWaitMs);
}

}  // namespace warpscope::session_internal
