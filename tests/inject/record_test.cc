// Tests for `warpscope record`'s planning (analyzers/lib/record.h).
#include "analyzers/lib/record.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

namespace warpscope {
namespace {

RecordRequest Req() {
  RecordRequest r;
  r.command = {"./app", "--flag"};
  return r;
}

TEST(RecordTest, BuildsEnvironmentAndKeepsUserPreload) {
  RecordRequest r = Req();
  r.delay = "2";
  r.duration = "500ms";
  r.trace = "cuda,nvtx,driver";
  auto plan = BuildRecordPlan(r, {{"LD_PRELOAD", "/usr/lib/libjemalloc.so"}}, "/opt/ws/lib/libwarpscope.so", 42, 7);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["LD_PRELOAD"], "/opt/ws/lib/libwarpscope.so:/usr/lib/libjemalloc.so");
  EXPECT_EQ(plan->env["CUDA_INJECTION64_PATH"], "/opt/ws/lib/libwarpscope.so");
  EXPECT_EQ(plan->env["NVTX_INJECTION64_PATH"], "/opt/ws/lib/libwarpscope.so");
  EXPECT_EQ(plan->env["WARPSCOPE_DELAY"], "2");
  EXPECT_EQ(plan->env["WARPSCOPE_DURATION"], "500ms");
  EXPECT_EQ(plan->env["WARPSCOPE_TRACE"], "cuda,nvtx,driver");
  EXPECT_EQ(plan->env["WARPSCOPE_LAUNCHER_PID"], "42");
  EXPECT_EQ(plan->env["WARPSCOPE_START_NS"], "7");
  EXPECT_TRUE(plan->warnings.empty());
}

TEST(RecordTest, PmSamplingFlagsBecomeEnvironment) {
  RecordRequest r = Req();
  r.pm_sampling = true;
  r.pm_interval = "20us";
  r.pm_buffer = "64M";
  auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["WARPSCOPE_PM_SAMPLING"], "1");
  EXPECT_EQ(plan->env["WARPSCOPE_PM_INTERVAL"], "20us");
  EXPECT_EQ(plan->env["WARPSCOPE_PM_BUFFER"], "64M");
  EXPECT_EQ(plan->env.count("WARPSCOPE_PM_METRICS"), 0u);
}

TEST(RecordTest, NvtxCaptureImpliesNvtxRange) {
  RecordRequest r = Req();
  r.nvtx_capture = "train@dom";
  auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["WARPSCOPE_CAPTURE_RANGE"], "nvtx");
  EXPECT_EQ(plan->env["WARPSCOPE_NVTX_CAPTURE"], "train@dom");
}

TEST(RecordTest, ClearErrors) {
  struct Case {
    void (*set)(RecordRequest&);
    const char* expect;
  } cases[] = {
      {[](RecordRequest& r) { r.delay = "soon"; }, "-y/--delay 'soon' is not a number of seconds"},
      {[](RecordRequest& r) { r.capture_range = "gpu"; }, "-c/--capture-range 'gpu' is not"},
      {[](RecordRequest& r) { r.capture_range = "nvtx"; }, "-c nvtx needs the range"},
      {[](RecordRequest& r) { r.capture_range_end = "repeat"; }, "needs -c cudaProfilerApi"},
      {[](RecordRequest& r) { r.trace = "cuda,osrt"; }, "-t/--trace 'cuda,osrt' is not"},
      {[](RecordRequest& r) { r.capture_signal = "KILL"; }, "--capture-signal 'KILL'"},
      {[](RecordRequest& r) { r.flush_interval_ms = "abc"; }, "WARPSCOPE_FLUSH_INTERVAL_MS='abc'"},
      {[](RecordRequest& r) { r.command.clear(); }, "needs a command"},
      {[](RecordRequest& r) { r.pm_interval = "20us"; }, "need --pm-sampling"},
      {[](RecordRequest& r) {
         r.pm_sampling = true;
         r.pm_interval = "5xs";
       },
       "--pm-interval '5xs': unknown unit 'xs'"},
      {[](RecordRequest& r) {
         r.pm_sampling = true;
         r.pm_buffer = "9G";
       },
       "--pm-buffer '9G': out of range"},
      {[](RecordRequest& r) {
         r.pm_sampling = true;
         r.pm_metrics = "a,,b";
       },
       "--pm-metrics 'a,,b'"},
      {[](RecordRequest& r) {
         r.capture_range = "signal";
         r.nvtx_capture = "x";
       },
       "only applies with -c nvtx"},
  };
  for (const Case& c : cases) {
    RecordRequest r = Req();
    c.set(r);
    auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
    ASSERT_FALSE(plan.ok()) << c.expect;
    EXPECT_NE(plan.status().message().find(c.expect), std::string::npos) << plan.status();
  }
}

TEST(RecordTest, WarnsWhenReplacingInjectionPaths) {
  auto plan = BuildRecordPlan(Req(), {{"NVTX_INJECTION64_PATH", "/usr/lib/libcupti.so"}}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_NE(plan->warnings[0].find("NVTX_INJECTION64_PATH"), std::string::npos);
}

TEST(RecordTest, UserWarpscopeVariablesAreValidatedToo) {
  auto plan = BuildRecordPlan(Req(), {{"WARPSCOPE_DELAY", "x"}}, "/s.so", 1, 1);
  EXPECT_FALSE(plan.ok());
}

TEST(RecordTest, ExpectedTracePath) {
  auto p = ExpectedTracePath("/tmp/run_%p_%h.wst", 1234, "node7");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, "/tmp/run_1234_node7.wst");
  auto q = ExpectedTracePath("/tmp/run", 1, "h");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, "/tmp/run.wst");
}

TEST(RecordTest, ChildExitCode) {
  EXPECT_EQ(ChildExitCode(3 << 8), 3);
  EXPECT_EQ(ChildExitCode(SIGTERM), 128 + SIGTERM);
}

TEST(RecordTest, FindShimExplainsWhatIsMissing) {
  auto s = FindShim("/nonexistent/bin/warpscope", nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("WARPSCOPE_SHIM"), std::string::npos);
}

}  // namespace
}  // namespace warpscope
