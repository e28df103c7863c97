// The collector set with fake collectors: which collectors start in which stage and order,
// what a refusal or an exception does, the switches, and that every hook reaches the running
// collectors in registry order. And the NVTX capture range collector, read back from a real
// trace.
#include "libinject/collector_set.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "collectors/activity/activity_controller.h"
#include "collectors/nvtx/nvtx_capture_range.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/writer/trace_writer.h"
#include "tests/collectors/written_trace_test.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// What each fake collector does, and the calls they all saw, in order.
struct FakeBehaviour {
  bool refuse = false;        // OnSessionStart returns false
  bool throw_start = false;   // OnSessionStart throws
  bool throw_flush = false;   // OnFlush throws
};
FakeBehaviour g_behaviour[4];
std::vector<std::string> g_calls;

class FakeCollector final : public SessionListener {
 public:
  FakeCollector(std::string name, int index) : name_(std::move(name)), index_(index) {}
  std::string_view name() const override { return name_; }
  bool OnSessionStart(SessionServices&) override {
    Note("start");
    if (g_behaviour[index_].throw_start) throw std::runtime_error("start");
    return !g_behaviour[index_].refuse;
  }
  void OnCollectorsStarted(size_t optional_running) override {
    Note("started(" + std::to_string(optional_running) + ")");
  }
  void OnStartAbandoned() override { Note("abandoned"); }
  void OnContextCreated(void*, uint32_t context_id, uint32_t device_id) override {
    Note("context " + std::to_string(context_id) + " on " + std::to_string(device_id));
  }
  void OnContextDestroying(void*, uint32_t context_id) override {
    Note("destroying " + std::to_string(context_id));
  }
  void AfterContextDestroying(void*, uint32_t context_id) override {
    Note("after destroying " + std::to_string(context_id));
  }
  void OnModuleLoaded(void*, uint64_t module_id, const void*, size_t size) override {
    Note("module " + std::to_string(module_id) + " " + std::to_string(size));
  }
  void OnNewDevice(uint32_t device) override { Note("device " + std::to_string(device)); }
  void OnCaptureOpening(const CaptureWindowEdgeRecord& edge, uint64_t thread,
                        uint32_t depth) override {
    Note("opening " + std::to_string(edge.window_id) + " " + std::to_string(thread) + " " +
         std::to_string(depth));
  }
  void OnCaptureClosing(const CaptureWindowEdgeRecord& edge) override {
    Note("closing " + std::to_string(edge.window_id));
  }
  void OnCaptureStart(uint32_t window_id, uint64_t ts) override {
    Note("capture start " + std::to_string(window_id) + " at " + std::to_string(ts));
  }
  void OnCaptureStop(uint32_t window_id, uint64_t ts) override {
    Note("capture stop " + std::to_string(window_id) + " at " + std::to_string(ts));
  }
  void OnFlush() override {
    Note("flush");
    if (g_behaviour[index_].throw_flush) throw std::runtime_error("flush");
  }
  void OnShutdown() override { Note("shutdown"); }
  void OnForkChild() override { Note("fork"); }

 private:
  void Note(const std::string& what) { g_calls.push_back(name_ + ": " + what); }
  std::string name_;
  int index_;
};

template <int kIndex>
std::unique_ptr<SessionListener> MakeFake() {
  static const char* const kNames[] = {"subscriber", "tracer", "sampler_a", "sampler_b"};
  return std::make_unique<FakeCollector>(kNames[kIndex], kIndex);
}

// One collector per stage, and two optional ones with their own switches.
constexpr CollectorRegistration kRegistry[] = {
    {"subscriber", "", &MakeFake<0>, CollectorStage::kBeforeTrace},
    {"tracer", "", &MakeFake<1>, CollectorStage::kRequired},
    {"sampler_a", "WS_TEST_SAMPLER_A", &MakeFake<2>},
    {"sampler_b", "WS_TEST_SAMPLER_B", &MakeFake<3>, CollectorStage::kOptional,
     /*kernel_records_throughout=*/true},
};

// The services a collector is lent; writer() only when the test gives one.
class FakeServices final : public SessionServices {
 public:
  explicit FakeServices(TraceWriter* writer = nullptr) : writer_(writer) {}
  TraceWriter& writer() override {
    if (writer_ == nullptr) std::abort();
    return *writer_;
  }
  uint64_t NowNs() const override { return 0; }
  std::string GetConfig(std::string_view) const override { return ""; }
  void Report(Severity, std::string_view, std::string_view) override {}
  void ReportStartError(std::string_view) override {}
  const CollectorOptions& options() const override { return options_; }
  const ActivityOptions& activity_options() const override { return activity_; }
  SessionListener& callback_target() override { std::abort(); }

  CollectorOptions options_;

 private:
  TraceWriter* writer_;
  ActivityOptions activity_;
};

class CollectorSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_calls.clear();
    for (FakeBehaviour& b : g_behaviour) b = FakeBehaviour{};
  }
  // `a` and `b`: the values of the two switches (nullptr = unset).
  void Select(const char* a, const char* b) {
    set_.Select(
        [a, b](const char* name) -> const char* {
          return std::string_view(name) == "WS_TEST_SAMPLER_A" ? a : b;
        },
        [this](std::string_view line) { lines_.emplace_back(line); });
  }
  // Every stage, as the session runs them; false when a stage gave up.
  bool StartAll() {
    if (!set_.Start(CollectorStage::kBeforeTrace, services_)) return false;
    if (!set_.Start(CollectorStage::kRequired, services_)) return false;
    set_.Start(CollectorStage::kOptional, services_);
    set_.FinishStart();
    return true;
  }

  FakeServices services_;
  std::vector<std::string> failures_;
  std::vector<std::string> lines_;
  CollectorSet set_{kRegistry, [this](std::string_view name, std::string_view message) {
                      failures_.push_back(std::string(name) + ": " + std::string(message));
                    }};
};

TEST_F(CollectorSetTest, StagesStartInRegistryOrderAndOptionalOnesBySwitch) {
  ASSERT_TRUE(set_.Start(CollectorStage::kBeforeTrace, services_));
  EXPECT_THAT(g_calls, ElementsAre("subscriber: start"));  // nothing else before the trace
  Select("1", nullptr);
  ASSERT_TRUE(set_.Start(CollectorStage::kRequired, services_));
  set_.Start(CollectorStage::kOptional, services_);
  set_.FinishStart();
  EXPECT_THAT(g_calls, ElementsAre("subscriber: start", "tracer: start", "sampler_a: start",
                                   "subscriber: started(1)", "tracer: started(1)",
                                   "sampler_a: started(1)"));
  EXPECT_THAT(set_.running(), ElementsAre("subscriber", "tracer", "sampler_a"));
  EXPECT_THAT(lines_, IsEmpty());
  EXPECT_THAT(failures_, IsEmpty());
}

TEST_F(CollectorSetTest, ASwitchThatIsNotABooleanIsOneLineAndLeavesThatCollectorOff) {
  Select("maybe", "on");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_THAT(lines_[0], StartsWith("warpscope: WS_TEST_SAMPLER_A="));
  EXPECT_THAT(lines_[0], HasSubstr("is not a boolean"));
  EXPECT_THAT(lines_[0], HasSubstr("; sampler_a stays off"));
  EXPECT_TRUE(set_.kernel_records_throughout());  // sampler_b is on
  ASSERT_TRUE(StartAll());
  EXPECT_THAT(set_.running(), ElementsAre("subscriber", "tracer", "sampler_b"));
}

TEST_F(CollectorSetTest, KernelRecordsThroughoutOnlyWhenTheCollectorThatNeedsThemIsOn) {
  Select("yes", "0");
  EXPECT_FALSE(set_.kernel_records_throughout());
  Select(nullptr, "true");
  EXPECT_TRUE(set_.kernel_records_throughout());
}

TEST_F(CollectorSetTest, ARefusalBeforeTheTraceStopsTheStart) {
  g_behaviour[0].refuse = true;
  EXPECT_FALSE(set_.Start(CollectorStage::kBeforeTrace, services_));
  EXPECT_THAT(set_.running(), IsEmpty());
  EXPECT_THAT(failures_, IsEmpty());  // the collector says why itself
}

TEST_F(CollectorSetTest, ARequiredCollectorThatThrowsStopsTheStartAndIsReported) {
  g_behaviour[1].throw_start = true;
  Select("1", "1");
  EXPECT_FALSE(StartAll());
  EXPECT_THAT(failures_,
              ElementsAre("tracer: warpscope: collector 'tracer' failed to start and was disabled"));
  set_.AbandonStart();
  EXPECT_THAT(g_calls, ElementsAre("subscriber: start", "tracer: start", "subscriber: abandoned"));
  EXPECT_THAT(set_.running(), IsEmpty());
}

TEST_F(CollectorSetTest, AnOptionalCollectorThatRefusesOrThrowsLeavesTheOthersRunning) {
  g_behaviour[2].throw_start = true;
  g_behaviour[3].refuse = true;
  Select("1", "1");
  ASSERT_TRUE(StartAll());
  EXPECT_THAT(set_.running(), ElementsAre("subscriber", "tracer"));
  EXPECT_THAT(failures_, ElementsAre("sampler_a: warpscope: collector 'sampler_a' failed to "
                                     "start and was disabled"));
  EXPECT_THAT(g_calls, ::testing::Contains("subscriber: started(0)"));
}

TEST_F(CollectorSetTest, AbandonStartGoesInReverseOrder) {
  Select("1", "1");
  ASSERT_TRUE(StartAll());
  g_calls.clear();
  set_.AbandonStart();
  EXPECT_THAT(g_calls, ElementsAre("sampler_b: abandoned", "sampler_a: abandoned",
                                   "tracer: abandoned", "subscriber: abandoned"));
  g_calls.clear();
  set_.OnFlush();
  EXPECT_THAT(g_calls, IsEmpty());
}

