// Helpers of the advise tests: a report from a trace model or from a synthetic trace written
// on the spot, a finding by rule, a kernel of a given name and length.
#ifndef WARPSCOPE_TESTS_ADVISE_ADVISE_TEST_UTIL_H_
#define WARPSCOPE_TESTS_ADVISE_ADVISE_TEST_UTIL_H_

#include <functional>
#include <string>
#include <string_view>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/support/cli_test_util.h"

namespace warpscope::advise_testing {

inline AdviseReport Advise(const TraceModel& model, const AdviseOptions& options = {}) {
  return BuildAdviseReport(model, "t.wst", options);
}

inline const AdviseFinding* FindRule(const AdviseReport& report, std::string_view rule) {
  for (const AdviseFinding& f : report.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

// The trace that `write` builds (no PM samples), loaded; one launch call takes the host
// `launch_api_ns`.
inline absl::StatusOr<TraceModel> WrittenModel(
    const std::function<void(fixtures::SyntheticTraceBuilder&)>& write,
    uint64_t launch_api_ns = 3'000) {
  const std::string path = ::warpscope::testing::MakeTempDir() + "/written.wst";
  fixtures::SyntheticTraceOptions options;
  options.launch_api_ns = launch_api_ns;
  options.pm_interval_ns = 0;
  options.force_overwrite = true;
  std::string error;
  auto b = fixtures::SyntheticTraceBuilder::Create(path, options, &error);
  if (b == nullptr) return absl::InternalError(error);
  write(*b);
  EXPECT_TRUE(b->Finish());
  return TraceModel::Load(path);
}

// Advise on a trace that `write` builds (no PM samples), with `advise_options`; one launch
// call takes the host `launch_api_ns`.
inline AdviseReport AdviseWritten(
    const std::function<void(fixtures::SyntheticTraceBuilder&)>& write,
    const AdviseOptions& advise_options = {}, uint64_t launch_api_ns = 3'000) {
  absl::StatusOr<TraceModel> model = WrittenModel(write, launch_api_ns);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? Advise(*model, advise_options) : AdviseReport{};
}

inline fixtures::KernelSpec NamedKernel(const char* name, uint64_t ns) {
  fixtures::KernelSpec spec;
  spec.name = name;
  spec.duration_ns = ns;
  return spec;
}

}  // namespace warpscope::advise_testing

#endif  // WARPSCOPE_TESTS_ADVISE_ADVISE_TEST_UTIL_H_
