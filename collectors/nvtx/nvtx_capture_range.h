// The NVTX capture range collector: with capture range nvtx, the range that opened a capture
// window is left out of the activity records (the translator suppresses it) and written here
// instead, as one NvtxRangeRecord from the window's opening to its close. CUPTI-free.
#ifndef WARPSCOPE_COLLECTORS_NVTX_NVTX_CAPTURE_RANGE_H_
#define WARPSCOPE_COLLECTORS_NVTX_NVTX_CAPTURE_RANGE_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "collectors/collector_interface.h"

namespace warpscope {

class NvtxCaptureRangeCollector final : public SessionListener {
 public:
  std::string_view name() const override { return "nvtx"; }
  bool OnSessionStart(SessionServices& services) override;
  // Remembers where and when the window's range was pushed (trigger NVTX).
  void OnCaptureOpening(const CaptureWindowEdgeRecord& edge, uint64_t nvtx_thread,
                        uint32_t nvtx_depth) override;
  // Writes the range when the window it opened closes, whatever closed it (the pop, the
  // duration, process end).
  void OnCaptureClosing(const CaptureWindowEdgeRecord& edge) override;
  // The window's begin edge is written once recording began (after the activity kinds are on):
  // the range starts there too, inside its window.
  void OnCaptureStart(uint32_t window_id, uint64_t timestamp_ns) override;

 private:
  SessionServices* services_ = nullptr;
  uint64_t open_ns_ = 0;  // 0: no window opened by the range is open
  uint32_t open_tid_ = 0;
  uint32_t open_depth_ = 0;
};

std::unique_ptr<SessionListener> MakeNvtxCaptureRangeCollector();

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_NVTX_NVTX_CAPTURE_RANGE_H_
