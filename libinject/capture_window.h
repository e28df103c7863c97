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
//  * capture range control: only `warpscope start` / `stop` open and close windows. In every
//    range those commands open (at once, delay or not) and close a window (trigger CONTROL);
//    a window they open counts against max_windows and closes on `stop`, its duration, a
//    limit, process end, the capture signal or cudaProfilerStop; an NVTX pop closes only a
//    window its push opened.
//  * --max-duration: once windows have been open this long in all, the open one closes and
//    no other opens (trigger LIMIT); --max-size closes the open window (LIMIT), the session
//    decides when (it knows the bytes written).
#ifndef WARPSCOPE_LIBINJECT_CAPTURE_WINDOW_H_
#define WARPSCOPE_LIBINJECT_CAPTURE_WINDOW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "libinject/config.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

struct CaptureWindowOptions {
  CaptureRange range = CaptureRange::kNone;
  uint64_t delay_ns = 0;
  uint64_t duration_ns = 0;  // 0 = no limit
  uint32_t max_windows = 1;  // 0 = no limit
  uint64_t max_open_ns = 0;  // all windows together; 0 = no limit
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
  // The capture range was pushed at `depth` (0 = outermost in its domain) on OS thread
  // `thread`; and a range of the capture domain at `depth` was popped on `thread`. The caller
  // matches names, domains and depths (NvtxRangeMatch) without the window's lock.
  Edge NvtxPush(uint64_t thread, uint32_t depth, uint64_t now_ns);
  Edge NvtxPop(uint64_t thread, uint32_t depth, uint64_t now_ns);
  Edge Signal(uint64_t now_ns);
  // `warpscope start` (true) / `stop` (false).
  Edge Control(bool start, uint64_t now_ns);
  // --max-size reached: closes the open window (trigger LIMIT); later ones may open.
  Edge SizeLimit(uint64_t now_ns) { return Close(now_ns, CaptureTrigger::kLimit); }
  // Process end / detach: closes an open window (trigger PROCESS or the given one).
  Edge Finish(uint64_t now_ns, CaptureTrigger trigger = CaptureTrigger::kProcess);

  bool is_open() const { return open_; }
  // No window can open any more (max_windows reached or finished).
  bool exhausted() const { return finished_ || (options_.max_windows != 0 && windows_ >= options_.max_windows && !open_); }
  uint32_t windows_opened() const { return windows_; }
  // How long windows have been open in all, up to `now_ns`.
  uint64_t open_ns(uint64_t now_ns) const {
    return closed_open_ns_ + (open_ && now_ns > opened_at_ns_ ? now_ns - opened_at_ns_ : 0);
  }
  // The window was closed for good by --max-duration.
  bool limited() const { return limited_; }
  // Absolute time at which Tick must be called next; 0 = none pending.
  uint64_t next_deadline_ns() const;
  // The thread and nesting depth (0 = outermost) of the push that opened the current window;
  // nvtx_window_open() is false when no window is open or a control command opened it.
  bool nvtx_window_open() const { return open_ && nvtx_open_depth_ != 0; }
  uint64_t nvtx_window_thread() const { return nvtx_thread_; }
  uint32_t nvtx_window_depth() const { return nvtx_open_depth_ ? nvtx_open_depth_ - 1 : 0; }
  // Whether NVTX push/pop events matter now (so callers can skip the work otherwise).
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
  uint64_t closed_open_ns_ = 0;  // time spent open by the windows already closed
  bool limited_ = false;
  // NVTX: where the window's range sits.
  uint64_t nvtx_thread_ = 0;
  uint32_t nvtx_open_depth_ = 0;  // depth of the push that opened the window + 1; 0 = none
};

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_CAPTURE_WINDOW_H_
