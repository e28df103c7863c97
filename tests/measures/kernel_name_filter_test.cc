// KernelNameFilter (`--kernel`): RE2 syntax searched in the demangled name, errors that
// repeat RE2's reason, and templated names of 100,000 characters through the occupancy and
// tail reports (std::regex overflowed the stack on names a tenth that long).
#include "analyzers/measures/kernel_name_filter.h"

#include <string>
#include <utility>

#include "analyzers/analyses/occupancy.h"
#include "analyzers/analyses/tail.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"
#include "tests/tail/pm_scenario.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::warpscope::testing::ScenarioWire;
using ::warpscope::testing::WriteTempFile;

bool Matches(const std::string& pattern, const std::string& name) {
  absl::StatusOr<KernelNameFilter> filter = KernelNameFilter::Create(pattern);
  EXPECT_TRUE(filter.ok()) << filter.status();
  return filter.ok() && filter->Matches(name);
}

TEST(KernelNameFilterTest, SearchesAnywhereInTheName) {
  const std::string name = "void gemm<float, 128>(float const*, float*, int)";
  EXPECT_TRUE(Matches("", name));
  EXPECT_TRUE(Matches("gemm", name));
  EXPECT_TRUE(Matches("float, 128", name));
  EXPECT_FALSE(Matches("^gemm", name));
  EXPECT_TRUE(Matches("^void gemm", name));
  EXPECT_TRUE(Matches(R"(int\)$)", name));
  EXPECT_FALSE(Matches("GEMM", name));
  EXPECT_TRUE(Matches("(?i)GEMM", name));
  EXPECT_TRUE(Matches(R"(\Q<float, 128>\E)", name));
  EXPECT_TRUE(Matches(R"(gemm<\w+, \d+>)", name));
}

TEST(KernelNameFilterTest, EqualNamesInDifferentStorageGetTheSameAnswer) {
  absl::StatusOr<KernelNameFilter> filter = KernelNameFilter::Create("relu");
  ASSERT_TRUE(filter.ok());
  const std::string a = "relu_kernel(float*)";
  const std::string b = a;
  const std::string c = "gelu_kernel(float*)";
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(filter->Matches(a));
    EXPECT_TRUE(filter->Matches(b));
    EXPECT_FALSE(filter->Matches(c));
    EXPECT_TRUE(filter->Matches(std::string_view(a).substr(0, 4)));
    EXPECT_FALSE(filter->Matches(std::string_view(a).substr(1, 4)));
  }
}

TEST(KernelNameFilterTest, InvalidPatternsRepeatRe2sReason) {
  for (const auto& [pattern, reason] : {std::pair<std::string, std::string>{"(", "missing ): ("},
                                        {"[a-", "missing ]: [a-"},
                                        {"a**", "bad repetition operator: **"},
                                        {R"((a)\1)", "invalid escape sequence: \\1"},
                                        {"(?=x)", "invalid perl operator: (?="}}) {
    SCOPED_TRACE(pattern);
    absl::StatusOr<KernelNameFilter> filter = KernelNameFilter::Create(pattern);
    ASSERT_FALSE(filter.ok());
    EXPECT_EQ(filter.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(filter.status().message());
    EXPECT_THAT(message,
                StartsWith("--kernel '" + pattern + "' is not a valid regular expression"));
    EXPECT_THAT(message, HasSubstr(reason));
  }
}

// The PM scenario with every kernel name inside a template argument list of 100,000
// characters, as heavily templated kernels (CUTLASS, Thrust) come out of the demangler.
TraceModel LoadScenarioWithHugeNames() {
  v1::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(ScenarioWire()));
  std::string args;
  while (args.size() < 100000) args += "cute::tuple<cute::C<128>, cute::C<64>>, ";
  for (v1::TracePacket& packet : *trace.mutable_packet()) {
    if (!packet.has_interned_string()) continue;
    v1::InternedString* s = packet.mutable_interned_string();
    s->set_value("void ns::kernel<" + args + s->value() + ">()");
  }
  absl::StatusOr<TraceModel> model = TraceModel::Load(WriteTempFile(trace.SerializeAsString()));
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

TEST(KernelNameFilterTest, HugeTemplatedNamesThroughOccupancyAndTail) {
  TraceModel model = LoadScenarioWithHugeNames();
  ASSERT_GT(model.kernels.front().name.size(), 100000u);
  const PmInputs in = PmInputsOf(model);
  // `.*` made std::regex recurse once per character.
  const std::string pattern = "^void ns::kernel<.*reduce_imbalanced";

  OccupancyReportOptions occupancy;
  occupancy.kernel_regex = pattern;
  absl::StatusOr<OccupancyReport> rows = BuildOccupancyReport(in, occupancy);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_EQ(rows->kernels_matched, 2u);
  EXPECT_THAT(rows->rows[0].name, HasSubstr("reduce_imbalanced(float const*, int)>()"));
  EXPECT_DOUBLE_EQ(rows->rows[0].theoretical->occupancy, 0.25);

  TailReportOptions tail;
  tail.kernel_regex = pattern;
  absl::StatusOr<TailReport> ranked = BuildTailReportFiltered(in, tail);
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  ASSERT_EQ(ranked->summaries.size(), 1u);
  EXPECT_EQ(ranked->summaries[0].launches, 2u);
  EXPECT_EQ(ranked->summaries[0].launches_with_curve, 2u);

  tail.kernel_regex = "gemm_balanced";
  ranked = BuildTailReportFiltered(in, tail);
  ASSERT_TRUE(ranked.ok());
  ASSERT_EQ(ranked->summaries.size(), 1u);
  EXPECT_EQ(ranked->summaries[0].launches, 2u);
}

}  // namespace
}  // namespace warpscope
