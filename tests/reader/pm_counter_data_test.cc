// Raw PM samples (PmCounterData) at load time: evaluated with CUPTI's host API in a child
// process; a trace whose counter data is corrupt, or a machine without CUPTI, loses those
// samples with a counter and a reason, never the analysis.
#include <cstdlib>
#include <string>
#include <utility>

#include "analyzers/model/cupti_host.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::warpscope::testing::TextprotoToWire;
using ::warpscope::testing::WriteTempFile;

uint64_t ImportCounter(const TraceModel& m, const std::string& name) {
  for (const StatCounter& c : m.import_counters) {
    if (c.name == name) return c.value;
  }
  return 0;
}

// A metric set for raw samples and one counter data image whose bytes are `image` (textproto
// escapes), with two samples listed.
std::string RawTrace(const std::string& chip, const std::string& image) {
  return R"pb(
    packet { header { format_major: 1 producer: "fixture:pm_raw" } }
    packet {
      pm_metric_set {
        id: 1 device_id: 0 interval_ns: 200000 chip_name: ")pb" + chip + R"pb("
        metric_names: "sm__warps_active.avg.per_cycle_active"
      }
    }
    packet {
      pm_counter_data {
        metric_set_id: 1 image: ")pb" + image + R"pb("
        sample_index: 0 sample_index: 1
        start_ns: 1000 start_ns: 201000 duration_ns: 200000 duration_ns: 200000
      }
    }
    packet { pm_counter_data { metric_set_id: 7 image: "x" sample_index: 0 start_ns: 1 duration_ns: 1 } }
    packet { pm_counter_data { metric_set_id: 1 image: "x" sample_index: 0 sample_index: 1 start_ns: 1 duration_ns: 1 } }
    packet { end_of_trace { reason: END_REASON_EXIT } }
  )pb";
}

TraceModel Load(const std::string& textproto) {
  absl::StatusOr<TraceModel> m = TraceModel::Load(WriteTempFile(TextprotoToWire(textproto)));
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(*m);
}

TEST(PmCounterDataTest, WithoutCuptiTheSamplesStayRawAndTheReasonSaysWhatToInstall) {
  // First in this file, before anything loads libcupti in this process (the search runs
  // once), and in a child of its own.
  EXPECT_EXIT(
      {
        setenv(kCuptiLibraryEnv, "/nonexistent/libcupti.so.13", 1);
        const TraceModel m = Load(RawTrace("GH100", "A"));
        const std::string& why = m.pm_samples_unavailable;
        // A build without the CUDA toolkit (WARPSCOPE_ANALYZERS_ONLY) cannot load CUPTI at
        // all and says so; a build with it names the package and the variable that find it.
        const bool says_what_to_install =
            why.find("built without the CUDA toolkit") != std::string::npos
                ? why.find("use a warpscope built with CUDA 13") != std::string::npos
                : why.find("nvidia-cuda-cupti") != std::string::npos &&
                      why.find("WARPSCOPE_CUPTI_LIBRARY") != std::string::npos;
        const bool ok = m.pm_samples.empty() &&
                        ImportCounter(m, "model.pm_raw_samples_not_evaluated") == 2 &&
                        says_what_to_install;
        std::fprintf(stderr, "%s\n", m.pm_samples_unavailable.c_str());
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(PmCounterDataTest, ASetWithTheProcesssValuesKeepsThemAndEvaluatesNothing) {
  // Recorded with WARPSCOPE_PM_EVALUATE=both: the raw samples are not evaluated (the image
  // here would crash CUPTI), so nothing is lost or reported, with or without CUPTI.
  std::string trace = RawTrace("GH100", std::string(64, 'A'));
  trace.insert(trace.find("    packet {\n      pm_counter_data"),
               "    packet { pm_sample { metric_set_id: 1 start_ns: 1000 duration_ns: 200000 "
               "values: 48 } }\n");
  const TraceModel m = Load(trace);
  ASSERT_EQ(m.pm_samples.size(), 1u);
  EXPECT_EQ(m.pm_samples[0].values[0], 48.0);
  EXPECT_EQ(ImportCounter(m, "model.pm_raw_samples_superseded"), 2u);
  EXPECT_EQ(ImportCounter(m, "model.pm_raw_samples_evaluated"), 0u);
  EXPECT_EQ(ImportCounter(m, "model.pm_raw_samples_not_evaluated"), 0u);
  EXPECT_EQ(m.pm_samples_unavailable, "");
}

TEST(PmCounterDataTest, ACorruptImageCostsItsSamplesNotTheAnalysis) {
  if (!CuptiHostLibraryPath().ok()) GTEST_SKIP() << CuptiHostLibraryPath().status();
  // CUPTI reads past a junk image of this size and dies (SIGSEGV): in the child.
  const TraceModel m = Load(RawTrace("GH100", std::string(64, 'A')));
  EXPECT_TRUE(m.pm_samples.empty());
  EXPECT_EQ(ImportCounter(m, "model.pm_raw_samples_evaluated"), 0u);
  EXPECT_EQ(ImportCounter(m, "model.pm_raw_samples_not_evaluated") +
                ImportCounter(m, "model.pm_raw_sample_evaluation_errors"),
            2u);
  EXPECT_EQ(ImportCounter(m, "model.pm_raw_records_malformed"), 2u);  // no set; unequal arrays
  EXPECT_THAT(m.pm_samples_unavailable, HasSubstr("2 raw PM samples could not be evaluated"));
}

TEST(PmCounterDataTest, AnUnknownChipIsNamed) {
  if (!CuptiHostLibraryPath().ok()) GTEST_SKIP() << CuptiHostLibraryPath().status();
  const TraceModel m = Load(RawTrace("NOT_A_CHIP", "A"));
  EXPECT_TRUE(m.pm_samples.empty());
  EXPECT_EQ(ImportCounter(m, "model.pm_raw_samples_not_evaluated"), 2u);
  EXPECT_THAT(m.pm_samples_unavailable, HasSubstr("NOT_A_CHIP"));
}

}  // namespace
}  // namespace warpscope
