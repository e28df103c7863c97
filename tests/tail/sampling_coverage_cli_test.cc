// What the sampled figures rest on, on the recorded traces as users read them: `info` lists the
// holes in PM sampling of examples/traces/cuda13.0_sm90/pipeline_pm.wst (samples only from
// 876 to 1113 ms of kernels that run from 328 to 1146 ms, with a 134 ms hole between) and says
// the coverage is low; occupancy and tail give each kernel's covered launches and time and
// flag them; on stall_kernels.wst PC sampling covers every launch and nothing is flagged.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace ::warpscope::testing;  // NOLINT(build/namespaces): the test helpers.

std::string PmTrace() { return SourceDir() + "/examples/traces/cuda13.0_sm90/pipeline_pm.wst"; }
std::string PcTrace() { return SourceDir() + "/examples/traces/cuda13.0_sm90/stall_kernels.wst"; }

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The kernels run from 328.04 to 1146.26 ms; PM samples cover 876.48-897.40 ms and
// 1031.22-1113.12 ms. The recorder counted no gap (it did not count the samples it discarded
// as too long), so the holes come from the samples themselves.
TEST(SamplingCoverageCliTest, InfoListsTheHolesOfTheBundledPmTrace) {
  CliResult r = RunCli("info " + PmTrace());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("  gaps the recorder counted: 0 ns; hardware buffer overflows: 0\n"));
  EXPECT_THAT(r.out, HasSubstr("  kernel time sampled: 12.7% (49.42 ms of 388.92 ms), 117 of 900 "
                               "launches\n"));
  EXPECT_THAT(r.out, HasSubstr("  kernel work without samples: 3 stretches, 339.50 ms of kernel "
                               "time; 783 launches without any sample\n"));
  // The kernel work in each stretch without samples, and the 133.8 ms between two samples.
  EXPECT_THAT(r.out, HasSubstr("\n         0   +328.04 ms   +876.48 ms    260.41 ms       601"
                               "             before the first sample\n"));
  EXPECT_THAT(r.out, HasSubstr("\n         0   +897.90 ms  +1029.86 ms     63.17 ms       147"
                               "  133.82 ms  between samples\n"));
  EXPECT_THAT(r.out, HasSubstr("\n         0  +1113.12 ms  +1146.26 ms     15.92 ms        37"
                               "             after the last sample\n"));
  EXPECT_THAT(r.out, HasSubstr("  LOW COVERAGE: PM samples saw 12.7% of the kernel time (117 of "
                               "900 launches); occupancy and tail describe the sampled launches "
                               "only\n"));

  CliResult json = RunCli("info -f json " + PmTrace());
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"sampling_coverage\":[{\"sampling\":\"pm\",\"launches\":900,"
                                  "\"covered_launches\":117,"));
  EXPECT_THAT(json.out, HasSubstr("\"covered_pct\":12.71,\"low_coverage\":true,"));
  EXPECT_THAT(json.out,
              HasSubstr("{\"sampling\":\"pm\",\"device_id\":0,\"place\":\"between samples\","));
  EXPECT_THAT(json.out, HasSubstr("\"kernel_ns\":63172958,\"launches\":147,\"gap_ns\":133820137}"));
  EXPECT_THAT(json.out, HasSubstr("\"holes_not_listed\":0,"));
}

// Each row's figure rests on 39 of its 300 launches, about 13% of its time: every row says so.
TEST(SamplingCoverageCliTest, OccupancyAndTailSayTheyRestOnFewLaunches) {
  CliResult occupancy = RunCli("occupancy " + PmTrace());
  ASSERT_EQ(occupancy.exit_code, 0) << occupancy.err;
  for (const char* share : {"13.0", "12.6", "12.7"}) {
    EXPECT_THAT(occupancy.out, HasSubstr(absl::StrCat(
                                   "LOW COVERAGE: the figures rest on 39 of 300 launches (", share,
                                   "% of the kernel's time) with PM samples; the "
                                   "launches without them may differ\n")));
  }
  CliResult csv = RunCli("occupancy -f csv " + PmTrace());
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, HasSubstr(",gap_pts,covered_launches,covered_time_pct,samples,"));
  EXPECT_EQ(Occurrences(csv.out, ",39,1"), 3) << csv.out;  // 39 launches, 12.6-13.0%

  CliResult tail = RunCli("tail " + PmTrace());
  ASSERT_EQ(tail.exit_code, 0) << tail.err;
  EXPECT_EQ(Occurrences(tail.out, "LOW COVERAGE: the figures rest on "), 3) << tail.out;
  // The material tail keeps its verdict; the coverage qualifies it.
  EXPECT_THAT(tail.out, HasSubstr("likely load imbalance between blocks"));
  EXPECT_THAT(tail.out, HasSubstr("rest on 38 of 300 launches"));
  CliResult tail_json = RunCli("tail -f json " + PmTrace());
  ASSERT_EQ(tail_json.exit_code, 0) << tail_json.err;
  EXPECT_THAT(tail_json.out, HasSubstr("\"with_curve\":38,\"covered_time_pct\":"));
  EXPECT_THAT(tail_json.out, HasSubstr("consider splitting work more evenly or a "
                                       "persistent/work-stealing grid; LOW COVERAGE: "));
}

// PC sampling ran over the whole run (one capture window, one read after it closed): every
// launch is covered and nothing is flagged.
TEST(SamplingCoverageCliTest, StallKernelsAreCoveredByPcSampling) {
  CliResult info = RunCli("info " + PcTrace());
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("pc sampling\n"));
  EXPECT_THAT(info.out, HasSubstr("  kernel time sampled: 100.0% ("));
  EXPECT_THAT(info.out, HasSubstr("), 6 of 6 launches\n"));
  EXPECT_THAT(info.out, Not(HasSubstr("kernel work without samples")));
  EXPECT_THAT(info.out, Not(HasSubstr("LOW COVERAGE")));

  CliResult stalls = RunCli("stalls -f json " + PcTrace());
  ASSERT_EQ(stalls.exit_code, 0) << stalls.err;
  EXPECT_EQ(Occurrences(stalls.out,
                        "\"launches\":1,\"covered_launches\":1,"
                        "\"covered_time_pct\":100,\"low_coverage\":\"\""),
            6)
      << stalls.out;
  CliResult text = RunCli("stalls " + PcTrace());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("launches  covered_launches  covered_time_pct"));
  EXPECT_THAT(text.out, Not(HasSubstr("LOW COVERAGE")));
}

}  // namespace
}  // namespace warpscope
