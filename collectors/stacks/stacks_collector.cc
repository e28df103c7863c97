// The call stacks collector (see stacks_collector.h).
//
// Lifecycle: session start → settings; the CUPTI subscriber enables the callbacks of every
// runtime and driver function that is a selected sync, copy or launch and sends their calls
// here → capture windows switch writing on and off → each call: the stack (StackTable), one
// ApiStackEvent → flush and shutdown: the stacks.* counters, a notice when Python was there
// but could not be read; the subscriber lets go of the collector.
#include "collectors/stacks/stacks_collector.h"

#include <atomic>
#include <string>

#include "collectors/callbacks/cupti_callbacks.h"
#include "collectors/stacks/stack_config.h"
#include "collectors/stacks/stack_table.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

class WriterStackSink final : public StackSink {
 public:
  explicit WriterStackSink(TraceWriter& writer) : writer_(writer) {}
  uint64_t InternString(std::string_view value) override { return writer_.InternString(value); }
  void Write(const StackFrameRecord& frame) override { writer_.Write(frame); }
  void Write(const CallStackRecord& stack) override { writer_.Write(stack); }

 private:
  TraceWriter& writer_;
};

thread_local uint32_t t_launches = 0;

class StacksCollector final : public SessionListener, public ApiCallObserver {
 public:
  std::string_view name() const override { return "stacks"; }

  bool OnSessionStart(SessionServices& services) override {
    SettingError refused;
    if (!LoadStackConfig([&](std::string_view v) { return services.GetConfig(v); }, &config_,
                         &refused)) {
      services.Report(Severity::kError, "stacks",
                      "warpscope: " + refused.ForVariable() + "; no call stacks are recorded");
      return true;  // the trace goes on without stacks
    }
    if (!config_.any()) return true;
    services_ = &services;
    sink_ = std::make_unique<WriterStackSink>(services.writer());
    table_ = std::make_unique<StackTable>(sink_.get(), config_.depth, /*timed=*/true);
    const StackConfig config = config_;
    CuptiCallbacks::SetApiCallObserver(this, [config](std::string_view function) {
      return config.Wants(StackCallKindOf(function));
    });
    return true;
  }

  void OnCaptureStart(uint32_t, uint64_t) override {
    recording_.store(true, std::memory_order_release);
  }
  void OnCaptureStop(uint32_t, uint64_t) override {
    recording_.store(false, std::memory_order_release);
  }

  void OnApiCall(bool runtime, uint32_t callback_id, const char* function,
                 uint32_t correlation_id) override {
    if (!recording_.load(std::memory_order_acquire)) return;
    const CallInfo call = Info(runtime, callback_id, function);
    if (call.kind == StackCallKind::kLaunch) {
      uint32_t every = config_.launch_every;
      if (every == 0) {
        every = table_->python().support() == PythonSupport::kNoPython
                    ? StackConfig::kNativeLaunchEvery
                    : StackConfig::kPythonLaunchEvery;
      }
      if (t_launches++ % every != 0) return;
    }
    const StackCapture capture = table_->Capture();
    if (capture.stack_id == 0) return;
    ApiStackRecord r;
    r.correlation_id = correlation_id;
    r.stack_id = capture.stack_id;
    r.timestamp_ns = services_->NowNs();
    r.domain = runtime ? ApiDomain::kRuntime : ApiDomain::kDriver;
    r.callback_id = callback_id;
    r.name_id = call.name_id;
    services_->writer().Write(r);
  }

  void OnFlush() override { WriteCounters(); }

  void OnShutdown() override {
    if (!table_) return;
    CuptiCallbacks::SetApiCallObserver(nullptr, {});
    recording_.store(false, std::memory_order_release);
    WriteCounters();
    const PythonSupport python = table_->python().support();
    if (python == PythonSupport::kUnsupportedVersion || python == PythonSupport::kLayoutMismatch) {
      const uint32_t v = table_->python().version_hex();
      services_->Report(Severity::kInfo, "stacks",
                        "warpscope: no Python stacks: " + std::string(PythonSupportName(python)) +
                            (v != 0 ? " (Python " + std::to_string(v >> 24) + "." +
                                          std::to_string((v >> 16) & 0xFF) + ")"
                                    : std::string()) +
                            "; calls carry no stack");
    }
    // The table and sink stay: a callback already past its load of the observer may still
    // use them.
    (void)table_.release();
    (void)sink_.release();
  }
  void OnForkChild() override {
    recording_.store(false);
    (void)table_.release();
    (void)sink_.release();
  }

 private:
  struct CallInfo {
    uint64_t name_id = 0;
    StackCallKind kind = StackCallKind::kOther;
  };
  // What a function is and its interned name, worked out once per callback id: every
  // selected call (each kernel launch) passes here.
  CallInfo Info(bool runtime, uint32_t callback_id, const char* function) {
    std::atomic<uint64_t>* slot = nullptr;
    if (callback_id < kSlots) slot = &(runtime ? runtime_calls_ : driver_calls_)[callback_id];
    if (slot != nullptr) {
      // The name id in the high bits, the kind in the low byte; 0 = not yet known.
      if (const uint64_t packed = slot->load(std::memory_order_relaxed)) {
        return {packed >> 8, static_cast<StackCallKind>(packed & 0xFF)};
      }
    }
    const std::string_view name = function != nullptr ? function : "";
    const CallInfo info{services_->writer().InternString(name), StackCallKindOf(name)};
    if (slot != nullptr && info.name_id != 0) {
      slot->store(info.name_id << 8 | static_cast<uint64_t>(info.kind), std::memory_order_relaxed);
    }
    return info;
  }

  void WriteCounters() {
    if (!table_) return;
    const StackTableCounts c = table_->counts();
    TraceWriter& w = services_->writer();
    w.SetCounter(stats::kStacksCaptured.name, c.captures, stats::kStacksCaptured.severity);
    w.SetCounter(stats::kStacksNone.name, c.no_stack, stats::kStacksNone.severity);
    w.SetCounter(stats::kStacksDistinct.name, c.stacks, stats::kStacksDistinct.severity);
    w.SetCounter(stats::kStacksFrames.name, c.frames, stats::kStacksFrames.severity);
    w.SetCounter(stats::kStacksCodeObjects.name, c.code_objects,
                 stats::kStacksCodeObjects.severity);
    w.SetCounter(stats::kStacksCaptureNs.name, c.capture_ns, stats::kStacksCaptureNs.severity);
  }

  static constexpr uint32_t kSlots = 1024;
  StackConfig config_;
  SessionServices* services_ = nullptr;
  std::unique_ptr<WriterStackSink> sink_;
  std::unique_ptr<StackTable> table_;
  std::atomic<bool> recording_{false};
  std::atomic<uint64_t> runtime_calls_[kSlots] = {};  // CallInfo, packed (Info)
  std::atomic<uint64_t> driver_calls_[kSlots] = {};
};

}  // namespace

std::unique_ptr<SessionListener> MakeStacksCollector() {
  return std::make_unique<StacksCollector>();
}

}  // namespace warpscope
