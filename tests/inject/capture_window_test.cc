// Tests for the capture window state machine (libinject/capture_window.h) with synthetic
// time, profiler, NVTX and signal inputs.
#include "libinject/capture_window.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

constexpr uint64_t kS = 1000000000ull;
constexpr uint64_t kT0 = 100 * kS;

CaptureWindowOptions Opts(CaptureRange range, double delay_s = 0, double duration_s = 0,
                          uint32_t max_windows = 1) {
  CaptureWindowOptions o;
  o.range = range;
  o.delay_ns = static_cast<uint64_t>(delay_s * kS);
  o.duration_ns = static_cast<uint64_t>(duration_s * kS);
  o.max_windows = max_windows;
  o.nvtx_name = "train";
  return o;
}

void ExpectEdge(const CaptureWindow::Edge& e, uint32_t id, bool begin, uint64_t ts,
                CaptureTrigger trigger) {
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->window_id, id);
  EXPECT_EQ(e->begin, begin);
  EXPECT_EQ(e->timestamp_ns, ts);
  EXPECT_EQ(e->trigger, trigger);
}

TEST(CaptureWindowTest, WholeRunWithoutDelay) {
  CaptureWindow w(Opts(CaptureRange::kNone), kT0);
  ExpectEdge(w.Begin(), 1, true, kT0, CaptureTrigger::kProcess);
  EXPECT_TRUE(w.is_open());
  EXPECT_FALSE(w.Tick(kT0 + 50 * kS));
  EXPECT_EQ(w.next_deadline_ns(), 0u);
  ExpectEdge(w.Finish(kT0 + 60 * kS), 1, false, kT0 + 60 * kS, CaptureTrigger::kProcess);
  EXPECT_FALSE(w.Finish(kT0 + 61 * kS));
}

TEST(CaptureWindowTest, DelayThenDuration) {
  CaptureWindow w(Opts(CaptureRange::kNone, 2, 3), kT0);
  EXPECT_FALSE(w.Begin());
  EXPECT_EQ(w.next_deadline_ns(), kT0 + 2 * kS);
  EXPECT_FALSE(w.Tick(kT0 + kS));
  ExpectEdge(w.Tick(kT0 + 2 * kS), 1, true, kT0 + 2 * kS, CaptureTrigger::kDelay);
  EXPECT_EQ(w.next_deadline_ns(), kT0 + 5 * kS);
  EXPECT_FALSE(w.Tick(kT0 + 4 * kS));
  ExpectEdge(w.Tick(kT0 + 5 * kS + 10), 1, false, kT0 + 5 * kS + 10, CaptureTrigger::kDuration);
  EXPECT_TRUE(w.exhausted());
  EXPECT_FALSE(w.Tick(kT0 + 9 * kS));  // never reopens
  EXPECT_FALSE(w.Finish(kT0 + 10 * kS));
}

TEST(CaptureWindowTest, ProfilerApiStopMode) {
  CaptureWindow w(Opts(CaptureRange::kProfilerApi), kT0);
  EXPECT_FALSE(w.Begin());
  EXPECT_FALSE(w.ProfilerStop(kT0 + 1));  // stop before start: nothing
  ExpectEdge(w.ProfilerStart(kT0 + 10), 1, true, kT0 + 10, CaptureTrigger::kProfilerApi);
  EXPECT_FALSE(w.ProfilerStart(kT0 + 11));  // already open
  ExpectEdge(w.ProfilerStop(kT0 + 20), 1, false, kT0 + 20, CaptureTrigger::kProfilerApi);
  EXPECT_FALSE(w.ProfilerStart(kT0 + 30));  // stop mode: one window only
  EXPECT_TRUE(w.exhausted());
}

TEST(CaptureWindowTest, ProfilerApiRepeatN) {
  CaptureWindow w(Opts(CaptureRange::kProfilerApi, 0, 0, 2), kT0);
  ExpectEdge(w.ProfilerStart(kT0 + 1), 1, true, kT0 + 1, CaptureTrigger::kProfilerApi);
  ExpectEdge(w.ProfilerStop(kT0 + 2), 1, false, kT0 + 2, CaptureTrigger::kProfilerApi);
  ExpectEdge(w.ProfilerStart(kT0 + 3), 2, true, kT0 + 3, CaptureTrigger::kProfilerApi);
  ExpectEdge(w.ProfilerStop(kT0 + 4), 2, false, kT0 + 4, CaptureTrigger::kProfilerApi);
  EXPECT_FALSE(w.ProfilerStart(kT0 + 5));
}

TEST(CaptureWindowTest, ProfilerApiUnlimitedRepeatWithDuration) {
  CaptureWindow w(Opts(CaptureRange::kProfilerApi, 0, 1, 0), kT0);
  for (uint32_t i = 1; i <= 5; ++i) {
    uint64_t t = kT0 + i * 10 * kS;
    ExpectEdge(w.ProfilerStart(t), i, true, t, CaptureTrigger::kProfilerApi);
    ExpectEdge(w.Tick(t + kS), i, false, t + kS, CaptureTrigger::kDuration);
    EXPECT_FALSE(w.ProfilerStop(t + 2 * kS));  // its stop finds the window closed
  }
}

TEST(CaptureWindowTest, TriggersDuringDelayAreIgnored) {
  CaptureWindow w(Opts(CaptureRange::kProfilerApi, 5), kT0);
  EXPECT_FALSE(w.ProfilerStart(kT0 + kS));
  EXPECT_FALSE(w.ProfilerStop(kT0 + 2 * kS));
  ExpectEdge(w.ProfilerStart(kT0 + 6 * kS), 1, true, kT0 + 6 * kS, CaptureTrigger::kProfilerApi);
}

