// Tests for the capture window state machine (libinject/capture_window.h) with synthetic
// time, profiler, NVTX and signal inputs.
#include "libinject/capture_window.h"

#include <gtest/gtest.h>

#include <map>

#include "libinject/nvtx_range_match.h"
#include "libinject/slow_step.h"

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

// Drives a window's NVTX inputs as the session does: a depth counter per thread (thread_local
// there, a map here) and NvtxRangeMatch deciding which pushes and pops reach the window.
struct NvtxDriver {
  CaptureWindow& w;
  NvtxRangeMatch match;
  std::map<uint64_t, uint32_t> depth;
  int window_calls = 0;  // pushes and pops that needed the window (the session's lock)

  NvtxDriver(CaptureWindow& window, std::string name, std::string domain = "")
      : w(window), match(std::move(name), std::move(domain)) {}
  CaptureWindow::Edge Push(uint64_t thread, std::string_view name, std::string_view domain,
                           uint64_t now) {
    const std::optional<uint32_t> at = match.Push(depth[thread], name, domain);
    if (!at) return std::nullopt;
    ++window_calls;
    return w.NvtxPush(thread, *at, now);
  }
  CaptureWindow::Edge Pop(uint64_t thread, std::string_view domain, uint64_t now) {
    const std::optional<uint32_t> at = match.Pop(depth[thread], domain);
    if (!at) return std::nullopt;
    if (!(w.nvtx_window_open() && w.nvtx_window_thread() == thread &&
          w.nvtx_window_depth() == *at)) {
      return std::nullopt;  // the session's lock-free check: not the window's pop
    }
    ++window_calls;
    return w.NvtxPop(thread, *at, now);
  }
};

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
  NvtxDriver d(w, "train");
  EXPECT_FALSE(d.Push(1, "setup", "", kT0 + 1));     // depth 1 on thread 1
  EXPECT_FALSE(d.Pop(1, "", kT0 + 2));
  EXPECT_EQ(d.window_calls, 0);  // neither needed the window
  ExpectEdge(d.Push(1, "train", "", kT0 + 3), 1, true, kT0 + 3, CaptureTrigger::kNvtx);
  EXPECT_EQ(w.nvtx_window_thread(), 1u);
  EXPECT_EQ(w.nvtx_window_depth(), 0u);
  EXPECT_FALSE(d.Push(1, "train", "", kT0 + 4));  // nested same name: inner
  EXPECT_FALSE(d.Push(2, "other", "", kT0 + 5));  // other thread
  EXPECT_FALSE(d.Pop(2, "", kT0 + 6));
  EXPECT_FALSE(d.Pop(1, "", kT0 + 7));            // pops the inner "train"
  EXPECT_FALSE(d.Pop(1, "other.domain", kT0 + 8));  // other domain: not ours
  EXPECT_TRUE(w.wants_nvtx());                       // the window is still open
  // Only the two pushes of the name reached the window; no pop did.
  EXPECT_EQ(d.window_calls, 2);
  ExpectEdge(d.Pop(1, "", kT0 + 9), 1, false, kT0 + 9, CaptureTrigger::kNvtx);
  EXPECT_FALSE(d.Push(1, "train", "", kT0 + 10));  // stop mode
  // After the last window NVTX no longer matters: the session skips its lock then.
  EXPECT_FALSE(w.wants_nvtx());
  EXPECT_FALSE(CaptureWindow(Opts(CaptureRange::kProfilerApi), kT0).wants_nvtx());
}

TEST(CaptureWindowTest, NvtxNestedInsideOtherRangesAndDomain) {
  CaptureWindowOptions o = Opts(CaptureRange::kNvtx, 0, 0, 0);
  o.nvtx_domain = "dom";
  CaptureWindow w(o, kT0);
  NvtxDriver d(w, "train", "dom");
  EXPECT_FALSE(d.Push(7, "train", "", kT0 + 1));  // default domain: not ours
  EXPECT_FALSE(d.Push(7, "outer", "dom", kT0 + 2));
  ExpectEdge(d.Push(7, "train", "dom", kT0 + 3), 1, true, kT0 + 3, CaptureTrigger::kNvtx);
  EXPECT_EQ(w.nvtx_window_depth(), 1u);
  ExpectEdge(d.Pop(7, "dom", kT0 + 4), 1, false, kT0 + 4, CaptureTrigger::kNvtx);
  EXPECT_FALSE(d.Pop(7, "dom", kT0 + 5));  // pops "outer"
  ExpectEdge(d.Push(7, "train", "dom", kT0 + 6), 2, true, kT0 + 6, CaptureTrigger::kNvtx);
}

