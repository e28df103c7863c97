// The injection session (see session.h).
//
// Lifecycle: InitializeInjection → ParseConfig → the kBeforeTrace collectors (cuptiSubscribe;
// step aside if taken) → open the trace → the kRequired collectors (activity: timestamp and
// buffer callbacks; the NVTX capture range) → the optional ones (PM, PC sampling) → window
// Begin (enable kinds if open) → watcher thread (signals, window deadlines, periodic flush,
// new devices) … atexit / SIGINT / SIGTERM → close the window, collectors' OnShutdown
// (activity's forced flush first), EndOfTrace, close the file. The collectors and their order
// are the registry's (collector_registry.cc).
#include "libinject/session.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collectors/activity/activity_controller.h"
#include "collectors/activity/cupti_activity.h"
#include "libinject/capture_window.h"
#include "libinject/collector_registry.h"
#include "libinject/collector_set.h"
#include "libinject/config.h"
#include "libinject/log.h"
#include "libinject/nvtx_range_match.h"
#include "libinject/trace_header.h"
#include "libinject/trace_name.h"
#include "proto/settings/settings.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

// Bytes written into the self-pipe by signal handlers and callbacks.
constexpr unsigned char kWakeCapture = 100;
constexpr unsigned char kWakeDevice = 101;
constexpr unsigned char kWakeQuit = 102;
constexpr unsigned char kWakeQuickExit = 103;  // _exit is about to end the process
// How long _exit waits for the trace to close (a stuck file system or a lock held by the
// thread that called _exit from a signal handler must not keep the process alive).
constexpr int kQuickExitWaitMs = 5000;
constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP};

std::atomic<int> g_pipe_write{-1};

void SignalToPipe(unsigned char byte) {
  int fd = g_pipe_write.load(std::memory_order_relaxed);
  if (fd < 0) return;
  int saved = errno;
  ssize_t ignored = ::write(fd, &byte, 1);
  (void)ignored;
  errno = saved;
}

extern "C" void TerminationHandler(int sig) { SignalToPipe(static_cast<unsigned char>(sig)); }
extern "C" void CaptureSignalHandler(int) { SignalToPipe(kWakeCapture); }

// Lifecycle steps at WARPSCOPE_LOG_LEVEL=debug, with the time since the session started:
// the order of context teardown, atexit and collector work is what exit-time problems hinge on.
uint64_t g_debug_base_ns = 0;
void Debug(std::string_view what) {
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "warpscope: [%+.3f ms] ",
                (TraceClockNs() - g_debug_base_ns) / 1e6);
  Log(LogLevel::kDebug, std::string(prefix) + std::string(what));
}

class Session final : public SessionListener, public SessionServices {
 public:
  void Start();
  void Shutdown(EndReason reason);
  void OnForkChild() override;
  void CloseBeforeQuickExit();  // async-signal-safe on the calling thread
  bool running() const {
    return running_.load() && !forked_child_.load() && !shut_down_.load() && getpid() == pid_;
  }

  // SessionListener: the CUPTI callbacks, sent by the callbacks collector.
  std::string_view name() const override { return "session"; }
  bool OnSessionStart(SessionServices&) override { return true; }  // Start() starts the session
  void OnContextCreated(void* ctx, uint32_t context_id, uint32_t device_id) override;
  void OnContextDestroying(void* ctx, uint32_t context_id) override;
  void OnModuleLoaded(void* ctx, uint64_t module_id, const void* cubin, size_t size) override;
  void OnProfilerApi(bool start) override;
  void OnNvtxPush(uint32_t os_tid, std::string_view name, std::string_view domain) override;
  void OnNvtxPop(uint32_t os_tid, std::string_view domain) override;

  // SessionServices
  TraceWriter& writer() override { return *writer_; }
  uint64_t NowNs() const override { return TraceClockNs(); }
  std::string GetConfig(std::string_view env_name) const override {
    const char* v = std::getenv(std::string(env_name).c_str());
    return v ? v : "";
  }
  void Report(Severity severity, std::string_view source, std::string_view message) override {
    Log(severity == Severity::kInfo ? LogLevel::kInfo : LogLevel::kWarning, message);
    if (writer_) writer_->WriteNotice(severity, source, message, TraceClockNs());
  }
  void ReportStartError(std::string_view message) override { Log(LogLevel::kError, message); }
  const CollectorOptions& options() const override { return collector_options_; }
  const ActivityOptions& activity_options() const override { return activity_options_; }
  SessionListener& callback_target() override { return *this; }

