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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
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
#include "libinject/control_channel.h"
#include "libinject/log.h"
#include "libinject/nvtx_range_match.h"
#include "libinject/slow_step.h"
#include "libinject/trace_header.h"
#include "libinject/trace_name.h"
#include "proto/settings/job_variables.h"
#include "proto/settings/settings.h"
#include "proto/writer/output_name.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

// Bytes written into the self-pipe by signal handlers and callbacks.
constexpr unsigned char kWakeCapture = 100;
constexpr unsigned char kWakeDevice = 101;
constexpr unsigned char kWakeQuit = 102;
constexpr unsigned char kWakeQuickExit = 103;  // _exit is about to end the process
constexpr unsigned char kWakeSlowStep = 104;   // a slow step ended: dump the flight recorder
constexpr unsigned char kWakeCrash = 105;      // a fatal signal: dump, then let it end us
constexpr unsigned char kWakeFlush = 106;      // a window closed: its records to its own file
// How long _exit waits for the trace to close (a stuck file system or a lock held by the
// thread that called _exit from a signal handler must not keep the process alive).
constexpr int kQuickExitWaitMs = 5000;
constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP};
// With the flight recorder, these dump what it holds before the program's own disposition runs.
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
// How long after a slow step ends its dump is written: the step's GPU work may still be
// running, and its records reach the writer at the next CUPTI flush.
constexpr uint64_t kSlowStepDumpDelayNs = 500'000'000;

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
extern "C" void CrashHandler(int sig, siginfo_t* info, void* context);

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
  // Async-signal-safe: a fatal signal's handler. `fault`: raised by the faulting instruction
  // (si_code > 0), which then runs again, rather than sent.
  void OnCrash(int sig, bool fault);
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
  // window_mu_ held. A begin edge's time becomes when recording began (after the kinds went on).
  void ApplyEdge(CaptureWindow::Edge edge);
  void StartWindowFile(uint32_t window);             // window_mu_ held
  void CheckWindowSize(uint64_t now);
  void StartControl();
  ControlReply HandleControl(ControlCommand command);
  ControlStatus Status();
  // Flight recorder: flushes what CUPTI holds and writes the ring to the next dump file.
  bool Dump(CaptureTrigger trigger, bool flush_cupti, std::string* result);
  void OnStepPush(std::string_view name, std::string_view domain);
  void OnStepPop(std::string_view domain);
  bool WaitWatcherWake(int timeout_ms);
  void DrainClosedPipe();  // async-signal-safe: bytes of earlier waits
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
  HeaderRecord header_;              // names the files of later windows and dumps
  bool window_files_ = false;        // %w: one file per capture window
  bool flight_ = false;              // --flight-recorder: events go to the writer's ring
  uint32_t dumps_ = 0;               // watcher thread (and Shutdown, after it)
  uint64_t window_bytes_base_ = 0;   // writer.bytes_written when the window opened
  uint64_t last_attach_ns_ = 0;      // the last window's OnCaptureOpening took this long
  // The file being written, kept here: the writer's own path() changes on its thread some
  // time after StartNextFile returns. window_mu_.
  std::string trace_path_;
  uint64_t limited_windows_ = 0;     // windows --max-size closed (window_mu_)
  ControlChannel control_;
  // --slow-step: the step range, its rule, and when the dump of a slow step is due.
  NvtxRangeMatch step_match_;
  std::mutex step_mu_;
  SlowStepRule step_rule_{SlowStepOptions{}};
  std::string slow_step_note_;                 // step_mu_
  std::atomic<uint64_t> slow_step_due_ns_{0};  // 0 = none
  std::atomic<bool> forked_child_{false};
  std::atomic<bool> crashing_{false};
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
// The same for the flight recorder's --slow-step range, and this thread's open step: its depth
// + 1 (0 = none) and when it was pushed.
thread_local uint32_t t_step_depth = 0;
thread_local uint32_t t_step_open = 0;
thread_local uint64_t t_step_start_ns = 0;

extern "C" void CrashHandler(int sig, siginfo_t* info, void*) {
  if (g_session != nullptr) g_session->OnCrash(sig, info != nullptr && info->si_code > 0);
}

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
  if (have_pipe) StartControl();
  StartWatcher(have_pipe);
  running_.store(true);
  Log(LogLevel::kInfo, flight_ ? "warpscope: flight recorder on; dumps go to " + writer_->path()
                               : "warpscope: tracing to " + writer_->path());
}

