// The API calls collector (see api_calls_collector.h).
//
// Lifecycle: session start → the stack settings and the trace kinds → the subscriber enables
// the callbacks of every launch function, of every other runtime function but the trivial
// queries (trace kind `runtime`), of every synchronize function of both APIs (trace kind
// `sync`), and of the syncs and copies whose stack is wanted, and sends their calls here; when
// every launch callback is on, the activity collector leaves runtime launch calls out of its
// records, when every runtime callback is on, it records no RUNTIME activity at all, and when
// every synchronize callback is on, no SYNCHRONIZATION activity → capture windows switch logging on and off → each
// call: ApiCallRecorder::OnEnter/OnExit on the calling thread → at each flush (and when a
// window closes, before the next window's file) the log is drained into the trace → shutdown:
// the last drain, counters, a notice when Python was there but could not be read.
#include "collectors/api_calls/api_calls_collector.h"

#include <atomic>
#include <string>

#include "collectors/activity/activity_controller.h"
#include "collectors/activity/cupti_activity.h"
#include "collectors/api_calls/api_call_recorder.h"
#include "collectors/callbacks/cupti_callbacks.h"
#include "collectors/common/record_sink.h"
#include "collectors/memory/live_blocks.h"
#include "collectors/stacks/stack_config.h"
#include "collectors/stacks/stack_table.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

// The session, for the out-of-memory callback (a plain function: it runs inside CUDA calls).
std::atomic<SessionServices*> g_services{nullptr};

void OutOfMemory() {
  if (SessionServices* s = g_services.load(std::memory_order_acquire)) s->OnOutOfMemory();
}

class WriterStackSink final : public StackSink {
 public:
  explicit WriterStackSink(TraceWriter& writer) : writer_(writer) {}
  uint64_t InternString(std::string_view value) override { return writer_.InternString(value); }
  void Write(const StackFrameRecord& frame) override { writer_.Write(frame); }
  void Write(const CallStackRecord& stack) override { writer_.Write(stack); }

 private:
  TraceWriter& writer_;
};

// Turns on the callbacks of the calls the log writes in place of CUPTI's activity records:
// the launch functions first, on their own (only when every one of them is on may the log
// write launch calls and the activity records leave them out; otherwise the activity records
// keep them, runtime API with -t runtime, driver API with -t driver, and the log writes none,
// so that no launch is written twice); then every other runtime function but the trivial
// queries; then the synchronize functions of both APIs, whose SYNCHRONIZATION records cost a
// data-parallel job's steps more than their callbacks do (docs/record.md). A set whose
// callbacks cannot all be enabled is left to CUPTI's activity records, at their higher cost
// per call.
void EnableCallsFromCallbacks(ApiCallObserver* observer, SessionServices& services,
                              ApiCallRecorderOptions* options) {
  struct CallSet {
    bool* on;
    CuptiCallbacks::ApiSelector wants;
    const char* refused;
  };
  const bool filter = options->filter_trivial;
  const CallSet sets[] = {
      {&options->launch_calls,
       [](bool, uint32_t, std::string_view f) {
         return StackCallKindOf(f) == StackCallKind::kLaunch;
       },
       "warpscope: a kernel launch function's callback could not be enabled; launch calls are "
       "recorded only as CUPTI's runtime API records (-t runtime) and driver API records (-t "
       "driver)"},
      {&options->runtime_calls,
       [filter](bool runtime, uint32_t id, std::string_view) {
         return ApiCallRecorder::IsRuntimeCallWritten(runtime, id, filter);
       },
       "warpscope: a runtime API function's callback could not be enabled; runtime API calls "
       "are recorded as CUPTI's activity records instead"},
      {&options->sync_calls,
       [](bool, uint32_t, std::string_view f) {
         return StackCallKindOf(f) == StackCallKind::kSync;
       },
       "warpscope: a synchronize function's callback could not be enabled; synchronizations "
       "are recorded as CUPTI's activity records instead"},
  };
  for (const CallSet& set : sets) {
    if (*set.on && !CuptiCallbacks::SetApiCallObserver(observer, set.wants)) {
      *set.on = false;
      services.Report(Severity::kInfo, "api_calls", set.refused);
    }
  }
}

