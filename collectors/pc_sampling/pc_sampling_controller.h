// PcSamplingController: PC sampling state per CUDA context (enable, stall reason table,
// configure, start/stop with the capture window), the drain thread, and the stats. CUPTI-free:
// it drives a PcSamplingApi, so unit tests run it against a fake.
#ifndef WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_CONTROLLER_H_
#define WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_CONTROLLER_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include "collectors/pc_sampling/pc_sampling_api.h"
#include "collectors/pc_sampling/pc_sampling_config.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

// Where the controller's output goes: the session's TraceWriter in libwarpscope, a fake in
// tests.
class PcRecordSink {
 public:
  virtual ~PcRecordSink() = default;
  virtual bool Write(const PcStallReasonsRecord& record) = 0;
  virtual bool Write(const PcSampleBatchRecord& record) = 0;
  virtual bool Write(const CubinImageRecord& record) = 0;
  virtual uint64_t InternString(std::string_view value) = 0;
  virtual void AddToCounter(std::string_view name, uint64_t delta, Severity severity) = 0;
  // A counter of the stats table, with its severity.
  void AddToCounter(const StatDef& stat, uint64_t delta) {
    AddToCounter(stat.name, delta, stat.severity);
  }
  // One line on stderr plus a Notice. Messages come without "warpscope: "; the sink adds it.
  virtual void Report(Severity severity, std::string_view message) = 0;
  virtual uint64_t NowNs() = 0;  // trace clock
};

class PcSamplingController {
 public:
  // With `worker_thread`, sampling contexts are drained every config.drain_interval_ms on the
  // controller's own thread; without it only by Poll() and the events below (tests).
  PcSamplingController(PcSamplingApi& api, PcRecordSink& sink, PcSamplingConfig config,
                       bool worker_thread = true);
  ~PcSamplingController();  // Shutdown()
  PcSamplingController(const PcSamplingController&) = delete;
  PcSamplingController& operator=(const PcSamplingController&) = delete;

  // From the CONTEXT_CREATED callback: enable, stall reasons, configure, and start when a
  // capture window is open. One context per device; a second is refused (one line, counter).
  void OnContextCreated(PcContext ctx, uint32_t context_id, uint32_t device_id);
  // CONTEXT_DESTROY_STARTING: stop, drain, disable; frees the device for another context.
  void OnContextDestroying(PcContext ctx);
  // MODULE_LOADED: writes the cubin (once per CRC) for offline PC mapping when ctx is sampled,
  // and drains (continuous mode needs a drain after a module load-unload-load to keep PCs
  // unique). `cubin` is CUPTI's, valid during the call only.
  void OnModuleLoaded(PcContext ctx, const void* cubin = nullptr, size_t cubin_size = 0);
  void StartCapture();
  void StopCapture();  // stop and drain every sampling context
  // Process end: stop, drain, join the thread, disable every context. Idempotent.
  void Shutdown();
  // Drains every sampling context (the worker thread's body).
  void Poll();

  bool sampling(PcContext ctx) const;
  bool enabled(PcContext ctx) const;  // set up (sampling or waiting for a capture window)

 private:
  struct Context {
    uint32_t context_id = 0;
    uint32_t device_id = 0;
    bool sampling = false;
    bool buffer_full_reported = false;
    bool error_reported = false;
  };

  // Makes a context current on a thread of ours for the calls in its scope (see
  // PcSamplingApi::BindContext); never used inside CUPTI's resource callbacks.
  class ScopedBinding {
   public:
    ScopedBinding(PcSamplingApi& api, PcContext ctx)
        : api_(api), ctx_(ctx), binding_(api.BindContext(ctx)) {}
    ~ScopedBinding() { api_.UnbindContext(ctx_, binding_); }
    ScopedBinding(const ScopedBinding&) = delete;
    ScopedBinding& operator=(const ScopedBinding&) = delete;

   private:
    PcSamplingApi& api_;
    PcContext ctx_;
    PcBinding binding_;
  };

  // `enabled`: the context was enabled, so it is disabled at its teardown.
  void FailLocked(PcContext ctx, uint32_t device, const PcResult& result, std::string_view step,
                  bool enabled);
  void WriteCubinLocked(uint32_t device_id, const void* cubin, size_t size);
  void DrainAllLocked();  // every sampling context, each bound on this thread
  bool StartLocked(PcContext ctx, Context& c);
  void StopLocked(PcContext ctx, Context& c);
  void DrainLocked(PcContext ctx, Context& c);
  void DisableLocked(PcContext ctx, Context& c);  // Disable, then write the leftover PCs
  void DisableFailedLocked(PcContext ctx);        // if ctx is in enabled_not_sampled_
  void WriteBatchLocked(Context& c);              // raw_ -> one PcSampleBatch
  void StartThreadLocked();
  void WorkerLoop();
  void StopThread();  // mu_ not held

  PcSamplingApi& api_;
  PcRecordSink& sink_;
  const PcSamplingConfig config_;
  const bool worker_thread_;

  mutable std::mutex mu_;
  std::map<PcContext, Context> contexts_;
  std::map<uint32_t, PcContext> device_owner_;
  std::set<uint32_t> reasons_written_;  // devices whose stall reason table is in the trace
  std::set<uint64_t> cubins_written_;   // CRCs of the CubinImage records in the trace
  bool process_disabled_ = false;       // insufficient privileges: no context will work
  bool capture_active_ = false;
  bool shut_down_ = false;
  PcRawBatch raw_;              // reused by every drain
  // Contexts enabled for PC sampling whose configuration or start failed: disabled when the
  // context is destroyed or the session ends, not in the callback where the failure happened.
  std::vector<PcContext> enabled_not_sampled_;
  PcSampleBatchRecord record_;  // reused by every drain

  std::thread thread_;
  std::condition_variable wake_;
  bool stop_thread_ = false;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_CONTROLLER_H_
