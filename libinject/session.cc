// The injection session's lifecycle (see session.h; the class is session_internal.h): start,
// shutdown, fork, and the CUPTI context and module callbacks.
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
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "libinject/session_internal.h"
#include "libinject/trace_name.h"
#include "proto/settings/settings.h"
#include "proto/writer/output_name.h"
#include "proto/writer/stats_table.h"

namespace warpscope {
namespace session_internal {

Session* g_session = nullptr;
uint64_t g_debug_base_ns = 0;

void Debug(std::string_view what) {
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "warpscope: [%+.3f ms] ",
                (TraceClockNs() - g_debug_base_ns) / 1e6);
  Log(LogLevel::kDebug, std::string(prefix) + std::string(what));
}

namespace {

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

}  // namespace

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
  collector_options_.live_blocks = flight_ && config_.trace.alloc;
  ActivityOptions& ao = activity_options_;
  ao.kinds = config_.trace;
  ao.buffer_bytes = static_cast<size_t>(config_.buffer_size_mb) << 20;
  ao.device_buffer_bytes = static_cast<size_t>(config_.device_buffer_mb) << 20;
  ao.device_buffer_pool = config_.device_buffer_pool;
  ao.monotonic_clock = config_.monotonic_clock;
  ao.filter_trivial_api = config_.api_filter;
  ao.live_blocks = collector_options_.live_blocks;
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

void Session::Shutdown(EndReason reason, uint32_t signal) {
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
    writer_->Close(reason, TraceClockNs(), signal);
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

}  // namespace session_internal

using session_internal::g_session;
using session_internal::Session;

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