class ApiCallsCollector final : public SessionListener, public ApiCallObserver {
 public:
  std::string_view name() const override { return "api_calls"; }

  bool OnSessionStart(SessionServices& services) override {
    services_ = &services;
    ApiCallRecorderOptions options;
    const TraceKinds& kinds = services.activity_options().kinds;
    options.launch_calls = kinds.launch;
    options.driver_activity = kinds.driver;
    SettingError refused;
    if (!LoadStackConfig([&](std::string_view v) { return services.GetConfig(v); }, &options.stacks,
                         &refused)) {
      services.Report(Severity::kError, "stacks",
                      "warpscope: " + refused.ForVariable() + "; no call stacks are recorded");
      options.stacks.syncs = options.stacks.copies = options.stacks.launches = false;
    }
    options.runtime_calls = kinds.runtime;
    options.sync_calls = kinds.sync;
    options.alloc_calls = kinds.alloc;
    options.stacks.allocs = options.stacks.allocs && kinds.alloc;
    if (services.options().live_blocks) options.live_blocks = &ProcessLiveBlocks();
    options.on_out_of_memory = &OutOfMemory;
    g_services.store(&services, std::memory_order_release);
    options.filter_trivial = services.activity_options().filter_trivial_api;
    if (!options.launch_calls && !options.runtime_calls && !options.sync_calls &&
        !options.alloc_calls && !options.stacks.any()) {
      return true;
    }
    EnableCallsFromCallbacks(this, services, &options);
    options.runtime_activity = kinds.runtime && !options.runtime_calls;
    SetLaunchCallsFromCallbacks(options.launch_calls);
    SetRuntimeCallsFromCallbacks(options.runtime_calls);
    SetSyncCallsFromCallbacks(options.sync_calls);
    TraceWriter& writer = services.writer();
    if (options.stacks.any()) {
      stack_sink_ = std::make_unique<WriterStackSink>(writer);
      stacks_ = std::make_unique<StackTable>(stack_sink_.get(), options.stacks.depth,
                                             /*timed=*/true);
    }
    recorder_ = std::make_unique<ApiCallRecorder>(
        options, stacks_.get(), &TraceClockNs,
        [&writer](std::string_view name) { return writer.InternString(name); });
    ApiCallRecorder* recorder = recorder_.get();
    live_.store(recorder, std::memory_order_release);
    // Then the syncs' and copies' callbacks, whose stacks are wanted.
    CuptiCallbacks::SetApiCallObserver(
        this, [recorder](bool runtime, uint32_t id, std::string_view function) {
          return recorder->Wants(runtime, id, function);
        });
    return true;
  }

  // The recorder is never destroyed once made (live_): a callback may still be on its way in.
  // Launch callbacks may come before it is made (another thread, while cuInit runs).
  void OnApiEnter(const ApiCallSite& call) override {
    if (ApiCallRecorder* r = live_.load(std::memory_order_acquire)) r->OnEnter(call);
  }
  void OnApiExit(const ApiCallSite& call, uint32_t result) override {
    if (ApiCallRecorder* r = live_.load(std::memory_order_acquire)) r->OnExit(call, result);
  }

  // Before the activity kinds go on (this collector comes first in the registry): a kernel
  // launched while they are being enabled has its launch logged.
  void OnCaptureOpening(const CaptureWindowEdgeRecord&, uint64_t, uint32_t) override {
    if (recorder_) recorder_->SetRecording(true);
  }
  // The window's calls reach its file at the flush that follows (the session asks for one
  // before the next window's file begins); this may run inside a CUPTI callback.
  void OnCaptureStop(uint32_t, uint64_t) override {
    if (recorder_) recorder_->SetRecording(false);
  }

