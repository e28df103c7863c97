// What PM and PC sampling saw of a trace's kernels, for `warpscope info`: the share of kernel
// time and launches inside samples, and the stretches of kernel work without any.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_INFO_COVERAGE_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_INFO_COVERAGE_H_

#include <optional>
#include <string>

#include "analyzers/measures/sampling_coverage.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"

namespace warpscope {

// The holes `info` lists, those with the most kernel time; the rest are counted.
inline constexpr size_t kInfoHolesListed = 10;

struct InfoSamplingCoverage {
  std::optional<SamplingCoverage> pm;  // with PM samples
  std::optional<SamplingCoverage> pc;  // with PC sampling
  std::string problem;                 // why the kernels could not be read; "" when they were
};

// Streams the trace's kernels once (ForEachEvent: from the model's table, or from the file
// again when the model did not keep them) past the sampled spans of PM sampling (when `pm`)
// and PC sampling (when `pc`).
InfoSamplingCoverage ComputeInfoSamplingCoverage(const TraceModel& model, bool pm, bool pc);

// The lines under "pm sampling" or "pc sampling": `sampling` is "PM" or "PC", `figures` the
// analyses that rest on the samples.
void AppendCoverageText(const SamplingCoverage& coverage, std::string_view sampling,
                        std::string_view figures, std::string& out);

// The report's tables of coverage: "sampling_coverage" (a row per kind of sampling: sampling,
// launches, covered_launches, kernel_ns, covered_ns, covered_pct, low_coverage,
// holes_not_listed, holes_not_listed_kernel_ns) and "sampling_holes" (the listed holes:
// sampling, device_id, place, begin_ns, end_ns, kernel_ns, launches, gap_ns).
Table SamplingCoverageTable();
Table SamplingHolesTable();
// `coverage`'s rows, its sampling named "pm" or "pc".
void AddCoverageRows(const SamplingCoverage& coverage, std::string_view sampling,
                     Table& coverage_table, Table& holes_table);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_INFO_COVERAGE_H_