 private:
  void SetCollectorOptions();
  bool OpenTrace(uint64_t* now, std::string* error);
  bool InstallLifecycleHooks();  // true when the watcher's pipe exists
  void OpenFirstWindow(uint64_t now);
  void StartWatcher(bool have_pipe);
  void ReportCollectorFailure(std::string_view name, std::string_view message);
  void ApplyEdge(const CaptureWindow::Edge& edge);  // window_mu_ held
  void WatcherLoop();
  void HandleTermination(int sig);
  void InstallSignalHandlers();
  void RestoreSignalHandlers();

  Config config_;
  CollectorOptions collector_options_;
  ActivityOptions activity_options_;
  CollectorSet collectors_{Collectors(), [this](std::string_view name, std::string_view message) {
                             ReportCollectorFailure(name, message);
                           }};
  pid_t pid_ = 0;
  TraceWriter* writer_ = nullptr;  // never freed: callbacks may still hold it at exit
  std::mutex window_mu_;
  std::unique_ptr<CaptureWindow> window_;
  std::atomic<bool> started_{false};
  std::atomic<bool> running_{false};  // Start() completed: subscribed, trace open
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> nvtx_live_{false};  // window_->wants_nvtx(), readable without window_mu_
  NvtxRangeMatch capture_match_;         // the -p range; set before CUPTI sends NVTX events
  // Where the window's NVTX range sits (thread, depth), published by ApplyEdge so that a pop
  // can tell without the lock whether it may close the window.
  std::atomic<bool> nvtx_window_open_{false};
  std::atomic<uint64_t> nvtx_window_thread_{0};
  std::atomic<uint32_t> nvtx_window_depth_{0};
  std::atomic<bool> forked_child_{false};
  std::thread watcher_;
  std::thread::id watcher_id_;
  int pipe_[2] = {-1, -1};
  int closed_pipe_[2] = {-1, -1};  // the watcher writes one byte once a quick exit closed the trace
  std::atomic<bool> watcher_running_{false};
  pthread_t watcher_pthread_{};  // set by the watcher itself, before it reads the pipe
  struct sigaction old_actions_[65] = {};
  bool installed_[65] = {};
  std::mutex devices_mu_;
  std::set<uint32_t> pending_devices_, known_devices_;
};

Session* g_session = nullptr;

// Each thread's NVTX push depth in the capture range's domain, counted without a lock: only
// the push of the capture range's name, and the pop that may end the window's range, take
// the window's lock (NvtxRangeMatch).
thread_local uint32_t t_capture_depth = 0;

// `warpscope record` passes its launch time (CLOCK_MONOTONIC) so that --delay counts from
// program start: moves it into the trace clock by the time elapsed since.
uint64_t WindowStartNs(uint64_t now) {
  const char* launch = std::getenv(Setting(SettingId::kStartNs).variable.data());
  if (launch == nullptr) return now;
  uint64_t v = std::strtoull(launch, nullptr, 10);
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t mono = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  return v != 0 && v <= mono && mono - v < now ? now - (mono - v) : now;
}

void Session::ReportCollectorFailure(std::string_view name, std::string_view message) {
  Report(Severity::kError, name, message);
  if (writer_) {
    writer_->AddToCounter(StatFamilyMember(stats::kCollectorErrors, name), 1,
                          stats::kCollectorErrors.severity);
  }
}

void Session::Start() {
  if (started_.exchange(true)) return;
  pid_ = getpid();
  std::string error;
  if (!ParseConfig([](const char* n) { return std::getenv(n); }, &config_, &error)) {
    Log(LogLevel::kError, error);
    return;
  }
  SetLogLevel(config_.log_level, config_.quiet);
  SetTraceClock(config_.monotonic_clock);
  g_debug_base_ns = TraceClockNs();
  Debug("session starting");
  SetCollectorOptions();

  // 1. Subscribe first: if another CUPTI client owns the process, step aside before
  //    creating any file.
  if (!collectors_.Start(CollectorStage::kBeforeTrace, *this)) return;
  // 2. The trace file.
  uint64_t now = 0;
  if (!OpenTrace(&now, &error)) {
    Log(LogLevel::kError, error);
    collectors_.AbandonStart();
    return;
  }
  // 3. Activity (timestamp callback before any kind is enabled), then the optional
  //    collectors (PM sampling, PC sampling, ...).
  collectors_.Select([](const char* n) { return std::getenv(n); },
                     [](std::string_view line) { Log(LogLevel::kError, line); });
  activity_options_.kernels_always_on = collectors_.kernel_records_throughout();
  if (!collectors_.Start(CollectorStage::kRequired, *this)) {
    writer_->Close(EndReason::kWriteError, TraceClockNs());
    collectors_.AbandonStart();
    return;
  }
  collectors_.Start(CollectorStage::kOptional, *this);
  collectors_.FinishStart();

  // 4. Lifecycle plumbing, then the first window edge.
  const bool have_pipe = InstallLifecycleHooks();
  OpenFirstWindow(now);
  StartWatcher(have_pipe);
  running_.store(true);
  Log(LogLevel::kInfo, "warpscope: tracing to " + writer_->path());
}