TEST_F(CollectorSetTest, EveryHookReachesTheRunningCollectorsInRegistryOrder) {
  Select(nullptr, "1");
  ASSERT_TRUE(StartAll());
  g_calls.clear();
  CaptureWindowEdgeRecord edge{.window_id = 2, .begin = true, .timestamp_ns = 50,
                               .trigger = CaptureTrigger::kNvtx};
  set_.OnContextCreated(nullptr, 1, 0);
  set_.OnModuleLoaded(nullptr, 9, nullptr, 64);
  set_.OnNewDevice(0);
  set_.OnCaptureOpening(edge, 77, 1);
  set_.OnCaptureStart(2, 50);
  edge.begin = false;
  set_.OnCaptureClosing(edge);
  set_.OnCaptureStop(2, 60);
  set_.OnContextDestroying(nullptr, 1);
  set_.AfterContextDestroying(nullptr, 1);
  set_.OnShutdown();
  set_.OnForkChild();
  std::vector<std::string> expected;
  for (const char* hook : {"context 1 on 0", "module 9 64", "device 0", "opening 2 77 1",
                           "capture start 2 at 50", "closing 2", "capture stop 2 at 60",
                           "destroying 1", "after destroying 1", "shutdown", "fork"}) {
    for (const char* name : {"subscriber", "tracer", "sampler_b"}) {
      expected.push_back(std::string(name) + ": " + hook);
    }
  }
  EXPECT_EQ(g_calls, expected);
  EXPECT_THAT(failures_, IsEmpty());
}

TEST_F(CollectorSetTest, ACollectorThatThrowsIsDisabledAndTheOthersGoOn) {
  g_behaviour[1].throw_flush = true;
  Select("1", nullptr);
  ASSERT_TRUE(StartAll());
  g_calls.clear();
  set_.OnFlush();
  EXPECT_THAT(g_calls, ElementsAre("subscriber: flush", "tracer: flush", "sampler_a: flush"));
  EXPECT_THAT(failures_, ElementsAre("tracer: warpscope: collector 'tracer' failed and was disabled"));
  g_calls.clear();
  set_.OnFlush();
  EXPECT_THAT(g_calls, ElementsAre("subscriber: flush", "sampler_a: flush"));
  EXPECT_THAT(set_.running(), ElementsAre("subscriber", "sampler_a"));
}

// The NVTX capture range collector writes the range that opened a window, once it closes.
// The model reads times relative to the header's time base.
constexpr uint64_t kTimeBase = 1000;

class NvtxCaptureRangeTest : public testing::WrittenTraceTest {
 protected:
  void SetUp() override {
    HeaderRecord header;
    header.time_base_ns = kTimeBase;
    ASSERT_NO_FATAL_FAILURE(OpenWriter("nvtx_capture_range_test", header));
    services_ = std::make_unique<FakeServices>(writer_.get());
    services_->options_.nvtx_callbacks = true;
    services_->options_.nvtx_range_name = "capture";
    services_->options_.nvtx_range_domain = "app";
    ASSERT_TRUE(collector_.OnSessionStart(*services_));
  }
  TraceModel CloseAndLoad() { return WrittenTraceTest::CloseAndLoad(1'000'000); }

  std::unique_ptr<FakeServices> services_;
  NvtxCaptureRangeCollector collector_;
};

TEST_F(NvtxCaptureRangeTest, TheRangeThatOpenedTheWindowIsWrittenWhenItCloses) {
  collector_.OnCaptureOpening({.window_id = 1, .begin = true, .timestamp_ns = 5000,
                               .trigger = CaptureTrigger::kNvtx},
                              /*nvtx_thread=*/4242, /*nvtx_depth=*/2);
  // Closed by the duration limit, not by the pop: the range ends with the window.
  collector_.OnCaptureClosing({.window_id = 1, .begin = false, .timestamp_ns = 9000,
                               .trigger = CaptureTrigger::kDuration});
  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.nvtx_ranges.size(), 1u);
  const NvtxRange& r = model.nvtx_ranges[0];
  EXPECT_EQ(r.name, "capture");
  EXPECT_EQ(r.domain, "app");
  EXPECT_EQ(r.start_ns, 5000 - kTimeBase);
  EXPECT_EQ(r.end_ns(), 9000 - kTimeBase);
  EXPECT_EQ(r.depth, 2u);
  EXPECT_TRUE(r.is_push_pop);
}

TEST_F(NvtxCaptureRangeTest, AWindowNotOpenedByTheRangeWritesNothing) {
  collector_.OnCaptureOpening({.window_id = 1, .begin = true, .timestamp_ns = 5000,
                               .trigger = CaptureTrigger::kProcess},
                              0, 0);
  collector_.OnCaptureClosing({.window_id = 1, .begin = false, .timestamp_ns = 9000,
                               .trigger = CaptureTrigger::kProcess});
  TraceModel model = CloseAndLoad();
  EXPECT_THAT(model.nvtx_ranges, IsEmpty());
}

}  // namespace
}  // namespace warpscope
