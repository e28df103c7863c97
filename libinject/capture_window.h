// The capture window state machine (pure, unit-tested): turns time ticks, cudaProfilerStart/
// Stop, pushes and pops of the named NVTX range, and capture signals into window edges.
//
// Rules (docs/record.md, "Capture windows"):
//  * No window opens before `delay` has passed since injection.
//  * capture range none: the window opens at start (trigger PROCESS) or when the delay has
//    passed (DELAY); it closes after `duration` (DURATION) or at process end (PROCESS).
//  * cudaProfilerApi / nvtx / signal: a window opens on the trigger and closes on its
//    counterpart (profiler stop; the pop, on the same thread and depth, of the push that
//    opened it; the next signal), after `duration`, or at process end. Triggers during the
//    delay are ignored (a stop/pop/signal that pairs with an ignored start is ignored too).
//  * After `max_windows` windows (stop = 1, repeat = unlimited, repeat:N = N) no window opens.
#ifndef WARPSCOPE_LIBINJECT_CAPTURE_WINDOW_H_
#define WARPSCOPE_LIBINJECT_CAPTURE_WINDOW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "libinject/config.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

struct CaptureWindowOptions {
  CaptureRange range = CaptureRange::kNone;
  uint64_t delay_ns = 0;
  uint64_t duration_ns = 0;  // 0 = no limit
  uint32_t max_windows = 1;  // 0 = no limit
  std::string nvtx_name;
  std::string nvtx_domain;   // empty = default domain

  static CaptureWindowOptions FromConfig(const Config& config);
};

class CaptureWindow {
 public:
  using Edge = std::optional<CaptureWindowEdgeRecord>;

  CaptureWindow(const CaptureWindowOptions& options, uint64_t start_ns);

  // Call once right after construction (opens a range-less window with no delay).
  Edge Begin();
  // Time passes; call at least at next_deadline_ns().
  Edge Tick(uint64_t now_ns);
  Edge ProfilerStart(uint64_t now_ns);
  Edge ProfilerStop(uint64_t now_ns);
  // `thread` identifies the OS thread; `domain` is empty for the default domain.
  Edge NvtxPush(uint64_t thread, std::string_view name, std::string_view domain,
                uint64_t now_ns);
  Edge NvtxPop(uint64_t thread, std::string_view domain, uint64_t now_ns);
  Edge Signal(uint64_t now_ns);
  // Process end / detach: closes an open window (trigger PROCESS or the given one).
  Edge Finish(uint64_t now_ns, CaptureTrigger trigger = CaptureTrigger::kProcess);

  bool is_open() const { return open_; }
  // No window can open any more (max_windows reached or finished).
  bool exhausted() const { return finished_ || (options_.max_windows != 0 && windows_ >= options_.max_windows && !open_); }
  uint32_t windows_opened() const { return windows_; }
  // Absolute time at which Tick must be called next; 0 = none pending.
  uint64_t next_deadline_ns() const;
  // Whether NVTX push/pop events matter now (so callers can skip the work otherwise).
  // The thread and nesting depth (0 = outermost) of the push that opened the current window.
  uint64_t nvtx_window_thread() const { return nvtx_thread_; }
  uint32_t nvtx_window_depth() const { return nvtx_open_depth_ ? nvtx_open_depth_ - 1 : 0; }
  bool wants_nvtx() const { return options_.range == CaptureRange::kNvtx && !exhausted(); }

 private:
  Edge Open(uint64_t now_ns, CaptureTrigger trigger);
  Edge Close(uint64_t now_ns, CaptureTrigger trigger);
  bool DelayPassed(uint64_t now_ns) const { return now_ns >= start_ns_ + options_.delay_ns; }

  CaptureWindowOptions options_;
  uint64_t start_ns_;
  bool open_ = false;
  bool finished_ = false;
  uint32_t windows_ = 0;
  uint64_t opened_at_ns_ = 0;
  // NVTX: per-thread push depth in the capture domain, and where the window's range sits.
  std::unordered_map<uint64_t, uint32_t> nvtx_depth_;
  uint64_t nvtx_thread_ = 0;
  uint32_t nvtx_open_depth_ = 0;  // depth of the push that opened the window + 1; 0 = none
};

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_CAPTURE_WINDOW_H_