void Session::SetCollectorOptions() {
  if (config_.capture_range == CaptureRange::kNvtx) {
    capture_match_ = NvtxRangeMatch(config_.nvtx_range_name, config_.nvtx_range_domain);
  }
  collector_options_.profiler_api_callbacks = config_.capture_range == CaptureRange::kProfilerApi;
  collector_options_.nvtx_callbacks = config_.capture_range == CaptureRange::kNvtx;
  collector_options_.nvtx_range_name = config_.nvtx_range_name;
  collector_options_.nvtx_range_domain = config_.nvtx_range_domain;
  ActivityOptions& ao = activity_options_;
  ao.kinds = config_.trace;
  ao.buffer_bytes = static_cast<size_t>(config_.buffer_size_mb) << 20;
  ao.device_buffer_bytes = static_cast<size_t>(config_.device_buffer_mb) << 20;
  ao.device_buffer_pool = config_.device_buffer_pool;
  ao.monotonic_clock = config_.monotonic_clock;
  ao.filter_trivial_api = config_.api_filter;
  if (config_.capture_range == CaptureRange::kNvtx) {
    ao.suppress_nvtx_name = config_.nvtx_range_name;
    ao.suppress_nvtx_domain = config_.nvtx_range_domain;
  }
}

// Writes the header and keeps the writer; *now is the header's time base.
bool Session::OpenTrace(uint64_t* now, std::string* error) {
  const HeaderRecord header = MakeTraceHeader(config_, pid_);
  *now = header.time_base_ns;
  std::unique_ptr<TraceWriter> writer =
      OpenProcessTrace(config_, header, [](const char* n) { return std::getenv(n); }, error);
  if (writer == nullptr) return false;
  writer_ = writer.release();
  return true;
}

bool Session::InstallLifecycleHooks() {
  // Handlers only write to the pipe and the watcher acts on it: without both, installing
  // them would swallow SIGINT/SIGTERM.
  const bool have_pipe = pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) == 0;
  if (pipe2(closed_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) closed_pipe_[0] = closed_pipe_[1] = -1;
  if (have_pipe) {
    g_pipe_write.store(pipe_[1]);
    InstallSignalHandlers();
  }
  pthread_atfork(nullptr, nullptr, [] {
    if (g_session) g_session->OnForkChild();
  });
  std::atexit([] {
    if (g_session) g_session->Shutdown(EndReason::kExit);
  });
  return have_pipe;
}

void Session::OpenFirstWindow(uint64_t now) {
  std::lock_guard<std::mutex> lock(window_mu_);
  window_ = std::make_unique<CaptureWindow>(CaptureWindowOptions::FromConfig(config_),
                                            WindowStartNs(now));
  ApplyEdge(window_->Begin());
  ApplyEdge(window_->Tick(now));
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

void Session::ApplyEdge(const CaptureWindow::Edge& edge) {
  // Every change of the window goes through here (under window_mu_): publish whether NVTX
  // events can still matter, so the NVTX callbacks skip the lock once they cannot.
  nvtx_live_.store(window_ != nullptr && window_->wants_nvtx(), std::memory_order_relaxed);
  if (window_ != nullptr) {
    nvtx_window_thread_.store(window_->nvtx_window_thread(), std::memory_order_relaxed);
    nvtx_window_depth_.store(window_->nvtx_window_depth(), std::memory_order_relaxed);
    nvtx_window_open_.store(window_->nvtx_window_open(), std::memory_order_release);
  }
  if (!edge) return;
  if (edge->begin) {
    collectors_.OnCaptureOpening(*edge, window_->nvtx_window_thread(), window_->nvtx_window_depth());
    writer_->Write(*edge);
    collectors_.OnCaptureStart(edge->window_id, edge->timestamp_ns);
    Log(LogLevel::kInfo, "warpscope: capture window " + std::to_string(edge->window_id) + " opened");
  } else {
    collectors_.OnCaptureClosing(*edge);
    writer_->Write(*edge);
    collectors_.OnCaptureStop(edge->window_id, edge->timestamp_ns);
    Log(LogLevel::kInfo, "warpscope: capture window " + std::to_string(edge->window_id) + " closed");
  }
}

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
}

