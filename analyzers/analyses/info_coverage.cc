// The sampling coverage lines of `warpscope info` (info_coverage.h).
#include "analyzers/analyses/info_coverage.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace warpscope {
namespace {

// Trace time with the precision a hole needs to be found in a timeline: "+876.48 ms", also
// past a second (FormatDuration would give "+1.03 s"); below a millisecond, "+8.00 us".
std::string TraceTime(uint64_t ns) {
  if (ns < 1000000) return absl::StrCat("+", FormatDuration(ns));
  return absl::StrFormat("+%.2f ms", ns / 1e6);
}

double Percent(const CoverageTotals& t) { return 100 * t.time_fraction(); }

}  // namespace

InfoSamplingCoverage ComputeInfoSamplingCoverage(const TraceModel& model, bool pm, bool pc) {
  InfoSamplingCoverage out;
  if (pm) out.pm.emplace(PmSampledSpans(ExtractActiveWarpSamples(PmInputsOf(model))));
  if (pc) out.pc.emplace(PcSampledSpans(model));
  if (!pm && !pc) return out;
  absl::Status read = ForEachEvent<KernelEvent>(model, [&](const KernelEvent& k) {
    if (out.pm) out.pm->AddKernel(k.device_id, k.start_ns, k.duration_ns);
    if (out.pc) out.pc->AddKernel(k.device_id, k.start_ns, k.duration_ns);
  });
  if (!read.ok()) {
    out.problem = absl::StrCat("coverage not computed: the kernels could not be read again (",
                               read.message(), ")");
  }
  return out;
}

void AppendCoverageText(const SamplingCoverage& coverage, std::string_view sampling,
                        std::string_view figures, std::string& out) {
  const CoverageTotals& t = coverage.totals();
  if (t.launches == 0) {
    out += "  kernel time sampled: no kernels in the trace\n";
    return;
  }
  absl::StrAppendFormat(&out, "  kernel time sampled: %.1f%% (%s of %s), %u of %u launches\n",
                        Percent(t), FormatDuration(t.covered_ns), FormatDuration(t.kernel_ns),
                        t.covered_launches, t.launches);
  const uint64_t holes = coverage.hole_count();
  if (holes > 0) {
    absl::StrAppend(&out, "  kernel work without samples: ", holes,
                    holes == 1 ? " stretch, " : " stretches, ",
                    FormatDuration(t.kernel_ns - t.covered_ns), " of kernel time; ",
                    t.launches - t.covered_launches, " launches without any sample\n");
    Table table({{"Device", true, CellKind::kInt},
                 {"From", true, CellKind::kString},
                 {"To", true, CellKind::kString},
                 {"Kernel time", true, CellKind::kString},
                 {"Launches", true, CellKind::kInt},
                 {"Gap", true, CellKind::kString},
                 {"Where", false, CellKind::kString}});
    uint64_t listed_ns = 0;
    const std::vector<SamplingHole> listed = coverage.LargestHoles(kInfoHolesListed);
    for (const SamplingHole& h : listed) {
      listed_ns += h.kernel_ns;
      table.AddRow({h.device_id, TraceTime(h.begin_ns), TraceTime(h.end_ns),
                    FormatDuration(h.kernel_ns), h.launches,
                    h.gap_ns > 0 ? FormatDuration(h.gap_ns) : std::string(),
                    std::string(HolePlaceName(h.place))});
    }
    for (absl::string_view line : absl::StrSplit(table.RenderText(), '\n', absl::SkipEmpty())) {
      absl::StrAppend(&out, "    ", line, "\n");
    }
    if (holes > listed.size()) {
      absl::StrAppend(&out, "    ... and ", holes - listed.size(), " more stretches (",
                      FormatDuration(t.kernel_ns - t.covered_ns - listed_ns), " of kernel time)\n");
    }
  }
  if (t.low()) {
    absl::StrAppendFormat(&out,
                          "  LOW COVERAGE: %s samples saw %.1f%% of the kernel time (%u of %u "
                          "launches); %s describe the sampled launches only\n",
                          sampling, Percent(t), t.covered_launches, t.launches, figures);
  }
}

namespace {

// An open hole has no gap: an empty cell. A function, not a conditional of two Cell
// temporaries in the row, which makes GCC 12 warn falsely (-Wmaybe-uninitialized).
Cell GapCell(uint64_t ns) { return ns > 0 ? Cell(ns) : Cell(); }

}  // namespace

Table SamplingCoverageTable() {
  return Table({{"sampling", false, CellKind::kString},
                {"launches", true, CellKind::kInt},
                {"covered_launches", true, CellKind::kInt},
                {"kernel_ns", true, CellKind::kInt},
                {"covered_ns", true, CellKind::kInt},
                {"covered_pct", true, CellKind::kReal},
                {"low_coverage", false, CellKind::kBool},
                {"holes_not_listed", true, CellKind::kInt},
                {"holes_not_listed_kernel_ns", true, CellKind::kInt}});
}

Table SamplingHolesTable() {
  return Table({{"sampling", false, CellKind::kString},
                {"device_id", true, CellKind::kInt},
                {"place", false, CellKind::kString},
                {"begin_ns", true, CellKind::kInt},
                {"end_ns", true, CellKind::kInt},
                {"kernel_ns", true, CellKind::kInt},
                {"launches", true, CellKind::kInt},
                {"gap_ns", true, CellKind::kInt}});
}

void AddCoverageRows(const SamplingCoverage& coverage, std::string_view sampling,
                     Table& coverage_table, Table& holes_table) {
  const CoverageTotals& t = coverage.totals();
  uint64_t listed_ns = 0;
  const std::vector<SamplingHole> listed = coverage.LargestHoles(kInfoHolesListed);
  for (const SamplingHole& h : listed) {
    listed_ns += h.kernel_ns;
    holes_table.AddRow({std::string(sampling), h.device_id, std::string(HolePlaceName(h.place)),
                        h.begin_ns, h.end_ns, h.kernel_ns, h.launches,
                        GapCell(h.gap_ns)});
  }
  coverage_table.AddRow({std::string(sampling), t.launches, t.covered_launches, t.kernel_ns,
                         t.covered_ns, Cell(std::round(Percent(t) * 100) / 100),
                         Cell::Bool(t.low()), coverage.hole_count() - listed.size(),
                         t.kernel_ns - t.covered_ns - listed_ns});
}

}  // namespace warpscope
