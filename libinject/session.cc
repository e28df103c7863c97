// The injection session (see session.h).
//
// Lifecycle: InitializeInjection → ParseConfig → cuptiSubscribe (step aside if taken) →
// open the trace → register timestamp/buffer callbacks → collectors' OnSessionStart →
// window Begin (enable kinds if open) → watcher thread (signals, window deadlines, periodic
// flush, device limits) … atexit / SIGINT / SIGTERM → close the window, forced flush,
// collectors' OnShutdown, EndOfTrace, close the file.
#include "libinject/session.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collectors/activity/cupti_activity.h"
#include "collectors/callbacks/cupti_callbacks.h"
#include "libinject/capture_window.h"
#include "libinject/collector_registry.h"
#include "collectors/collector_interface.h"
#include "libinject/config.h"
#include "libinject/log.h"
#include "proto/common/setting_error.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

#ifndef WARPSCOPE_VERSION
#define WARPSCOPE_VERSION "0.0.0"
#endif

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

std::string Hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::vector<std::string> CommandLine() {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) out.push_back(arg);
  return out;
}

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Gives processes other than the one `warpscope record` launched their own file when the
// pattern has no %p (LD_PRELOAD reaches every descendant).
std::string PatternForThisProcess(const std::string& pattern) {
  if (OutputPatternHasPid(pattern)) return pattern;
  const char* launcher = std::getenv("WARPSCOPE_LAUNCHER_PID");
  if (launcher == nullptr || std::atoi(launcher) == static_cast<int>(getppid())) return pattern;
  size_t slash = pattern.rfind('/');
  size_t dot = pattern.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return pattern + "_%p";
  return pattern.substr(0, dot) + "_%p" + pattern.substr(dot);
}

// Lifecycle steps at WARPSCOPE_LOG_LEVEL=debug, with the time since the session started:
// the order of context teardown, atexit and collector work is what exit-time problems hinge on.
uint64_t g_debug_base_ns = 0;
void Debug(std::string_view what) {
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "warpscope: [%+.3f ms] ",
                (TraceClockNs() - g_debug_base_ns) / 1e6);
  Log(LogLevel::kDebug, std::string(prefix) + std::string(what));
}

class Session final : public CallbackHandler, public SessionServices {
 public:
  void Start();
  void Shutdown(EndReason reason);
  void OnForkChild();
  void CloseBeforeQuickExit();  // async-signal-safe on the calling thread
  bool running() const {
    return running_.load() && !forked_child_.load() && !shut_down_.load() && getpid() == pid_;
  }

  // CallbackHandler
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

 private:
  void ApplyEdge(const CaptureWindow::Edge& edge);  // window_mu_ held
  void WatcherLoop();
  void HandleTermination(int sig);
  void InstallSignalHandlers();
  void RestoreSignalHandlers();
  template <typename Fn>
  void ForEachListener(Fn&& fn);

  Config config_;
  pid_t pid_ = 0;
  TraceWriter* writer_ = nullptr;  // never freed: callbacks may still hold it at exit
  std::mutex window_mu_;
  std::unique_ptr<CaptureWindow> window_;
  std::vector<std::unique_ptr<SessionListener>> listeners_;
  std::atomic<bool> started_{false};
  std::atomic<bool> running_{false};  // Start() completed: subscribed, trace open
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> nvtx_live_{false};  // window_->wants_nvtx(), readable without window_mu_
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
  // The NVTX capture range that opened the current window (written by the session, see
  // NvtxRangeBuilder::SuppressRange).
  uint64_t nvtx_open_ns_ = 0;
  uint32_t nvtx_open_tid_ = 0;
  uint32_t nvtx_open_depth_ = 0;
};

Session* g_session = nullptr;

template <typename Fn>
void Session::ForEachListener(Fn&& fn) {
  for (auto& l : listeners_) {
    if (!l) continue;
    try {
      fn(*l);
    } catch (...) {
      Report(Severity::kError, l->name(),
             "warpscope: collector '" + std::string(l->name()) + "' failed and was disabled");
      if (writer_) {
        writer_->AddToCounter(StatFamilyMember(stats::kCollectorErrors, l->name()), 1,
                              stats::kCollectorErrors.severity);
      }
      l.reset();
    }
  }
}

