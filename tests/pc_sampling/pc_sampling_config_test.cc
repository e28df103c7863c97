// PC sampling collector without a GPU: WARPSCOPE_PC_* parsing, translation into records, and
// the call logger. The controller's tests are in pc_sampling_controller_test.cc.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/pc_sampling/pc_sample_translation.h"
#include "collectors/pc_sampling/pc_sampling_call_logger.h"
#include "collectors/pc_sampling/pc_sampling_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/pc_sampling/fake_pc_sampling_api.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace pc_sampling_test;  // NOLINT(build/namespaces): the fake and its helpers.

TEST(PcSamplingConfigTest, HardwareBufferFollowsThePeriodUnlessSet) {
  constexpr uint64_t kMiB = 1ull << 20;
  PcSamplingConfig config;
  const std::map<uint32_t, uint64_t> expected = {
      {31, 64 * kMiB},  {15, 64 * kMiB},  {12, 64 * kMiB},   {11, 128 * kMiB},
      {10, 256 * kMiB}, {7, 2048 * kMiB}, {6, 4096 * kMiB},  {5, 4096 * kMiB},
      {0, 512 * kMiB},  // CUPTI's period: CUPTI's own buffer
  };
  for (const auto& [period, bytes] : expected) {
    config.period_exponent = period;
    EXPECT_EQ(PcHardwareBufferBytes(config), bytes) << "period 2^" << period;
  }
  config.hardware_buffer_bytes = 8 * kMiB;
  config.period_exponent = 5;
  EXPECT_EQ(PcHardwareBufferBytes(config), 8 * kMiB);
}

TEST(PcSamplingConfigTest, DefaultsAndEnvironment) {
  std::map<std::string, std::string> env;
  auto get = [&](std::string_view name) {
    auto it = env.find(std::string(name));
    return it == env.end() ? std::string() : it->second;
  };
  PcSamplingConfig config;
  std::string error;
  ASSERT_TRUE(LoadPcSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.period_exponent, 15u);
  EXPECT_EQ(config.hardware_buffer_bytes, 0u);  // sized from the period
  EXPECT_EQ(PcHardwareBufferBytes(config), 64ull << 20);

  env["WARPSCOPE_PC_PERIOD"] = " 12 ";
  env["WARPSCOPE_PC_BUFFER_MB"] = "256";
  ASSERT_TRUE(LoadPcSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.period_exponent, 12u);
  EXPECT_EQ(config.hardware_buffer_bytes, 256ull << 20);
  EXPECT_EQ(PcHardwareBufferBytes(config), 256ull << 20);  // set: the period does not change it
  env["WARPSCOPE_PC_PERIOD"] = "5";
  EXPECT_TRUE(LoadPcSamplingConfig(get, &config, &error));
  env["WARPSCOPE_PC_PERIOD"] = "31";
  EXPECT_TRUE(LoadPcSamplingConfig(get, &config, &error));

  env["WARPSCOPE_PC_PERIOD"] = "0";  // CUPTI's default
  EXPECT_TRUE(LoadPcSamplingConfig(get, &config, &error));
  EXPECT_EQ(config.period_exponent, 0u);

  for (const char* bad : {"4", "1", "32", "4096", "fast", "-1", "12x"}) {
    env["WARPSCOPE_PC_PERIOD"] = bad;
    EXPECT_FALSE(LoadPcSamplingConfig(get, &config, &error)) << bad;
    EXPECT_THAT(error, HasSubstr("warpscope: WARPSCOPE_PC_PERIOD='"));
    EXPECT_THAT(error, HasSubstr("PC sampling stays off"));
  }
  env["WARPSCOPE_PC_PERIOD"] = "15";
  for (const char* bad : {"0", "4097", "64M", "lots"}) {
    env["WARPSCOPE_PC_BUFFER_MB"] = bad;
    EXPECT_FALSE(LoadPcSamplingConfig(get, &config, &error)) << bad;
    EXPECT_THAT(error, HasSubstr("WARPSCOPE_PC_BUFFER_MB"));
  }
  env["WARPSCOPE_PC_BUFFER_MB"] = "64";
  EXPECT_FALSE(config.debug);
  env["WARPSCOPE_PC_DEBUG"] = "1";
  ASSERT_TRUE(LoadPcSamplingConfig(get, &config, &error)) << error;
  EXPECT_TRUE(config.debug);
  env["WARPSCOPE_PC_DEBUG"] = "maybe";
  EXPECT_FALSE(LoadPcSamplingConfig(get, &config, &error));
  EXPECT_THAT(error, HasSubstr("WARPSCOPE_PC_DEBUG='maybe'"));
}