void Session::RestoreSignalHandlers() {
  for (int sig = 1; sig < 65; ++sig) {
    if (installed_[sig]) {
      sigaction(sig, &old_actions_[sig], nullptr);
      installed_[sig] = false;
    }
  }
}

void Session::HandleTermination(int sig) {
  Log(LogLevel::kInfo, "warpscope: signal " + std::to_string(sig) + ": closing the trace");
  Shutdown(EndReason::kSignal);
  // Put the program's own disposition back and deliver the signal again: the default
  // action ends the process, an application handler runs as if we had not been there.
  if (installed_[sig]) {
    sigaction(sig, &old_actions_[sig], nullptr);
    installed_[sig] = false;
  }
  kill(getpid(), sig);
}

void Session::WatcherLoop() {
  uint64_t next_flush = TraceClockNs() + config_.flush_interval_ms * 1000000ull;
  while (!shut_down_.load()) {
    uint64_t now = TraceClockNs();
    uint64_t wake = next_flush;
    {
      std::lock_guard<std::mutex> lock(window_mu_);
      uint64_t deadline = window_->next_deadline_ns();
      if (deadline != 0 && deadline < wake) wake = deadline;
    }
    int timeout_ms = wake > now ? static_cast<int>((wake - now + 999999) / 1000000) : 0;
    pollfd pfd = {pipe_[0], POLLIN, 0};
    int r = poll(&pfd, pipe_[0] >= 0 ? 1 : 0, timeout_ms);
    if (shut_down_.load()) break;
    if (r > 0 && (pfd.revents & POLLIN)) {
      unsigned char bytes[64];
      ssize_t got = ::read(pipe_[0], bytes, sizeof bytes);
      for (ssize_t i = 0; i < got; ++i) {
        unsigned char b = bytes[i];
        if (b == kWakeQuit) return;
        if (b == kWakeQuickExit) {
          Debug("_exit: closing the trace");
          Shutdown(EndReason::kExit);
          const unsigned char done = 1;
          if (closed_pipe_[1] >= 0 && ::write(closed_pipe_[1], &done, 1) < 0) {
            // The caller's wait times out instead.
          }
          return;
        }
        if (b == kWakeCapture) {
          std::lock_guard<std::mutex> lock(window_mu_);
          ApplyEdge(window_->Signal(TraceClockNs()));
        } else if (b < 65 && b > 0) {
          HandleTermination(b);
          return;
        }
      }
    }
    {
      std::vector<uint32_t> devices;
      {
        std::lock_guard<std::mutex> lock(devices_mu_);
        devices.assign(pending_devices_.begin(), pending_devices_.end());
        pending_devices_.clear();
      }
      for (uint32_t d : devices) collectors_.OnNewDevice(d);
    }
    now = TraceClockNs();
    {
      std::lock_guard<std::mutex> lock(window_mu_);
      ApplyEdge(window_->Tick(now));
    }
    if (now >= next_flush) {
      collectors_.OnFlush();  // activity first: flush, counters
      next_flush = now + config_.flush_interval_ms * 1000000ull;
    }
  }
}

void Session::Shutdown(EndReason reason) {
  if (forked_child_.load() || getpid() != pid_ || writer_ == nullptr) return;
  if (shut_down_.exchange(true)) return;
  Debug("shutdown begins");
  try {
    // Stop the watcher first: a periodic flush still running after Close would lose its
    // records to the closed writer, where no counter reaches the file.
    if (watcher_.joinable()) {
      if (std::this_thread::get_id() == watcher_id_) {
        watcher_.detach();
      } else {
        SignalToPipe(kWakeQuit);
        watcher_.join();
      }
    }
    uint64_t now = TraceClockNs();
    {
      std::lock_guard<std::mutex> lock(window_mu_);
      if (window_ != nullptr) ApplyEdge(window_->Finish(now));
    }
    collectors_.OnShutdown();  // activity first: forced flush, counters
    writer_->Close(reason, TraceClockNs());
    // Every handler goes back (not only the one of the signal being handled): the watcher
    // is gone, so a handler of ours left in place would swallow a later SIGTERM.
    RestoreSignalHandlers();
    Debug("shutdown done");
    Log(LogLevel::kInfo, writer_->removed()
                             ? "warpscope: no GPU work or NVTX range recorded; removed " +
                                   writer_->path()
                             : "warpscope: trace written to " + writer_->path());
  } catch (...) {
    Log(LogLevel::kError, "warpscope: error while closing the trace");
  }
}

