// The NVTX capture range collector (see nvtx_capture_range.h).
#include "collectors/nvtx/nvtx_capture_range.h"

#include "proto/writer/trace_writer.h"

namespace warpscope {

bool NvtxCaptureRangeCollector::OnSessionStart(SessionServices& services) {
  services_ = &services;
  return true;  // without capture range nvtx no window opens with trigger NVTX: nothing to do
}

void NvtxCaptureRangeCollector::OnCaptureOpening(const CaptureWindowEdgeRecord& edge,
                                                 uint64_t nvtx_thread, uint32_t nvtx_depth) {
  if (edge.trigger != CaptureTrigger::kNvtx) return;
  open_ns_ = edge.timestamp_ns;
  open_tid_ = static_cast<uint32_t>(nvtx_thread);
  open_depth_ = nvtx_depth;
}

void NvtxCaptureRangeCollector::OnCaptureStart(uint32_t, uint64_t timestamp_ns) {
  if (open_ns_ != 0 && timestamp_ns > open_ns_) open_ns_ = timestamp_ns;
}

void NvtxCaptureRangeCollector::OnCaptureClosing(const CaptureWindowEdgeRecord& edge) {
  if (edge.trigger != CaptureTrigger::kNvtx && open_ns_ == 0) return;
  const CollectorOptions& options = services_->options();
  TraceWriter& writer = services_->writer();
  NvtxRangeRecord r;
  r.name_id = writer.InternString(options.nvtx_range_name);
  r.domain_id = options.nvtx_range_domain.empty() ? 0 : writer.InternString(options.nvtx_range_domain);
  r.start_ns = open_ns_;
  r.end_ns = edge.timestamp_ns;
  r.thread_id = writer.InternThread(open_tid_, open_tid_);
  r.end_thread_id = r.thread_id;
  r.is_push_pop = true;
  r.depth = open_depth_;
  writer.Write(r);
  open_ns_ = 0;
}

std::unique_ptr<SessionListener> MakeNvtxCaptureRangeCollector() {
  return std::make_unique<NvtxCaptureRangeCollector>();
}

}  // namespace warpscope
