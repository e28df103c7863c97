// PM sampling collector without a GPU: WARPSCOPE_PM_* parsing, and where libnvperf_host is
// loaded from. The controller's tests are in pm_sampling_controller_test.cc.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "collectors/pm_sampling/pm_sampling_config.h"
#include "collectors/pm_sampling/pm_sampling_controller.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PmSamplingConfigTest, Intervals) {
  uint64_t ns = 0;
  std::string error;
  ASSERT_TRUE(ParsePmInterval("250000", &ns, &error));
  EXPECT_EQ(ns, 250000u);
  ASSERT_TRUE(ParsePmInterval("50us", &ns, &error));
  EXPECT_EQ(ns, 50000u);
  ASSERT_TRUE(ParsePmInterval(" 20 \xC2\xB5s", &ns, &error));
  EXPECT_EQ(ns, 20000u);
  ASSERT_TRUE(ParsePmInterval("0.5ms", &ns, &error));
  EXPECT_EQ(ns, 500000u);
  ASSERT_TRUE(ParsePmInterval("1s", &ns, &error));
  EXPECT_FALSE(ParsePmInterval("100", &ns, &error));  // 100 ns: below 1 us
  EXPECT_FALSE(ParsePmInterval("10min", &ns, &error));
  EXPECT_THAT(error, HasSubstr("unknown unit"));
  EXPECT_FALSE(ParsePmInterval("fast", &ns, &error));
  EXPECT_FALSE(ParsePmInterval("-5us", &ns, &error));
}

TEST(PmSamplingConfigTest, BufferSizes) {
  uint64_t bytes = 0;
  std::string error;
  ASSERT_TRUE(ParsePmBytes("64M", &bytes, &error));
  EXPECT_EQ(bytes, 64u << 20);
  ASSERT_TRUE(ParsePmBytes("512MiB", &bytes, &error));
  EXPECT_EQ(bytes, 512u << 20);
  ASSERT_TRUE(ParsePmBytes("1G", &bytes, &error));
  ASSERT_TRUE(ParsePmBytes("2097152", &bytes, &error));
  EXPECT_FALSE(ParsePmBytes("1K", &bytes, &error));  // below 1 MiB
  EXPECT_FALSE(ParsePmBytes("8G", &bytes, &error));
  EXPECT_FALSE(ParsePmBytes("lots", &bytes, &error));
}

TEST(PmSamplingConfigTest, DecodeBatchHoldsEightPollsOfSamples) {
  PmSamplingConfig config;  // 200 us, 10 ms polls: 50 samples a poll
  EXPECT_EQ(SamplesPerPoll(config), 50u);
  EXPECT_EQ(DecodeBatchFor(config), 512u);
  config.interval_ns = 50000;  // 200 a poll
  EXPECT_EQ(DecodeBatchFor(config), 2048u);
  config.interval_ns = 1000000;  // 10 a poll: the floor
  EXPECT_EQ(DecodeBatchFor(config), 128u);
  config.interval_ns = 1000;  // 10000 a poll: the ceiling
  EXPECT_EQ(DecodeBatchFor(config), 8192u);
  config.max_samples_per_decode = 300;  // WARPSCOPE_PM_DECODE_BATCH wins
  EXPECT_EQ(DecodeBatchFor(config), 300u);
}