namespace {

// The collectors whose variable is set to a true value (or that have none); a
// value that is not a boolean is one line and leaves that collector off.
std::vector<const CollectorRegistration*> EnabledCollectors() {
  std::vector<const CollectorRegistration*> enabled;
  const std::span<const CollectorRegistration> regs = Collectors();
  for (size_t i = 0; i < regs.size(); ++i) {
    bool on = regs[i].enable_env == nullptr || regs[i].enable_env[0] == '\0';
    if (!on) {
      const char* v = std::getenv(regs[i].enable_env);
      std::string what;
      if (v && !ParseBool(v, &on, &what)) {
        Log(LogLevel::kError,
            "warpscope: " + SettingError{regs[i].enable_env, v, " is not " + what}.ForVariable() +
                "; " + regs[i].name + " stays off");
        on = false;
      }
    }
    if (on && regs[i].factory != nullptr) enabled.push_back(&regs[i]);
  }
  return enabled;
}

}  // namespace

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

  // 1. Subscribe first: if another CUPTI client owns the process, step aside before
  //    creating any file.
  CallbackOptions cb;
  cb.profiler_api = config_.capture_range == CaptureRange::kProfilerApi;
  cb.nvtx = config_.capture_range == CaptureRange::kNvtx;
  if (!CuptiCallbacks::Subscribe(this, cb, &error)) {
    Log(LogLevel::kError, error);
    return;
  }

  // 2. The trace file.
  HeaderRecord header;
  header.tool_version = WARPSCOPE_VERSION;
  header.pid = static_cast<uint32_t>(pid_);
  header.ppid = static_cast<uint32_t>(getppid());
  header.hostname = Hostname();
  header.command_line = CommandLine();
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK",
                           "GROUP_RANK", "SLURM_PROCID", "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK",
                           "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "CUDA_VISIBLE_DEVICES"}) {
    if (const char* v = std::getenv(name)) header.rank_env.emplace_back(name, v);
  }
  header.clock_domain = config_.monotonic_clock ? ClockDomain::kMonotonic : ClockDomain::kRealtime;
  uint64_t now = TraceClockNs();
  header.time_base_ns = now;
  header.unix_time_base_ns = RealtimeNs();
  header.config = config_.raw;
  // Collectors' own variables (WARPSCOPE_PM_*, WARPSCOPE_PC_*) are not in the session's
  // table: record every WARPSCOPE_* variable so the header says how the trace was taken.
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    std::string_view entry(*env);
    const size_t eq = entry.find('=');
    if (entry.rfind("WARPSCOPE_", 0) != 0 || eq == std::string_view::npos) continue;
    std::string name(entry.substr(0, eq));
    bool known = false;
    for (const auto& [k, v] : header.config) known = known || k == name;
    if (!known) header.config.emplace_back(std::move(name), std::string(entry.substr(eq + 1)));
  }
  header.config.emplace_back("effective.trace", TraceKindsString(config_.trace));
  header.config.emplace_back("effective.capture_range",
                             std::string(CaptureRangeName(config_.capture_range)));
  header.producer = "libwarpscope";
  header.cupti_version = CuptiCallbacks::CuptiVersion();

  TraceWriterOptions wo;
  std::string hostname = header.hostname;
  if (!ExpandOutputPattern(
          PatternForThisProcess(config_.output_pattern), header.pid, hostname,
          [](const char* n) { return std::getenv(n); },
          [](const std::string& p) {
            struct stat st;
            return ::stat(p.c_str(), &st) == 0;
          },
          &wo.path, &error)) {
    Log(LogLevel::kError, error + "; running without profiling");
    CuptiCallbacks::Unsubscribe();
    return;
  }
  wo.force_overwrite = config_.force_overwrite;
  wo.max_buffered_bytes = static_cast<size_t>(config_.writer_memory_mb) << 20;
  wo.flush_interval_ms = config_.flush_interval_ms;
  std::unique_ptr<TraceWriter> writer = TraceWriter::Open(wo, header, &error);
  if (!writer) {
    Log(LogLevel::kError, error.empty() ? "warpscope: cannot open the trace file" : error);
    CuptiCallbacks::Unsubscribe();
    return;
  }
  writer_ = writer.release();

  // 3. Activity (timestamp callback before any kind is enabled).
  ActivityOptions ao;
  ao.kinds = config_.trace;
  ao.buffer_bytes = static_cast<size_t>(config_.buffer_size_mb) << 20;
  ao.device_buffer_bytes = static_cast<size_t>(config_.device_buffer_mb) << 20;
  ao.device_buffer_pool = config_.device_buffer_pool;
  ao.monotonic_clock = config_.monotonic_clock;
  ao.filter_trivial_api = config_.api_filter;
  const std::vector<const CollectorRegistration*> collectors = EnabledCollectors();
  for (const CollectorRegistration* r : collectors) {
    ao.kernels_always_on |= r->kernel_records_throughout;
  }
  if (config_.capture_range == CaptureRange::kNvtx) {
    ao.suppress_nvtx_name = config_.nvtx_range_name;
    ao.suppress_nvtx_domain = config_.nvtx_range_domain;
  }
  if (!CuptiActivity::Init(ao, writer_, &error)) {
    Report(Severity::kError, "activity", error);
    writer_->Close(EndReason::kWriteError, TraceClockNs());
    CuptiCallbacks::Unsubscribe();
    return;
  }

  // 4. Optional collectors registered in the core (PM sampling, PC sampling, ...).
  for (const CollectorRegistration* r : collectors) {
    try {
      std::unique_ptr<SessionListener> l = r->factory();
      if (l && l->OnSessionStart(*this)) listeners_.push_back(std::move(l));
    } catch (...) {
      Report(Severity::kError, r->name,
             std::string("warpscope: collector '") + r->name + "' failed to start and was disabled");
      writer_->AddToCounter(StatFamilyMember(stats::kCollectorErrors, r->name), 1,
                            stats::kCollectorErrors.severity);
    }
  }

  if (!listeners_.empty()) CuptiCallbacks::EnableModuleCallbacks();

  // 5. Lifecycle plumbing, then the first window edge.
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
  uint64_t start_ns = now;
  if (const char* launch = std::getenv("WARPSCOPE_START_NS")) {
    // `warpscope record` passes its launch time (CLOCK_MONOTONIC) so that --delay counts
    // from program start: move it into the trace clock by the time elapsed since.
    uint64_t v = std::strtoull(launch, nullptr, 10);
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t mono = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
    if (v != 0 && v <= mono && mono - v < now) start_ns = now - (mono - v);
  }
  {
    std::lock_guard<std::mutex> lock(window_mu_);
    window_ = std::make_unique<CaptureWindow>(CaptureWindowOptions::FromConfig(config_), start_ns);
    ApplyEdge(window_->Begin());
    ApplyEdge(window_->Tick(now));
  }
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
    Report(Severity::kError, "session",
           "warpscope: cannot start the flush thread; the trace is written at exit only");
    writer_->AddToCounter(StatFamilyMember(stats::kCollectorErrors, "session"), 1,
                          stats::kCollectorErrors.severity);
  }
  running_.store(true);
  Log(LogLevel::kInfo, "warpscope: tracing to " + writer_->path());
}