TEST(CaptureWindowTest, UnbalancedPopsAreHarmless) {
  CaptureWindow w(Opts(CaptureRange::kNvtx), kT0);
  NvtxDriver d(w, "train");
  EXPECT_FALSE(d.Pop(3, "", kT0 + 1));
  EXPECT_EQ(d.depth[3], 0u);  // a pop without a push does not go below zero
  ExpectEdge(d.Push(3, "train", "", kT0 + 2), 1, true, kT0 + 2, CaptureTrigger::kNvtx);
  ExpectEdge(d.Pop(3, "", kT0 + 3), 1, false, kT0 + 3, CaptureTrigger::kNvtx);
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
  EXPECT_FALSE(w.NvtxPush(1, 0, kT0 + 2));
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
  c.max_duration_s = 2.5;
  EXPECT_EQ(CaptureWindowOptions::FromConfig(c).max_open_ns, 2500000000ull);
}

TEST(CaptureWindowTest, ControlRangeOpensOnlyOnCommands) {
  CaptureWindow w(Opts(CaptureRange::kControl, 0, 0, 2), kT0);
  EXPECT_FALSE(w.Begin());
  EXPECT_FALSE(w.Tick(kT0 + 10 * kS));
  EXPECT_FALSE(w.Signal(kT0 + 11 * kS));
  EXPECT_FALSE(w.Control(false, kT0 + 12 * kS));  // stop with no window: nothing
  ExpectEdge(w.Control(true, kT0 + 13 * kS), 1, true, kT0 + 13 * kS, CaptureTrigger::kControl);
  EXPECT_FALSE(w.Control(true, kT0 + 14 * kS));  // already open
  ExpectEdge(w.Control(false, kT0 + 15 * kS), 1, false, kT0 + 15 * kS, CaptureTrigger::kControl);
  ExpectEdge(w.Control(true, kT0 + 16 * kS), 2, true, kT0 + 16 * kS, CaptureTrigger::kControl);
  ExpectEdge(w.Control(false, kT0 + 17 * kS), 2, false, kT0 + 17 * kS, CaptureTrigger::kControl);
  EXPECT_FALSE(w.Control(true, kT0 + 18 * kS));  // repeat:2 used up
  EXPECT_TRUE(w.exhausted());
}

TEST(CaptureWindowTest, ControlWorksInEveryRangeAndIgnoresTheDelay) {
  // During the delay of a signal range: the command opens at once.
  CaptureWindow s(Opts(CaptureRange::kSignal, 60), kT0);
  ExpectEdge(s.Control(true, kT0 + kS), 1, true, kT0 + kS, CaptureTrigger::kControl);
  ExpectEdge(s.Signal(kT0 + 2 * kS), 1, false, kT0 + 2 * kS, CaptureTrigger::kSignal);
  // A window a command opened in an NVTX range is not closed by NVTX pops.
  CaptureWindow n(Opts(CaptureRange::kNvtx, 0, 0, 0), kT0);
  NvtxDriver d(n, "train");
  ExpectEdge(n.Control(true, kT0 + 1), 1, true, kT0 + 1, CaptureTrigger::kControl);
  EXPECT_FALSE(n.nvtx_window_open());
  EXPECT_FALSE(d.Push(1, "train", "", kT0 + 2));  // open already
  EXPECT_FALSE(d.Pop(1, "", kT0 + 3));
  EXPECT_EQ(d.window_calls, 1);  // the push asked; the pop did not need to
  ExpectEdge(n.Control(false, kT0 + 4), 1, false, kT0 + 4, CaptureTrigger::kControl);
  // The whole-run window of range none: stop ends it, and it does not come back.
  CaptureWindow none(Opts(CaptureRange::kNone), kT0);
  ExpectEdge(none.Begin(), 1, true, kT0, CaptureTrigger::kProcess);
  ExpectEdge(none.Control(false, kT0 + kS), 1, false, kT0 + kS, CaptureTrigger::kControl);
  EXPECT_FALSE(none.Control(true, kT0 + 2 * kS));
}