TEST(PmSamplingConfigTest, MetricsAndEnvironment) {
  std::vector<std::string> metrics;
  std::string error;
  ASSERT_TRUE(
      ParsePmMetrics("pmsampling:sm__warps_active.avg.per_cycle_active, gr__cycles_elapsed.max",
                     &metrics, &error));
  EXPECT_THAT(metrics,
              ElementsAre("sm__warps_active.avg.per_cycle_active", "gr__cycles_elapsed.max"));
  EXPECT_FALSE(ParsePmMetrics("a,,b", &metrics, &error));

  std::map<std::string, std::string> env = {{"WARPSCOPE_PM_INTERVAL", "20us"},
                                            {"WARPSCOPE_PM_BUFFER", "256M"}};
  auto get = [&](std::string_view name) {
    auto it = env.find(std::string(name));
    return it == env.end() ? std::string() : it->second;
  };
  PmSamplingConfig config;
  ASSERT_TRUE(LoadPmSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.interval_ns, 20000u);
  EXPECT_EQ(config.hardware_buffer_bytes, 256u << 20);
  EXPECT_EQ(config.metrics, DefaultPmMetrics());
  EXPECT_EQ(config.metrics.size(), 3u);
  EXPECT_EQ(config.max_samples_per_decode, 0u);  // sized from the interval
  env["WARPSCOPE_PM_DECODE_BATCH"] = "256";
  ASSERT_TRUE(LoadPmSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.max_samples_per_decode, 256u);
  for (const char* bad : {"8", "100000", "64k"}) {
    env["WARPSCOPE_PM_DECODE_BATCH"] = bad;
    EXPECT_FALSE(LoadPmSamplingConfig(get, &config, &error)) << bad;
    EXPECT_THAT(error, HasSubstr("WARPSCOPE_PM_DECODE_BATCH"));
  }
  env.erase("WARPSCOPE_PM_DECODE_BATCH");
  // The sol set samples every 1 ms unless an interval is given.
  env["WARPSCOPE_PM_METRICS"] = "sol";
  ASSERT_TRUE(LoadPmSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.interval_ns, 20000u);
  env.erase("WARPSCOPE_PM_INTERVAL");
  PmSamplingConfig sol;
  ASSERT_TRUE(LoadPmSamplingConfig(get, &sol, &error)) << error;
  EXPECT_EQ(sol.metrics, SolPmMetrics());
  EXPECT_EQ(sol.interval_ns, kSolPmIntervalNs);
  env.erase("WARPSCOPE_PM_METRICS");
  env["WARPSCOPE_PM_INTERVAL"] = "often";
  EXPECT_FALSE(LoadPmSamplingConfig(get, &config, &error));
  EXPECT_THAT(error, HasSubstr("warpscope: WARPSCOPE_PM_INTERVAL='often'"));
  EXPECT_THAT(error, HasSubstr("PM sampling stays off"));
  env["WARPSCOPE_PM_INTERVAL"] = "200us";
  EXPECT_EQ(config.evaluation, PmEvaluation::kProcess);
  env["WARPSCOPE_PM_EVALUATE"] = "offline";
  ASSERT_TRUE(LoadPmSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.evaluation, PmEvaluation::kOffline);
  env["WARPSCOPE_PM_EVALUATE"] = "both";
  ASSERT_TRUE(LoadPmSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.evaluation, PmEvaluation::kBoth);
  env["WARPSCOPE_PM_EVALUATE"] = "later";
  EXPECT_FALSE(LoadPmSamplingConfig(get, &config, &error));
  EXPECT_THAT(error, HasSubstr("WARPSCOPE_PM_EVALUATE='later': expected process, offline or both"));
}

// A set name stands for its list (docs/sol.md); a list that merely contains one stays a list.
TEST(PmSamplingConfigTest, NamedMetricSetsExpand) {
  std::vector<std::string> metrics;
  std::string error;
  ASSERT_TRUE(ParsePmMetrics(" sol ", &metrics, &error)) << error;
  EXPECT_EQ(metrics, SolPmMetrics());
  ASSERT_EQ(metrics.size(), 18u);
  // The active-warp metrics come first, so occupancy and tail read a sol recording too.
  EXPECT_TRUE(std::equal(DefaultPmMetrics().begin(), DefaultPmMetrics().end(), metrics.begin()));
  for (const SolUnitMetric& unit : kSolUnits) {
    EXPECT_EQ(std::count(metrics.begin(), metrics.end(), unit.metric), 1) << unit.unit;
  }
  std::vector<std::string> sorted = metrics;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a metric twice";
  ASSERT_TRUE(ParsePmMetrics("default", &metrics, &error));
  EXPECT_EQ(metrics, DefaultPmMetrics());
  ASSERT_TRUE(ParsePmMetrics("sol,gr__cycles_elapsed.max", &metrics, &error));
  EXPECT_THAT(metrics, ElementsAre("sol", "gr__cycles_elapsed.max"));

  auto get = [](std::string_view name) {
    return name == "WARPSCOPE_PM_METRICS" ? std::string("sol") : std::string();
  };
  PmSamplingConfig config;
  ASSERT_TRUE(LoadPmSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.metrics, SolPmMetrics());
}