void Session::ApplyEdge(const CaptureWindow::Edge& edge) {
  // Every change of the window goes through here (under window_mu_): publish whether NVTX
  // events can still matter, so the NVTX callbacks skip the lock once they cannot.
  nvtx_live_.store(window_ != nullptr && window_->wants_nvtx(), std::memory_order_relaxed);
  if (!edge) return;
  std::string error;
  if (edge->begin) {
    if (!CuptiActivity::SetEnabled(true, &error)) Report(Severity::kError, "activity", error);
    writer_->Write(*edge);
    if (edge->trigger == CaptureTrigger::kNvtx) {
      nvtx_open_ns_ = edge->timestamp_ns;
      nvtx_open_tid_ = static_cast<uint32_t>(window_->nvtx_window_thread());
      nvtx_open_depth_ = window_->nvtx_window_depth();
    }
    ForEachListener([&](SessionListener& l) { l.OnCaptureStart(edge->window_id, edge->timestamp_ns); });
    Log(LogLevel::kInfo, "warpscope: capture window " + std::to_string(edge->window_id) + " opened");
  } else {
    CuptiActivity::SetEnabled(false, &error);
    if (edge->trigger == CaptureTrigger::kNvtx ||
        (config_.capture_range == CaptureRange::kNvtx && nvtx_open_ns_ != 0)) {
      NvtxRangeRecord r;
      r.name_id = writer_->InternString(config_.nvtx_range_name);
      r.domain_id = config_.nvtx_range_domain.empty() ? 0 : writer_->InternString(config_.nvtx_range_domain);
      r.start_ns = nvtx_open_ns_;
      r.end_ns = edge->timestamp_ns;
      r.thread_id = writer_->InternThread(nvtx_open_tid_, nvtx_open_tid_);
      r.end_thread_id = r.thread_id;
      r.is_push_pop = true;
      r.depth = nvtx_open_depth_;
      writer_->Write(r);
      nvtx_open_ns_ = 0;
    }
    writer_->Write(*edge);
    ForEachListener([&](SessionListener& l) { l.OnCaptureStop(edge->window_id, edge->timestamp_ns); });
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
      for (uint32_t d : devices) QueryDeviceSharedMemoryLimits(d);
    }
    now = TraceClockNs();
    {
      std::lock_guard<std::mutex> lock(window_mu_);
      ApplyEdge(window_->Tick(now));
    }
    if (now >= next_flush) {
      CuptiActivity::Flush(false);
      CuptiActivity::PublishCounters();
      ForEachListener([](SessionListener& l) { l.OnFlush(); });
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
    CuptiActivity::Shutdown();  // forced flush, counters
    ForEachListener([](SessionListener& l) { l.OnShutdown(); });
    writer_->Close(reason, TraceClockNs());
    // Every handler goes back (not only the one of the signal being handled): the watcher
    // is gone, so a handler of ours left in place would swallow a later SIGTERM.
    RestoreSignalHandlers();
    Debug("shutdown done");
    Log(LogLevel::kInfo, "warpscope: trace written to " + writer_->path());
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
  CuptiActivity::AbandonAfterFork();
  CuptiCallbacks::AbandonAfterFork();
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
  ForEachListener([&](SessionListener& l) { l.OnContextCreated(ctx, context_id, device_id); });
}

void Session::OnContextDestroying(void* ctx, uint32_t context_id) {
  if (forked_child_.load() || shut_down_.load()) return;
  Debug("context " + std::to_string(context_id) + " being destroyed");
  ForEachListener([&](SessionListener& l) { l.OnContextDestroying(ctx, context_id); });
  Debug("context " + std::to_string(context_id) + ": collectors done");
  // cudart's teardown may destroy the context before our atexit handler runs: get the
  // context's records out while it still exists.
  CuptiActivity::Flush(true);
}

void Session::OnModuleLoaded(void* ctx, uint64_t module_id, const void* cubin, size_t size) {
  if (forked_child_.load() || shut_down_.load()) return;
  ForEachListener([&](SessionListener& l) { l.OnModuleLoaded(ctx, module_id, cubin, size); });
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
  if (forked_child_.load() || shut_down_.load()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  if (!window_->wants_nvtx()) return;
  ApplyEdge(window_->NvtxPush(os_tid, name, domain, TraceClockNs()));
}

void Session::OnNvtxPop(uint32_t os_tid, std::string_view domain) {
  if (!nvtx_live_.load(std::memory_order_relaxed)) return;
  if (forked_child_.load() || shut_down_.load()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  ApplyEdge(window_->NvtxPop(os_tid, domain, TraceClockNs()));
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
