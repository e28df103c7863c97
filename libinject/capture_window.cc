// Capture window state machine (see capture_window.h for the rules).
#include "libinject/capture_window.h"

#include <algorithm>
#include <cmath>

namespace warpscope {

CaptureWindowOptions CaptureWindowOptions::FromConfig(const Config& config) {
  CaptureWindowOptions o;
  o.range = config.capture_range;
  o.delay_ns = static_cast<uint64_t>(std::llround(config.delay_s * 1e9));
  o.duration_ns = static_cast<uint64_t>(std::llround(config.duration_s * 1e9));
  o.max_windows = config.capture_range == CaptureRange::kNone ? 1 : config.max_windows;
  o.max_open_ns = static_cast<uint64_t>(std::llround(config.max_duration_s * 1e9));
  o.nvtx_name = config.nvtx_range_name;
  o.nvtx_domain = config.nvtx_range_domain;
  return o;
}

CaptureWindow::CaptureWindow(const CaptureWindowOptions& options, uint64_t start_ns)
    : options_(options), start_ns_(start_ns) {}

CaptureWindow::Edge CaptureWindow::Open(uint64_t now_ns, CaptureTrigger trigger) {
  if (open_ || exhausted()) return std::nullopt;
  open_ = true;
  ++windows_;
  opened_at_ns_ = now_ns;
  return CaptureWindowEdgeRecord{windows_, true, now_ns, trigger};
}

CaptureWindow::Edge CaptureWindow::Close(uint64_t now_ns, CaptureTrigger trigger) {
  if (!open_) return std::nullopt;
  open_ = false;
  nvtx_open_depth_ = 0;
  closed_open_ns_ += now_ns > opened_at_ns_ ? now_ns - opened_at_ns_ : 0;
  return CaptureWindowEdgeRecord{windows_, false, now_ns, trigger};
}

CaptureWindow::Edge CaptureWindow::Begin() {
  if (options_.range == CaptureRange::kNone && options_.delay_ns == 0) {
    return Open(start_ns_, CaptureTrigger::kProcess);
  }
  return std::nullopt;
}

uint64_t CaptureWindow::next_deadline_ns() const {
  if (finished_) return 0;
  if (open_) {
    uint64_t deadline = options_.duration_ns ? opened_at_ns_ + options_.duration_ns : 0;
    if (options_.max_open_ns != 0) {
      const uint64_t limit = opened_at_ns_ + (options_.max_open_ns - std::min(options_.max_open_ns, closed_open_ns_));
      if (deadline == 0 || limit < deadline) deadline = limit;
    }
    return deadline;
  }
  if (options_.range == CaptureRange::kNone && windows_ == 0) return start_ns_ + options_.delay_ns;
  return 0;
}

CaptureWindow::Edge CaptureWindow::Tick(uint64_t now_ns) {
  if (finished_) return std::nullopt;
  if (open_) {
    if (options_.max_open_ns != 0 && open_ns(now_ns) >= options_.max_open_ns) {
      limited_ = true;
      return Finish(now_ns, CaptureTrigger::kLimit);
    }
    if (options_.duration_ns && now_ns >= opened_at_ns_ + options_.duration_ns) {
      return Close(now_ns, CaptureTrigger::kDuration);
    }
    return std::nullopt;
  }
  if (options_.range == CaptureRange::kNone && windows_ == 0 && DelayPassed(now_ns)) {
    return Open(now_ns, options_.delay_ns ? CaptureTrigger::kDelay : CaptureTrigger::kProcess);
  }
  return std::nullopt;
}

CaptureWindow::Edge CaptureWindow::ProfilerStart(uint64_t now_ns) {
  if (options_.range != CaptureRange::kProfilerApi || !DelayPassed(now_ns)) return std::nullopt;
  if (auto e = Tick(now_ns)) return e;  // a duration that ran out closes first
  return Open(now_ns, CaptureTrigger::kProfilerApi);
}

CaptureWindow::Edge CaptureWindow::ProfilerStop(uint64_t now_ns) {
  if (options_.range != CaptureRange::kProfilerApi) return std::nullopt;
  return Close(now_ns, CaptureTrigger::kProfilerApi);
}

CaptureWindow::Edge CaptureWindow::NvtxPush(uint64_t thread, uint32_t depth, uint64_t now_ns) {
  if (options_.range != CaptureRange::kNvtx || open_ || !DelayPassed(now_ns)) return std::nullopt;
  Edge e = Open(now_ns, CaptureTrigger::kNvtx);
  if (e) {
    nvtx_thread_ = thread;
    nvtx_open_depth_ = depth + 1;
  }
  return e;
}

CaptureWindow::Edge CaptureWindow::NvtxPop(uint64_t thread, uint32_t depth, uint64_t now_ns) {
  if (options_.range != CaptureRange::kNvtx) return std::nullopt;
  if (open_ && nvtx_open_depth_ != 0 && thread == nvtx_thread_ && depth + 1 == nvtx_open_depth_) {
    return Close(now_ns, CaptureTrigger::kNvtx);
  }
  return std::nullopt;
}

CaptureWindow::Edge CaptureWindow::Signal(uint64_t now_ns) {
  if (options_.range != CaptureRange::kSignal) return std::nullopt;
  if (open_) return Close(now_ns, CaptureTrigger::kSignal);
  if (!DelayPassed(now_ns)) return std::nullopt;
  return Open(now_ns, CaptureTrigger::kSignal);
}

CaptureWindow::Edge CaptureWindow::Control(bool start, uint64_t now_ns) {
  if (!start) return Close(now_ns, CaptureTrigger::kControl);
  if (auto e = Tick(now_ns)) return e;  // a duration or limit that ran out closes first
  return Open(now_ns, CaptureTrigger::kControl);
}

CaptureWindow::Edge CaptureWindow::Finish(uint64_t now_ns, CaptureTrigger trigger) {
  Edge e = Close(now_ns, trigger);
  finished_ = true;
  return e;
}

}  // namespace warpscope