TEST(CaptureWindowTest, NvtxOutermostNamedRangeOnItsThread) {
  CaptureWindow w(Opts(CaptureRange::kNvtx), kT0);
  EXPECT_FALSE(w.NvtxPush(1, "setup", "", kT0 + 1));     // depth 1 on thread 1
  EXPECT_FALSE(w.NvtxPop(1, "", kT0 + 2));
  ExpectEdge(w.NvtxPush(1, "train", "", kT0 + 3), 1, true, kT0 + 3, CaptureTrigger::kNvtx);
  EXPECT_EQ(w.nvtx_window_thread(), 1u);
  EXPECT_EQ(w.nvtx_window_depth(), 0u);
  EXPECT_FALSE(w.NvtxPush(1, "train", "", kT0 + 4));  // nested same name: inner
  EXPECT_FALSE(w.NvtxPush(2, "other", "", kT0 + 5));  // other thread
  EXPECT_FALSE(w.NvtxPop(2, "", kT0 + 6));
  EXPECT_FALSE(w.NvtxPop(1, "", kT0 + 7));            // pops the inner "train"
  EXPECT_FALSE(w.NvtxPop(1, "other.domain", kT0 + 8));  // other domain: not ours
  EXPECT_TRUE(w.wants_nvtx());                           // the window is still open
  ExpectEdge(w.NvtxPop(1, "", kT0 + 9), 1, false, kT0 + 9, CaptureTrigger::kNvtx);
  EXPECT_FALSE(w.NvtxPush(1, "train", "", kT0 + 10));  // stop mode
  // After the last window NVTX no longer matters: the session skips its lock then.
  EXPECT_FALSE(w.wants_nvtx());
  EXPECT_FALSE(CaptureWindow(Opts(CaptureRange::kProfilerApi), kT0).wants_nvtx());
}

TEST(CaptureWindowTest, NvtxNestedInsideOtherRangesAndDomain) {
  CaptureWindowOptions o = Opts(CaptureRange::kNvtx, 0, 0, 0);
  o.nvtx_domain = "dom";
  CaptureWindow w(o, kT0);
  EXPECT_FALSE(w.NvtxPush(7, "train", "", kT0 + 1));  // default domain: not ours
  EXPECT_FALSE(w.NvtxPush(7, "outer", "dom", kT0 + 2));
  ExpectEdge(w.NvtxPush(7, "train", "dom", kT0 + 3), 1, true, kT0 + 3, CaptureTrigger::kNvtx);
  EXPECT_EQ(w.nvtx_window_depth(), 1u);
  ExpectEdge(w.NvtxPop(7, "dom", kT0 + 4), 1, false, kT0 + 4, CaptureTrigger::kNvtx);
  EXPECT_FALSE(w.NvtxPop(7, "dom", kT0 + 5));  // pops "outer"
  ExpectEdge(w.NvtxPush(7, "train", "dom", kT0 + 6), 2, true, kT0 + 6, CaptureTrigger::kNvtx);
}

TEST(CaptureWindowTest, UnbalancedPopsAreHarmless) {
  CaptureWindow w(Opts(CaptureRange::kNvtx), kT0);
  EXPECT_FALSE(w.NvtxPop(3, "", kT0 + 1));
  ExpectEdge(w.NvtxPush(3, "train", "", kT0 + 2), 1, true, kT0 + 2, CaptureTrigger::kNvtx);
  ExpectEdge(w.NvtxPop(3, "", kT0 + 3), 1, false, kT0 + 3, CaptureTrigger::kNvtx);
}

TEST(CaptureWindowTest, SignalToggles) {
  CaptureWindow w(Opts(CaptureRange::kSignal, 0, 0, 2), kT0);
  ExpectEdge(w.Signal(kT0 + 1), 1, true, kT0 + 1, CaptureTrigger::kSignal);
  ExpectEdge(w.Signal(kT0 + 2), 1, false, kT0 + 2, CaptureTrigger::kSignal);
  ExpectEdge(w.Signal(kT0 + 3), 2, true, kT0 + 3, CaptureTrigger::kSignal);
  ExpectEdge(w.Finish(kT0 + 4), 2, false, kT0 + 4, CaptureTrigger::kProcess);
  EXPECT_FALSE(w.Signal(kT0 + 5));
}

TEST(CaptureWindowTest, OtherRangesIgnoreForeignTriggers) {
  CaptureWindow w(Opts(CaptureRange::kSignal), kT0);
  EXPECT_FALSE(w.ProfilerStart(kT0 + 1));
  EXPECT_FALSE(w.NvtxPush(1, "train", "", kT0 + 2));
  CaptureWindow p(Opts(CaptureRange::kProfilerApi), kT0);
  EXPECT_FALSE(p.Signal(kT0 + 1));
  EXPECT_FALSE(p.Tick(kT0 + 100 * kS));
}

TEST(CaptureWindowTest, FromConfig) {
  Config c;
  c.capture_range = CaptureRange::kNone;
  c.delay_s = 1.25;
  c.max_windows = 0;
  CaptureWindowOptions o = CaptureWindowOptions::FromConfig(c);
  EXPECT_EQ(o.delay_ns, 1250000000ull);
  EXPECT_EQ(o.max_windows, 1u);  // range none: one window
}

}  // namespace
}  // namespace warpscope
