// The Session class and what its files share: the one place its state is declared. Each job
// has its own file: session.cc (start, shutdown, fork, the CUPTI context and module
// callbacks), session_watcher.cc (the watcher thread and its wake pipe),
// session_signals.cc (signal handlers and the crash path), session_windows.cc (capture window
// edges, NVTX and profiler-API ranges, a file per window), session_control.cc (the control
// channel's commands) and session_dumps.cc (flight-recorder dumps and slow steps). Internal to
// libinject: session.h is the interface.
#ifndef WARPSCOPE_LIBINJECT_SESSION_INTERNAL_H_
#define WARPSCOPE_LIBINJECT_SESSION_INTERNAL_H_

#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>

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
#include "proto/writer/trace_writer.h"

namespace warpscope::session_internal {

// Bytes written into the self-pipe by signal handlers and callbacks.
inline constexpr unsigned char kWakeCapture = 100;
inline constexpr unsigned char kWakeDevice = 101;
inline constexpr unsigned char kWakeQuit = 102;
inline constexpr unsigned char kWakeQuickExit = 103;  // _exit is about to end the process
inline constexpr unsigned char kWakeSlowStep = 104;   // a slow step ended: dump the flight recorder
inline constexpr unsigned char kWakeCrash = 105;      // a fatal signal: dump, then let it end us
inline constexpr unsigned char kWakeFlush = 106;  // a window closed: its records to its own file
inline constexpr unsigned char kWakeOutOfMemory = 107;  // an allocation failed: dump or flush
// Out-of-memory dumps (and, without the flight recorder, flushes) come this far apart at least.
inline constexpr uint64_t kOutOfMemoryDumpEveryNs = 10'000'000'000;
// How long _exit waits for the trace to close (a stuck file system or a lock held by the
// thread that called _exit from a signal handler must not keep the process alive).
inline constexpr int kQuickExitWaitMs = 5000;

// The write end of the watcher's pipe (-1: none, or a forked child); session_watcher.cc.
extern std::atomic<int> g_pipe_write;
// Async-signal-safe: wakes the watcher with `byte` (a kWake* byte or a termination signal).
void SignalToPipe(unsigned char byte);

// Lifecycle steps at WARPSCOPE_LOG_LEVEL=debug, with the time since the session started:
// the order of context teardown, atexit and collector work is what exit-time problems hinge on.
extern uint64_t g_debug_base_ns;
void Debug(std::string_view what);

class Session final : public SessionListener, public SessionServices {
 public:
  void Start();
  // `signal`: the signal ending the process (kSignal, kCrash), written with the reason.
  void Shutdown(EndReason reason, uint32_t signal = 0);
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
  void OnOutOfMemory() override;  // session_dumps.cc

 private:
  // session.cc: start and its steps.
  void SetCollectorOptions();
  bool OpenTrace(uint64_t* now, std::string* error);
  bool InstallLifecycleHooks();  // true when the watcher's pipe exists
  void OpenFirstWindow(uint64_t now);
  void ReportCollectorFailure(std::string_view name, std::string_view message);
  // session_watcher.cc: the thread that acts on the pipe, deadlines, flushes and new devices.
  void StartWatcher(bool have_pipe);
  void WatcherLoop();
  int WatcherTimeoutMs(uint64_t next_flush);
  bool ReadWakes();                 // false: the watcher ends
  bool OnWake(unsigned char byte);  // false: the watcher ends
  void PassNewDevices();
  void DumpDueSlowSteps(uint64_t now);
  void FlushPeriodically(uint64_t now);
  bool WaitWatcherWake(int timeout_ms);
  void DrainClosedPipe();  // async-signal-safe: bytes of earlier waits
  // session_windows.cc: capture windows.
  // window_mu_ held. A begin edge's time becomes when recording began (after the kinds went on).
  void ApplyEdge(CaptureWindow::Edge edge);
  void StartWindowFile(uint32_t window);  // window_mu_ held
  void CheckWindowSize(uint64_t now);
  // session_control.cc: the control channel.
  void StartControl();
  ControlReply HandleControl(ControlCommand command);
  ControlStatus Status();
  // session_dumps.cc: the flight recorder's dumps and the slow steps that ask for them.
  // Flushes what CUPTI holds and writes the ring to the next dump file.
  // `live`: the memory blocks held, for the out-of-memory dump.
  bool Dump(CaptureTrigger trigger, bool flush_cupti, std::string* result,
            const TraceWriter::LiveMemory& live = {});
  // After a failed allocation (watcher thread): what CUPTI and the callbacks hold to the
  // writer; then with the flight recorder the out-of-memory dump (the ring and the live
  // blocks), else the file flushed.
  void AfterOutOfMemory();
  void OnStepPush(std::string_view name, std::string_view domain);
  void OnStepPop(std::string_view domain);
  // session_signals.cc: termination, capture and crash signals.
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
  NvtxRangeMatch capture_match_;        // the -p range; set before CUPTI sends NVTX events
  // Where the window's NVTX range sits (thread, depth), published by ApplyEdge so that a pop
  // can tell without the lock whether it may close the window.
  std::atomic<bool> nvtx_window_open_{false};
  std::atomic<uint64_t> nvtx_window_thread_{0};
  std::atomic<uint32_t> nvtx_window_depth_{0};
  HeaderRecord header_;             // names the files of later windows and dumps
  bool window_files_ = false;       // %w: one file per capture window
  bool flight_ = false;             // --flight-recorder: events go to the writer's ring
  uint32_t dumps_ = 0;              // watcher thread (and Shutdown, after it)
  uint64_t window_bytes_base_ = 0;  // writer.bytes_written when the window opened
  uint64_t last_attach_ns_ = 0;     // the last window's OnCaptureOpening took this long
  // The file being written, kept here: the writer's own path() changes on its thread some
  // time after StartNextFile returns. window_mu_.
  std::string trace_path_;
  uint64_t limited_windows_ = 0;  // windows --max-size closed (window_mu_)
  ControlChannel control_;
  // --slow-step: the step range, its rule, and when the dump of a slow step is due.
  NvtxRangeMatch step_match_;
  std::mutex step_mu_;
  SlowStepRule step_rule_{SlowStepOptions{}};
  std::string slow_step_note_;                 // step_mu_
  std::atomic<uint64_t> slow_step_due_ns_{0};  // 0 = none
  std::atomic<uint64_t> out_of_memory_ns_{0};  // the last out-of-memory wake; 0 = none
  std::atomic<bool> forked_child_{false};
  std::atomic<bool> crashing_{false};
  std::atomic<int> crash_signal_{0};  // the fatal signal being handled, for the watcher
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

// The process's one session (never freed: callbacks and handlers may still reach it at exit).
extern Session* g_session;

}  // namespace warpscope::session_internal

#endif  // WARPSCOPE_LIBINJECT_SESSION_INTERNAL_H_