TEST(CaptureWindowTest, MaxDurationCountsEveryWindowThenStops) {
  CaptureWindowOptions o = Opts(CaptureRange::kSignal, 0, 0, 0);
  o.max_open_ns = 5 * kS;
  CaptureWindow w(o, kT0);
  ExpectEdge(w.Signal(kT0), 1, true, kT0, CaptureTrigger::kSignal);
  EXPECT_EQ(w.next_deadline_ns(), kT0 + 5 * kS);
  ExpectEdge(w.Signal(kT0 + 3 * kS), 1, false, kT0 + 3 * kS, CaptureTrigger::kSignal);
  EXPECT_EQ(w.open_ns(kT0 + 9 * kS), 3 * kS);
  ExpectEdge(w.Signal(kT0 + 10 * kS), 2, true, kT0 + 10 * kS, CaptureTrigger::kSignal);
  EXPECT_EQ(w.next_deadline_ns(), kT0 + 12 * kS);  // 2 s of the 5 left
  EXPECT_FALSE(w.Tick(kT0 + 11 * kS));
  ExpectEdge(w.Tick(kT0 + 12 * kS), 2, false, kT0 + 12 * kS, CaptureTrigger::kLimit);
  EXPECT_TRUE(w.limited());
  EXPECT_TRUE(w.exhausted());
  EXPECT_FALSE(w.Signal(kT0 + 13 * kS));
  EXPECT_FALSE(w.Control(true, kT0 + 14 * kS));
}

TEST(CaptureWindowTest, MaxDurationBeforeTheWindowsOwnDuration) {
  CaptureWindowOptions o = Opts(CaptureRange::kSignal, 0, 10, 0);
  o.max_open_ns = 4 * kS;
  CaptureWindow w(o, kT0);
  ExpectEdge(w.Signal(kT0), 1, true, kT0, CaptureTrigger::kSignal);
  EXPECT_EQ(w.next_deadline_ns(), kT0 + 4 * kS);
  ExpectEdge(w.Tick(kT0 + 4 * kS), 1, false, kT0 + 4 * kS, CaptureTrigger::kLimit);
}

TEST(CaptureWindowTest, SizeLimitClosesOnlyTheOpenWindow) {
  CaptureWindow w(Opts(CaptureRange::kSignal, 0, 0, 0), kT0);
  EXPECT_FALSE(w.SizeLimit(kT0));
  ExpectEdge(w.Signal(kT0 + 1), 1, true, kT0 + 1, CaptureTrigger::kSignal);
  ExpectEdge(w.SizeLimit(kT0 + 2), 1, false, kT0 + 2, CaptureTrigger::kLimit);
  ExpectEdge(w.Signal(kT0 + 3), 2, true, kT0 + 3, CaptureTrigger::kSignal);
}

TEST(SlowStepRuleTest, FactorOfTheMedianOnceThereIsHistory) {
  SlowStepRule rule({.threshold_ns = 0, .factor = 3});
  // Fewer than kMinHistory steps: no median, nothing is slow by the factor.
  EXPECT_FALSE(rule.Add(100).slow);
  for (uint64_t d : {10u, 11u, 9u, 10u}) EXPECT_FALSE(rule.Add(d).slow);
  // History 100, 10, 11, 9, 10: median 10.
  const SlowStepRule::Verdict at_limit = rule.Add(30);
  EXPECT_EQ(at_limit.median_ns, 10u);
  EXPECT_FALSE(at_limit.slow);  // 3x exactly is not longer than 3x
  const SlowStepRule::Verdict slow = rule.Add(31);
  EXPECT_TRUE(slow.slow);
  EXPECT_EQ(slow.median_ns, 10u);  // 100, 10, 11, 9, 10, 30: (10 + 11) / 2 rounded down
  EXPECT_EQ(rule.steps(), 7u);
}

TEST(SlowStepRuleTest, ThresholdAloneAndTheHistoryWindow) {
  SlowStepRule rule({.threshold_ns = 50, .factor = 0});
  // Warm-up: the first kMinHistory steps are not flagged, however long.
  for (size_t i = 0; i < SlowStepRule::kMinHistory; ++i) EXPECT_FALSE(rule.Add(5000).slow);
  EXPECT_FALSE(rule.Add(50).slow);
  EXPECT_TRUE(rule.Add(51).slow);  // over the threshold, though the median is 5000
  // Only the last kHistory steps count: after 32 steps of 1000, a step of 2000 is not slow by
  // a factor of 3 even though the first steps were short.
  SlowStepRule drift({.threshold_ns = 0, .factor = 3});
  for (int i = 0; i < 40; ++i) drift.Add(100);
  for (size_t i = 0; i < SlowStepRule::kHistory; ++i) drift.Add(1000);
  const SlowStepRule::Verdict v = drift.Add(2000);
  EXPECT_EQ(v.median_ns, 1000u);
  EXPECT_FALSE(v.slow);
  EXPECT_TRUE(drift.Add(3001).slow);
}

}  // namespace
}  // namespace warpscope