TEST(PcSampleTranslationTest, StallReasonTable) {
  PcStallReasonsRecord r = MakePcStallReasonsRecord(
      3,
      {{7, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}, {9, "smsp__pcsamp_sample_count"}});
  EXPECT_EQ(r.device_id, 3u);
  EXPECT_THAT(r.index, ElementsAre(7u, 9u));
  EXPECT_THAT(r.name, ElementsAre("smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                                  "smsp__pcsamp_sample_count"));
}

TEST(PcSampleTranslationTest, BatchInternsNamesOncePerRunAndDropsZeroReasons) {
  PcRawBatch raw;
  raw.total_samples = 100;
  raw.dropped_samples = 2;
  raw.non_user_kernel_samples = 5;
  raw.pcs = {Pc("_Z4axpyPf", 0x10, {{1, 4}, {2, 0}, {3, 6}}), Pc("_Z4axpyPf", 0x20, {{1, 1}}),
             Pc("_Z4gemmv", 0x30, {{5, 9}}), Pc("", 0x40, {{5, 1}})};
  std::vector<std::string> interned;
  PcStringInterner intern = [&](std::string_view s) {
    interned.emplace_back(s);
    return static_cast<uint64_t>(interned.size());
  };
  PcSampleBatchRecord out;
  out.records.resize(9);  // reused record with stale entries
  const uint64_t samples = TranslatePcBatch(raw, {1, 2, 123}, intern, &out);
  EXPECT_EQ(samples, 21u);
  EXPECT_THAT(interned, ElementsAre("_Z4axpyPf", "_Z4gemmv"));
  EXPECT_EQ(out.device_id, 1u);
  EXPECT_EQ(out.context_id, 2u);
  EXPECT_EQ(out.timestamp_ns, 123u);
  EXPECT_EQ(out.total_samples, 100u);
  EXPECT_EQ(out.dropped_samples, 2u);
  EXPECT_EQ(out.non_user_kernel_samples, 5u);
  EXPECT_FALSE(out.hardware_buffer_full);
  ASSERT_EQ(out.records.size(), 4u);
  EXPECT_EQ(out.records[0].function_name_id, 1u);
  EXPECT_EQ(out.records[0].cubin_crc, 0xC0FFEEu);
  EXPECT_EQ(out.records[0].pc_offset, 0x10u);
  EXPECT_THAT(out.records[0].stall_reason_index, ElementsAre(1u, 3u));
  EXPECT_THAT(out.records[0].samples, ElementsAre(4u, 6u));
  EXPECT_EQ(out.records[1].function_name_id, 1u);
  EXPECT_EQ(out.records[2].function_name_id, 2u);
  EXPECT_EQ(out.records[3].function_name_id, 0u);  // no name: no string
}

TEST(PcSamplingCallLoggerTest, LogsEveryCallWithArgumentsResultsAndTotals) {
  auto fake = std::make_unique<FakePcApi>();
  FakePcApi& api = *fake;
  std::vector<std::string> lines;
  PcSamplingCallLogger logger(std::move(fake), [&](std::string_view l) { lines.emplace_back(l); });
  const PcContext ctx = Context(0x20);
  PcRawBatch batch;
  std::vector<PcStallReason> reasons;
  EXPECT_TRUE(logger.Enable(ctx).ok());
  EXPECT_TRUE(logger.GetStallReasons(ctx, &reasons).ok());
  PcContextSettings settings;
  settings.period_exponent = 0;
  settings.hardware_buffer_bytes = 1 << 20;
  EXPECT_TRUE(logger.Configure(ctx, settings).ok());
  const PcBinding binding = logger.BindContext(ctx);
  api.start_result = {PcErrorKind::kOther, "cuptiPCSamplingStart: CUPTI_ERROR_INVALID_OPERATION (3)"};
  EXPECT_FALSE(logger.Start(ctx).ok());
  PcRawBatch full = Batch(40, 0, {Pc("a", 1, {{0, 3}, {4, 2}})});
  full.non_user_kernel_samples = 7;
  api.Queue(ctx, {}, full);
  EXPECT_TRUE(logger.GetData(ctx, &batch).ok());
  logger.UnbindContext(ctx, binding);
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_THAT(lines[0], HasSubstr("cuptiPCSamplingEnable ctx="));
  EXPECT_THAT(lines[0], HasSubstr("-> ok"));
  EXPECT_THAT(lines[1], HasSubstr("count=3 0:smsp__pcsamp_warps_issue_stalled_barrier"));
  EXPECT_THAT(lines[2], HasSubstr("period=default hardware_buffer=1048576"));
  EXPECT_THAT(lines[3], HasSubstr("reads back: SAMPLING_PERIOD=15"));
  EXPECT_THAT(lines[4], HasSubstr("bind-context"));
  EXPECT_THAT(lines[4], HasSubstr("pushed"));
  EXPECT_THAT(lines[5], HasSubstr("cuptiPCSamplingStart"));
  EXPECT_THAT(lines[5], HasSubstr("CUPTI_ERROR_INVALID_OPERATION"));
  EXPECT_THAT(lines[6], HasSubstr("total=40 dropped=0 non_user=7 pcs=1 remaining=0 pc_samples=5"));
  EXPECT_THAT(lines[6], HasSubstr("so far: pcs=1 pc_samples=5"));
  EXPECT_THAT(lines[6], HasSubstr("tid "));
}

}  // namespace
}  // namespace warpscope