void Session::SetCollectorOptions() {
  if (config_.capture_range == CaptureRange::kNvtx) {
    capture_match_ = NvtxRangeMatch(config_.nvtx_range_name, config_.nvtx_range_domain);
  }
  flight_ = config_.flight_recorder_s > 0;
  if (flight_ && !config_.slow_step_name.empty()) {
    step_match_ = NvtxRangeMatch(config_.slow_step_name, config_.slow_step_domain);
    step_rule_ = SlowStepRule(SlowStepOptions{
        .threshold_ns = static_cast<uint64_t>(config_.slow_step_threshold_s * 1e9),
        .factor = config_.slow_step_factor});
  }
  collector_options_.profiler_api_callbacks = config_.capture_range == CaptureRange::kProfilerApi;
  collector_options_.nvtx_callbacks =
      config_.capture_range == CaptureRange::kNvtx || !step_match_.empty();
  collector_options_.nvtx_range_name = config_.nvtx_range_name;
  collector_options_.nvtx_range_domain = config_.nvtx_range_domain;
  ActivityOptions& ao = activity_options_;
  ao.kinds = config_.trace;
  ao.buffer_bytes = static_cast<size_t>(config_.buffer_size_mb) << 20;
  ao.device_buffer_bytes = static_cast<size_t>(config_.device_buffer_mb) << 20;
  ao.device_buffer_pool = config_.device_buffer_pool;
  ao.monotonic_clock = config_.monotonic_clock;
  ao.filter_trivial_api = config_.api_filter;
  // No window at start: let CUPTI attach now rather than when the first window opens.
  ao.attach_early = config_.attach_early && !flight_ &&
                    (config_.capture_range != CaptureRange::kNone || config_.delay_s > 0);
  if (config_.capture_range == CaptureRange::kNvtx) {
    ao.suppress_nvtx_name = config_.nvtx_range_name;
    ao.suppress_nvtx_domain = config_.nvtx_range_domain;
  }
}