void Session::CloseBeforeQuickExit() {
  // Only atomics, getpid, pthread_self, write and poll here: _exit may run in a signal handler.
  if (!running() || !watcher_running_.load() || closed_pipe_[0] < 0) return;
  if (pthread_equal(pthread_self(), watcher_pthread_)) return;
  SignalToPipe(kWakeQuickExit);
  pollfd done = {closed_pipe_[0], POLLIN, 0};
  int waited_ms = 0;
  while (waited_ms < kQuickExitWaitMs) {
    const int r = poll(&done, 1, 100);
    if (r > 0) return;
    if (r < 0 && errno != EINTR) return;
    waited_ms += 100;
  }
}

void Session::OnForkChild() {
  // The child shares nothing with us: no threads, the file and the pipe are the parent's.
  forked_child_.store(true);
  g_pipe_write.store(-1);
  collectors_.OnForkChild();
  if (writer_) writer_->AbandonAfterFork();
  RestoreSignalHandlers();
}

void Session::OnContextCreated(void* ctx, uint32_t context_id, uint32_t device_id) {
  if (forked_child_.load() || shut_down_.load()) return;
  Debug("context " + std::to_string(context_id) + " created on device " +
        std::to_string(device_id));
  {
    std::lock_guard<std::mutex> lock(devices_mu_);
    if (known_devices_.insert(device_id).second) pending_devices_.insert(device_id);
  }
  SignalToPipe(kWakeDevice);
  collectors_.OnContextCreated(ctx, context_id, device_id);
}

void Session::OnContextDestroying(void* ctx, uint32_t context_id) {
  if (forked_child_.load() || shut_down_.load()) return;
  Debug("context " + std::to_string(context_id) + " being destroyed");
  collectors_.OnContextDestroying(ctx, context_id);
  Debug("context " + std::to_string(context_id) + ": collectors done");
  collectors_.AfterContextDestroying(ctx, context_id);  // activity: forced flush
}

void Session::OnModuleLoaded(void* ctx, uint64_t module_id, const void* cubin, size_t size) {
  if (forked_child_.load() || shut_down_.load()) return;
  collectors_.OnModuleLoaded(ctx, module_id, cubin, size);
}

void Session::OnProfilerApi(bool start) {
  if (forked_child_.load() || shut_down_.load()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  if (window_ == nullptr) return;  // CUPTI is subscribed before the window exists
  uint64_t now = TraceClockNs();
  ApplyEdge(start ? window_->ProfilerStart(now) : window_->ProfilerStop(now));
}

void Session::OnNvtxPush(uint32_t os_tid, std::string_view name, std::string_view domain) {
  if (!nvtx_live_.load(std::memory_order_relaxed)) return;
  const std::optional<uint32_t> depth = capture_match_.Push(t_capture_depth, name, domain);
  if (!depth || forked_child_.load() || shut_down_.load()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  if (!window_->wants_nvtx()) return;
  ApplyEdge(window_->NvtxPush(os_tid, *depth, TraceClockNs()));
}

void Session::OnNvtxPop(uint32_t os_tid, std::string_view domain) {
  if (!nvtx_live_.load(std::memory_order_relaxed)) return;
  const std::optional<uint32_t> depth = capture_match_.Pop(t_capture_depth, domain);
  // Only the pop of the range that opened the window, on its thread and at its depth, can
  // close it; the pushing thread published both before its push returned.
  if (!depth || !nvtx_window_open_.load(std::memory_order_acquire) ||
      nvtx_window_thread_.load(std::memory_order_relaxed) != os_tid ||
      nvtx_window_depth_.load(std::memory_order_relaxed) != *depth) {
    return;
  }
  if (forked_child_.load() || shut_down_.load()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  ApplyEdge(window_->NvtxPop(os_tid, *depth, TraceClockNs()));
}

}  // namespace

void StartSession() {
  // Set while this thread is inside Start(): CUPTI may initialise CUDA underneath, and the
  // driver then calls InitializeInjection on the same thread.
  static thread_local bool starting = false;
  static std::once_flag once;
  if (starting) return;
  starting = true;
  try {
    std::call_once(once, [] {
      g_session = new Session();
      g_session->Start();
    });
  } catch (...) {
    Log(LogLevel::kError, "warpscope: internal error while starting; running without profiling");
  }
  starting = false;
}

bool SessionRunning() { return g_session != nullptr && g_session->running(); }

void CloseBeforeQuickExit() {
  Session* session = g_session;
  if (session != nullptr) session->CloseBeforeQuickExit();
}

}  // namespace warpscope