  void OnFlush() override {
    Drain();
    WriteCounters();
  }

  void OnShutdown() override {
    if (!recorder_) return;
    CuptiCallbacks::SetApiCallObserver(nullptr, {});
    recorder_->SetRecording(false);
    Drain();
    WriteCounters();
    if (stacks_) {
      const PythonSupport python = stacks_->python().support();
      if (python == PythonSupport::kUnsupportedVersion ||
          python == PythonSupport::kLayoutMismatch) {
        const uint32_t v = stacks_->python().version_hex();
        services_->Report(Severity::kInfo, "stacks",
                          "warpscope: no Python stacks: " + std::string(PythonSupportName(python)) +
                              (v != 0 ? " (Python " + std::to_string(v >> 24) + "." +
                                            std::to_string((v >> 16) & 0xFF) + ")"
                                      : std::string()) +
                              "; calls carry no stack");
      }
    }
    // The recorder, table and sink stay: a callback already past its load of the observer
    // may still use them.
    (void)recorder_.release();
    (void)stacks_.release();
    (void)stack_sink_.release();
  }

  void OnForkChild() override {
    if (recorder_) recorder_->Abandon();
    (void)recorder_.release();
    (void)stacks_.release();
    (void)stack_sink_.release();
  }

 private:
  void Drain() {
    if (!recorder_) return;
    {
      BatchSink sink(services_->writer());
      recorder_->Drain(sink);
    }
    ReportOutOfMemory();
  }

  // One line at the first failed request (each one is a MemoryEvent of its own).
  void ReportOutOfMemory() {
    const uint64_t failed = recorder_->counts().memory.failed;
    if (failed == 0 || out_of_memory_reported_) return;
    out_of_memory_reported_ = true;
    services_->Report(Severity::kError, "alloc",
                      "warpscope: a CUDA allocation failed for want of device memory; each "
                      "failed request is in the trace (ALLOCATE_FAILED, with its stack)" +
                          std::string(services_->options().live_blocks
                                          ? ", and the flight recorder dumps what was live"
                                          : "") +
                          "; see `warpscope memory`");
  }

  void WriteCounters() {
    if (!recorder_) return;
    TraceWriter& w = services_->writer();
    const ApiCallRecorderCounts c = recorder_->counts();
    SetStat(w, stats::kApiCallsLogged, c.log.logged);
    SetStat(w, stats::kApiCallsLaunches, c.launches_written);
    SetStat(w, stats::kApiCallsRuntime, c.runtime_written);
    SetStat(w, stats::kApiCallsDropped, c.log.dropped);
    SetStat(w, stats::kApiCallsThreads, c.log.threads);
    if (!stacks_) return;
    const StackTableCounts s = stacks_->counts();
    SetStat(w, stats::kStacksCaptured, s.captures);
    SetStat(w, stats::kStacksNone, s.no_stack);
    SetStat(w, stats::kStacksDistinct, s.stacks);
    SetStat(w, stats::kStacksFrames, s.frames);
    SetStat(w, stats::kStacksCodeObjects, s.code_objects);
    SetStat(w, stats::kStacksCaptureNs, s.capture_ns);
    SetStat(w, stats::kStacksNativeKnown, s.native_known);
  }

  SessionServices* services_ = nullptr;
  std::unique_ptr<WriterStackSink> stack_sink_;
  std::unique_ptr<StackTable> stacks_;
  std::unique_ptr<ApiCallRecorder> recorder_;
  std::atomic<ApiCallRecorder*> live_{nullptr};
  bool out_of_memory_reported_ = false;
};

}  // namespace

std::unique_ptr<SessionListener> MakeApiCallsCollector() {
  return std::make_unique<ApiCallsCollector>();
}

}  // namespace warpscope
