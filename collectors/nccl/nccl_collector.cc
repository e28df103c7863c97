// The NCCL calls collector (see nccl_collector.h).
//
// Lifecycle: session start → a tracker that writes through the session's writer, handed to
// the CUPTI subscriber (NVTX domain callbacks and cuLaunchKernelEx) → capture windows switch
// its writing on and off → shutdown: counters, and the subscriber lets go of the tracker.
#include "collectors/nccl/nccl_collector.h"

#include "collectors/activity/activity_controller.h"
#include "collectors/callbacks/cupti_callbacks.h"
#include "collectors/nccl/nccl_calls.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

class NcclCallCollector final : public SessionListener {
 public:
  std::string_view name() const override { return "nccl"; }

  bool OnSessionStart(SessionServices& services) override {
    if (!services.activity_options().kinds.nvtx) return true;  // NCCL's calls are NVTX ranges
    services_ = &services;
    auto write = [this](const NcclCallRecord& record, std::string_view name, uint32_t os_tid) {
      TraceWriter::Batch batch(services_->writer());
      NcclCallRecord r = record;
      r.name_id = batch.InternString(name);
      r.thread_id = batch.InternThread(os_tid, os_tid);
      batch.Write(r);
      services_->writer().AddToCounter(stats::kNcclCalls.name, 1, stats::kNcclCalls.severity);
    };
    tracker_ = std::make_unique<NcclCallTracker>(write, [this] { return services_->NowNs(); });
    tracker_->SetRecording(false);  // until the first capture window opens
    CuptiCallbacks::SetNvtxDomainObserver(tracker_.get());
    return true;
  }
  void OnCaptureStart(uint32_t, uint64_t) override {
    if (tracker_) tracker_->SetRecording(true);
  }
  void OnCaptureStop(uint32_t, uint64_t) override {
    if (tracker_) tracker_->SetRecording(false);
  }
  void OnShutdown() override {
    if (!tracker_) return;
    CuptiCallbacks::SetNvtxDomainObserver(nullptr);
    services_->writer().AddToCounter(stats::kNcclPayloadUnreadable.name,
                                     tracker_->unreadable_payloads(),
                                     stats::kNcclPayloadUnreadable.severity);
    // The tracker stays: a callback already past its load of the pointer may still use it.
    (void)tracker_.release();
  }
  void OnForkChild() override { (void)tracker_.release(); }

 private:
  SessionServices* services_ = nullptr;
  std::unique_ptr<NcclCallTracker> tracker_;
};

}  // namespace

std::unique_ptr<SessionListener> MakeNcclCallCollector() {
  return std::make_unique<NcclCallCollector>();
}

}  // namespace warpscope