// The layout seen on the H200 machine: PyTorch's wheel brings libcupti and libnvperf_host in
// one folder, the CUDA toolkit has another pair that ld.so.cache finds first.
constexpr char kWheel[] = "/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib";
constexpr char kToolkit[] = "/usr/local/cuda-13.0/targets/x86_64-linux/lib";

std::function<bool(const std::string&)> FilesAt(std::vector<std::string> files) {
  return [files = std::move(files)](const std::string& path) {
    return std::find(files.begin(), files.end(), path) != files.end();
  };
}

std::string Same(const std::string& path) { return path; }

TEST(PerfHostPlanTest, LoadsTheCopyBesideTheWheelsCupti) {
  const std::string wheel = kWheel;
  const PerfHostPlan plan = PlanPerfHostLibrary(
      {"/usr/lib/x86_64-linux-gnu/libc.so.6", wheel + "/libcupti.so.13",
       "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"},
      FilesAt({wheel + "/libnvperf_host.so", std::string(kToolkit) + "/libnvperf_host.so"}),
      Same);
  EXPECT_EQ(plan.load, wheel + "/libnvperf_host.so");
  EXPECT_EQ(plan.error, "");
}

TEST(PerfHostPlanTest, LoadsTheToolkitsCopyForTheToolkitsCupti) {
  const std::string toolkit = kToolkit;
  const PerfHostPlan plan = PlanPerfHostLibrary({toolkit + "/libcupti.so.2025.3.1"},
                                                FilesAt({toolkit + "/libnvperf_host.so"}), Same);
  EXPECT_EQ(plan.load, toolkit + "/libnvperf_host.so");
  EXPECT_EQ(plan.error, "");
}

TEST(PerfHostPlanTest, NothingToDoWhenTheMatchingCopyIsAlreadyLoaded) {
  const std::string wheel = kWheel;
  const PerfHostPlan plan =
      PlanPerfHostLibrary({wheel + "/libcupti.so.13", wheel + "/libnvperf_host.so"},
                          FilesAt({wheel + "/libnvperf_host.so"}), Same);
  EXPECT_EQ(plan.load, "");
  EXPECT_EQ(plan.error, "");
}

TEST(PerfHostPlanTest, RefusesWhenAMismatchedCopyIsAlreadyLoaded) {
  const std::string wheel = kWheel;
  const std::string toolkit = kToolkit;
  const PerfHostPlan plan =
      PlanPerfHostLibrary({wheel + "/libcupti.so.13", toolkit + "/libnvperf_host.so"},
                          FilesAt({wheel + "/libnvperf_host.so", toolkit + "/libnvperf_host.so"}), Same);
  EXPECT_EQ(plan.load, "");
  EXPECT_THAT(plan.error, HasSubstr("warpscope: PM sampling off"));
  EXPECT_THAT(plan.error, HasSubstr(wheel));
  EXPECT_THAT(plan.error, HasSubstr(toolkit));
  EXPECT_THAT(plan.error, HasSubstr("LD_LIBRARY_PATH"));
}

TEST(PerfHostPlanTest, ACopyBesideCuptiThatLinksElsewhereMatchesItsTarget) {
  // libcupti's folder holds a symlink to the real libnvperf_host in a sibling folder; the
  // loaded copy (canonical path) is that target: the right pair, not a mismatch.
  const std::string dir = "/opt/cuda/lib";
  const std::string target = "/opt/cuda/real/libnvperf_host.so.2025.3.1";
  const PerfHostPlan plan = PlanPerfHostLibrary(
      {dir + "/libcupti.so.13", target}, FilesAt({dir + "/libnvperf_host.so"}),
      [&](const std::string& path) {
        return path == dir + "/libnvperf_host.so" ? target : path;
      });
  EXPECT_EQ(plan.error, "");
  EXPECT_EQ(plan.load, "");
}

TEST(PerfHostPlanTest, LeavesTheSearchToCuptiWithoutACopyBesideIt) {
  const std::string wheel = kWheel;
  EXPECT_EQ(PlanPerfHostLibrary({wheel + "/libcupti.so.13"}, FilesAt({}), Same).load, "");
  // Nothing loaded at all (a unit test process): nothing to do.
  const PerfHostPlan none = PlanPerfHostLibrary({}, FilesAt({wheel + "/libnvperf_host.so"}), Same);
  EXPECT_EQ(none.load, "");
  EXPECT_EQ(none.error, "");
}
}  // namespace
}  // namespace warpscope