// Writes the header and keeps the writer; *now is the header's time base.
bool Session::OpenTrace(uint64_t* now, std::string* error) {
  header_ = MakeTraceHeader(config_, pid_);
  *now = header_.time_base_ns;
  std::unique_ptr<TraceWriter> writer =
      OpenProcessTrace(config_, header_, [](const char* n) { return std::getenv(n); }, error);
  if (writer == nullptr) return false;
  writer_ = writer.release();
  trace_path_ = writer_->path();
  window_files_ =
      !flight_ && OutputPatternHasWindow(
                      ChooseProcessPattern(config_, header_.ppid,
                                           [](const char* n) { return std::getenv(n); })
                          .pattern);
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
  CaptureWindowOptions options = CaptureWindowOptions::FromConfig(config_);
  // The flight recorder records from the start (after --delay) to the end; the capture
  // signal asks it for a dump instead of toggling a window.
  if (flight_) options.range = CaptureRange::kNone;
  window_ = std::make_unique<CaptureWindow>(options, WindowStartNs(now));
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

void Session::ApplyEdge(CaptureWindow::Edge edge) {
  // Every change of the window goes through here (under window_mu_): publish whether NVTX
  // events can still matter, so the NVTX callbacks skip the lock once they cannot.
  nvtx_live_.store(window_ != nullptr && window_->wants_nvtx(), std::memory_order_relaxed);
  if (window_ != nullptr) {
    nvtx_window_thread_.store(window_->nvtx_window_thread(), std::memory_order_relaxed);
    nvtx_window_depth_.store(window_->nvtx_window_depth(), std::memory_order_relaxed);
    nvtx_window_open_.store(window_->nvtx_window_open(), std::memory_order_release);
  }
  if (!edge) return;
  // A flight-recorder dump has window edges of its own (the events it holds); the whole-run
  // window's would only confuse them.
  const bool write_edge = !flight_;
  if (edge->begin) {
    if (window_files_ && edge->window_id > 1) StartWindowFile(edge->window_id);
    window_bytes_base_ = writer_->Counter("writer.bytes_written");
    const uint64_t attach_start = TraceClockNs();
    collectors_.OnCaptureOpening(*edge, window_->nvtx_window_thread(), window_->nvtx_window_depth());
    // Recording begins once the activity kinds are on, which can take CUPTI seconds the first
    // time in a process that loaded many modules: the edge says when it did.
    const uint64_t attached = TraceClockNs();
    last_attach_ns_ = attached - attach_start;
    edge->timestamp_ns = std::max(edge->timestamp_ns, attached);
    if (write_edge) writer_->Write(*edge);
    collectors_.OnCaptureStart(edge->window_id, edge->timestamp_ns);
    Log(LogLevel::kInfo, "warpscope: capture window " + std::to_string(edge->window_id) + " opened");
  } else {
    collectors_.OnCaptureClosing(*edge);
    if (write_edge) writer_->Write(*edge);
    // With a file per window, the window's records still in CUPTI's buffers should reach its
    // file before the next window begins another: the watcher flushes them now (this may run
    // in a CUPTI callback, where flushing is not allowed).
    if (window_files_) SignalToPipe(kWakeFlush);
    if (edge->trigger == CaptureTrigger::kLimit) {
      Report(Severity::kInfo, "session",
             window_->limited() ? "warpscope: --max-duration reached: capture window " +
                                      std::to_string(edge->window_id) +
                                      " closed and no other opens"
                                : "warpscope: --max-size reached: capture window " +
                                      std::to_string(edge->window_id) + " closed");
      writer_->SetCounter(stats::kCaptureLimitedWindows.name, ++limited_windows_,
                          stats::kCaptureLimitedWindows.severity);
    }
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
  if (flight_ && config_.handle_signals) {
    for (int sig : kCrashSignals) {
      struct sigaction old = {};
      if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
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
  // handler. The watcher dumps (no CUPTI call: the crashed thread may hold CUPTI's locks); we
  // wait for it at most kQuickExitWaitMs, once per process (a crash signal raised while
  // handling another, e.g. abort() in the program's SIGSEGV handler, does not wait again).
  const int saved_errno = errno;
  if (!crashing_.exchange(true) && running() && watcher_running_.load() &&
      closed_pipe_[0] >= 0 && !pthread_equal(pthread_self(), watcher_pthread_)) {
    DrainClosedPipe();
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

void Session::StartWindowFile(uint32_t window) {
  std::string path, error;
  if (!ProcessTraceName(config_, header_, [](const char* n) { return std::getenv(n); }, window,
                        &path, &error) ||
      !writer_->StartNextFile(path, TraceClockNs(), &error)) {
    Report(Severity::kError, "session",
           error + "; capture window " + std::to_string(window) + " goes on in " + trace_path_);
    return;
  }
  trace_path_ = path;
  Log(LogLevel::kInfo, "warpscope: capture window " + std::to_string(window) + " goes to " + path);
}

void Session::CheckWindowSize(uint64_t now) {
  if (config_.max_size_bytes == 0) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  if (!window_->is_open()) return;
  const uint64_t written = writer_->Counter("writer.bytes_written");
  // With a file per window the counter starts again at 0 once the writer thread has switched
  // to the window's file (after ApplyEdge read the base): from then on it counts the window.
  if (written < window_bytes_base_) window_bytes_base_ = 0;
  const uint64_t bytes = written - window_bytes_base_;
  if (bytes >= config_.max_size_bytes) ApplyEdge(window_->SizeLimit(now));
}

void Session::StartControl() {
  if (!config_.control) return;
  std::string error;
  if (!control_.Listen(pid_, &error)) Report(Severity::kInfo, "session", error);
}

ControlStatus Session::Status() {
  ControlStatus s;
  s.pid = pid_;
  auto first_number = [](const auto& variables) -> std::optional<int64_t> {
    for (std::string_view v : variables) {
      const char* value = std::getenv(std::string(v).c_str());
      if (value == nullptr || value[0] == '\0') continue;
      char* end = nullptr;
      const long long n = std::strtoll(value, &end, 10);
      if (end != value && *end == '\0') return n;
      return std::nullopt;
    }
    return std::nullopt;
  };
  s.rank = first_number(kRankVariables);
  s.local_rank = first_number(kLocalRankVariables);
  s.world_size = first_number(kWorldSizeVariables);
  s.host = header_.hostname;
  s.job_id = header_.job_id;
  {
    std::lock_guard<std::mutex> lock(window_mu_);
    s.trace_path = trace_path_;
    s.window_open = window_->is_open();
    s.windows = window_->windows_opened();
  }
  s.mode = flight_ ? "flight-recorder" : std::string(CaptureRangeName(config_.capture_range));
  s.flight_recorder = flight_;
  return s;
}

ControlReply Session::HandleControl(ControlCommand command) {
  const uint64_t now = TraceClockNs();
  switch (command) {
    case ControlCommand::kStatus:
      return {ControlResult::kOk, FormatControlStatus(Status())};
    case ControlCommand::kDump: {
      if (!flight_) {
        return {ControlResult::kError,
                "no flight recorder in this process (record with --flight-recorder SECONDS)"};
      }
      std::string result;
      const bool ok = Dump(CaptureTrigger::kControl, /*flush_cupti=*/true, &result);
      return {ok ? ControlResult::kOk : ControlResult::kError, result};
    }
    case ControlCommand::kStart:
    case ControlCommand::kStop: {
      if (flight_) {
        return {ControlResult::kError,
                "the flight recorder records all the time; ask it for a dump (warpscope dump)"};
      }
      const bool start = command == ControlCommand::kStart;
      // With a file per window, the records of the window that closed last go to its own
      // file before the next one begins (at least those CUPTI has completed).
      if (start && window_files_) collectors_.OnFlush();
      std::lock_guard<std::mutex> lock(window_mu_);
      CaptureWindow::Edge edge = window_->Control(start, now);
      if (start && edge && !edge->begin) {
        ApplyEdge(edge);  // a duration or limit that ran out closed the window first
        edge = window_->Control(start, now);
      }
      if (!edge || edge->begin != start) {
        ApplyEdge(edge);
        if (start) {
          return {ControlResult::kError,
                  window_->is_open()
                      ? "capture window " + std::to_string(window_->windows_opened()) +
                            " is open already"
                      : "no capture window can open any more (" +
                            std::string(window_->limited() ? "--max-duration reached"
                                                           : "--capture-range-end allows " +
                                                                 std::to_string(window_->windows_opened())) +
                            ")"};
        }
        return {ControlResult::kError, "no capture window is open"};
      }
      ApplyEdge(edge);
      char attach[64] = "";
      if (start) std::snprintf(attach, sizeof attach, "; recording began after %.1f ms",
                               static_cast<double>(last_attach_ns_) / 1e6);
      return {ControlResult::kOk, "capture window " + std::to_string(edge->window_id) +
                                      (start ? " opened" : " closed") + " (" + trace_path_ + ")" +
                                      attach};
    }
  }
  return {ControlResult::kError, "unknown command"};
}

bool Session::Dump(CaptureTrigger trigger, bool flush_cupti, std::string* result) {
  if (flush_cupti) collectors_.OnFlush();  // activity first: CUPTI's buffers into the ring
  uint32_t id = dumps_ + 1;
  std::string path, error;
  auto name = [&] {
    return ProcessTraceName(config_, header_, [](const char* n) { return std::getenv(n); }, id,
                            &path, &error);
  };
  bool named = name();
  // Without -f, a name an earlier run left is skipped for the next number (up to 1000 on).
  struct stat st;
  for (int skipped = 0; named && !config_.force_overwrite && skipped < 1000 &&
                        ::lstat(path.c_str(), &st) == 0;
       ++skipped) {
    ++id;
    named = name();
  }
  if (!named || !writer_->DumpRing(path, trigger, id, TraceClockNs(), &error)) {
    *result = error;
    Log(LogLevel::kError, error);
    return false;
  }
  dumps_ = id;
  *result = "flight recorder dump " + std::to_string(id) + " written to " + path;
  Log(LogLevel::kWarning, "warpscope: " + *result);
  return true;
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
    const uint64_t step_due = slow_step_due_ns_.load();
    if (step_due != 0 && step_due < wake) wake = step_due;
    int timeout_ms = wake > now ? static_cast<int>((wake - now + 999999) / 1000000) : 0;
    pollfd fds[2] = {{pipe_[0], POLLIN, 0}, {control_.fd(), POLLIN, 0}};
    const pollfd& pfd = fds[0];
    int r = poll(fds, control_.fd() >= 0 ? 2 : 1, timeout_ms);
    if (shut_down_.load()) break;
    if (r > 0 && (fds[1].revents & POLLIN)) {
      control_.Serve([this](ControlCommand command, const std::vector<std::string>&) {
        return HandleControl(command);
      });
    }
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
        if (b == kWakeCrash) {
          std::string result;
          Dump(CaptureTrigger::kCrash, /*flush_cupti=*/false, &result);
          const unsigned char done = 1;
          if (closed_pipe_[1] >= 0 && ::write(closed_pipe_[1], &done, 1) < 0) {
            // The handler's wait times out instead.
          }
          continue;
        }
        if (b == kWakeSlowStep) continue;  // the due time is in slow_step_due_ns_
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
    if (now >= next_flush) {
      collectors_.OnFlush();  // activity first: flush, counters
      CheckWindowSize(now);
      if (control_.refused() != 0) {
        writer_->SetCounter(stats::kControlRefused.name, control_.refused(),
                            stats::kControlRefused.severity);
      }
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
    control_.Close();
    if (flight_) {
      std::string result;
      Dump(reason == EndReason::kSignal ? CaptureTrigger::kSignal : CaptureTrigger::kProcess,
           /*flush_cupti=*/false, &result);
    }
    writer_->Close(reason, TraceClockNs());
    // Every handler goes back (not only the one of the signal being handled): the watcher
    // is gone, so a handler of ours left in place would swallow a later SIGTERM.
    RestoreSignalHandlers();
    Debug("shutdown done");
    if (!flight_) Log(LogLevel::kInfo, writer_->removed()
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
  DrainClosedPipe();
  SignalToPipe(kWakeQuickExit);
  WaitWatcherWake(kQuickExitWaitMs);
}

void Session::OnForkChild() {
  // The child shares nothing with us: no threads, the file and the pipe are the parent's.
  forked_child_.store(true);
  g_pipe_write.store(-1);
  control_.CloseAfterFork();
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

void Session::OnStepPush(std::string_view name, std::string_view domain) {
  const std::optional<uint32_t> depth = step_match_.Push(t_step_depth, name, domain);
  if (!depth || t_step_open != 0) return;  // a step inside a step is part of it
  t_step_open = *depth + 1;
  t_step_start_ns = TraceClockNs();
}

void Session::OnStepPop(std::string_view domain) {
  const std::optional<uint32_t> depth = step_match_.Pop(t_step_depth, domain);
  if (!depth || t_step_open != *depth + 1) return;
  t_step_open = 0;
  const uint64_t now = TraceClockNs();
  const uint64_t took = now > t_step_start_ns ? now - t_step_start_ns : 0;
  SlowStepRule::Verdict verdict;
  {
    std::lock_guard<std::mutex> lock(step_mu_);
    verdict = step_rule_.Add(took);
    if (!verdict.slow || forked_child_.load() || shut_down_.load()) return;
    char note[256];
    std::snprintf(note, sizeof note,
                  "slow step: %s #%llu took %.3f ms (threshold %.3f ms, %.1fx the median %.3f ms "
                  "of the steps before it)",
                  config_.slow_step_name.c_str(), static_cast<unsigned long long>(step_rule_.steps()),
                  took / 1e6, config_.slow_step_threshold_s * 1e3,
                  verdict.median_ns ? static_cast<double>(took) / verdict.median_ns : 0.0,
                  verdict.median_ns / 1e6);
    // Slow steps that share one dump each leave their line.
    if (!slow_step_note_.empty()) slow_step_note_ += "; ";
    slow_step_note_ += note;
  }
  // One dump for slow steps that come close together: the first sets the time.
  uint64_t none = 0;
  if (slow_step_due_ns_.compare_exchange_strong(none, now + kSlowStepDumpDelayNs)) {
    SignalToPipe(kWakeSlowStep);
  }
}

void Session::OnNvtxPush(uint32_t os_tid, std::string_view name, std::string_view domain) {
  if (!step_match_.empty()) OnStepPush(name, domain);
  if (!nvtx_live_.load(std::memory_order_relaxed)) return;
  const std::optional<uint32_t> depth = capture_match_.Push(t_capture_depth, name, domain);
  if (!depth || forked_child_.load() || shut_down_.load()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  if (!window_->wants_nvtx()) return;
  ApplyEdge(window_->NvtxPush(os_tid, *depth, TraceClockNs()));
}

void Session::OnNvtxPop(uint32_t os_tid, std::string_view domain) {
  if (!step_match_.empty()) OnStepPop(domain);
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
