// `warpscope sol`: per-kernel speed of light, the closest unit and a verdict (sol.h).
#include "analyzers/analyses/sol.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/kernel_name_filter.h"
#include "analyzers/measures/sampling_coverage.h"

namespace warpscope {
namespace {

bool IsUnit(size_t u, std::string_view name) { return kSolUnits[u].unit == name; }

// The units a verdict weighs: every unit but "sm" (the most loaded SM sub-unit, which the
// pipes detail) and DRAM's read and write halves (which "dram" holds).
bool Judged(size_t u) {
  return !IsUnit(u, "sm") && !IsUnit(u, "dram_read") && !IsUnit(u, "dram_write");
}

double Pct(double fraction) { return fraction * 100.0; }

// The widest interval, in points, over the units a verdict weighs.
double WidestInterval(const SolKernel& k) {
  double widest = 0;
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (Judged(u) && !std::isnan(k.value[u])) widest = std::max(widest, k.high[u] - k.low[u]);
  }
  return widest;
}

// A kernel that spent most of its time in samples shared with other kernels takes its unmixed
// figures (the DRAM rate and FMA FLOP/s scaled with its DRAM and FMA shares); true when it did.
bool TakeUnmixed(SolKernel& k) {
  if (k.own_fraction >= kSolOwnShareForVerdict || !k.unmixed_ok) return false;
  const auto scaled = [&](double rate, size_t u) {
    return k.value[u] > 0 && !std::isnan(k.unmixed[u]) ? rate * k.unmixed[u] / k.value[u] : rate;
  };
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (IsUnit(u, "dram")) k.dram_bytes_per_s = scaled(k.dram_bytes_per_s, u);
    if (IsUnit(u, "fma")) k.fma_flop_per_s = scaled(k.fma_flop_per_s, u);
  }
  k.value = k.unmixed;
  k.low = k.unmixed_low;
  k.high = k.unmixed_high;
  k.p90 = NoSolValues();
  return true;
}

// A figure rounded to 0.01 (percent points, GB/s, GFLOP/s), so that goldens stay stable; NaN is
// an empty cell.
Cell PctCell(double value) {
  Cell cell;
  if (!std::isnan(value)) cell = Cell(std::round(value * 100) / 100);
  return cell;
}

}  // namespace

std::string_view SolVerdictName(SolVerdict verdict) {
  switch (verdict) {
    case SolVerdict::kLatencyBound:
      return "latency-bound";
    case SolVerdict::kMemoryBound:
      return "memory-bound";
    case SolVerdict::kComputeBound:
      return "compute-bound";
    case SolVerdict::kMixed:
      return "mixed";
    case SolVerdict::kNoFigure:
      break;
  }
  return "n/a";
}

void JudgeSol(SolRow& row) {
  const SolUnitValues& v = row.kernel.value;
  double best = -1, best_memory = -1, best_compute = -1;
  size_t memory_unit = 0, compute_unit = 0;
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (!Judged(u) || std::isnan(v[u])) continue;
    if (v[u] > best) {
      best = v[u];
      row.closest = u;
    }
    if (kSolUnits[u].memory && v[u] > best_memory) {
      best_memory = v[u];
      memory_unit = u;
    }
    if (!kSolUnits[u].memory && v[u] > best_compute) {
      best_compute = v[u];
      compute_unit = u;
    }
  }
  if (best < 0) {
    row.verdict = SolVerdict::kNoFigure;
    return;
  }
  // The SM's own figure counts for the compute side: a sub-unit the set does not name (LSU
  // issue, XU) may be its most loaded one. More than 10 points above every unit, it is the
  // closest itself.
  const double pipes = best_compute;
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (!IsUnit(u, "sm") || std::isnan(v[u])) continue;
    best_compute = std::max(best_compute, v[u]);
    if (v[u] > best + 10) row.closest = u;
    if (v[u] > pipes + 10) compute_unit = u;
  }
  if (row.kernel.own_fraction < kSolOwnShareForVerdict &&
      (!row.unmixed || WidestInterval(row.kernel) > kSolUnmixedWidestForVerdict)) {
    row.verdict = SolVerdict::kMixed;
    row.bound_by.clear();
  } else if (std::max(best_memory, best_compute) < kSolLatencyBoundPct) {
    row.verdict = SolVerdict::kLatencyBound;
    row.bound_by.clear();
  } else if (best_memory >= best_compute) {
    row.verdict = SolVerdict::kMemoryBound;
    row.bound_by = std::string(kSolUnits[memory_unit].unit);
  } else {
    row.verdict = SolVerdict::kComputeBound;
    row.bound_by = std::string(kSolUnits[compute_unit].unit);
  }
}

absl::StatusOr<SolReport> BuildSolReport(const PmInputs& in, const SolReportOptions& options) {
  absl::StatusOr<KernelNameFilter> filter = KernelNameFilter::Create(options.kernel_regex);
  if (!filter.ok()) return filter.status();
  std::vector<KernelEvent> kernels;  // the attribution sees every kernel, filtered below
  const SolSamples samples = ExtractSolSamples(in);
  SolReport report;
  report.has_sol_samples = samples.any_unit() && !samples.times.samples.empty();
  if (!samples.times.intervals.empty()) report.interval_ns = samples.times.intervals[0].second;
  for (SolKernel& k : BuildSolKernels(in.kernels, samples)) {
    if (options.device && k.device_id != *options.device) continue;
    if (!filter->Matches(k.name)) continue;
    report.kernel_ns += k.total_ns;
    SolRow row;
    row.kernel = std::move(k);
    row.unmixed = TakeUnmixed(row.kernel);
    JudgeSol(row);
    report.rows.push_back(std::move(row));
  }
  std::sort(report.rows.begin(), report.rows.end(), [](const SolRow& a, const SolRow& b) {
    return a.kernel.total_ns != b.kernel.total_ns ? a.kernel.total_ns > b.kernel.total_ns
                                                  : a.kernel.name < b.kernel.name;
  });
  for (SolRow& r : report.rows) {
    r.time_share = report.kernel_ns == 0 ? 0 : static_cast<double>(r.kernel.total_ns) /
                                                   static_cast<double>(report.kernel_ns);
  }
  if (options.top > 0 && report.rows.size() > options.top) report.rows.resize(options.top);
  if (!report.has_sol_samples) {
    report.notes.push_back(
        "the trace has no per-unit PM samples: record with `warpscope record --pm-sampling "
        "--pm-metrics sol` (docs/sol.md)");
  }
  for (const SolRow& r : report.rows) {
    if (report.has_sol_samples && r.kernel.measured_launches > 0 &&
        r.kernel.covered_fraction < kLowCoverage) {
      report.notes.push_back(absl::StrFormat(
          "LOW COVERAGE: %s: PM samples saw %.1f%% of its time (%u of %u launches)",
          ShortKernelName(r.kernel.name, true), Pct(r.kernel.covered_fraction),
          r.kernel.measured_launches, r.kernel.launches));
    }
    if (r.kernel.capped > 0) {
      report.notes.push_back(absl::StrCat(ShortKernelName(r.kernel.name, true), ": ",
                                          r.kernel.capped,
                                          " unit figure(s) above 100% measured other work too "
                                          "(a copy or another process in the sample): capped"));
    }
  }
  return report;
}

Report SolReportTables(const SolReport& report, const KernelNames& names) {
  Report out;
  out.scalars = {{"kernel_ns", report.kernel_ns},
                 {"kernels", static_cast<uint64_t>(report.rows.size())},
                 {"interval_ns", report.interval_ns},
                 {"latency_bound_below_pct", kSolLatencyBoundPct}};
  std::vector<Table::Column> columns = {
      {"kernel", false, CellKind::kString},     {"device", true, CellKind::kInt},
      {"launches", true, CellKind::kInt},       {"total_ns", true, CellKind::kInt},
      {"time_pct", true, CellKind::kReal},      {"verdict", false, CellKind::kString},
      {"bound_by", false, CellKind::kString},   {"closest", false, CellKind::kString},
      {"closest_pct", true, CellKind::kReal},   {"closest_low_pct", true, CellKind::kReal},
      {"closest_high_pct", true, CellKind::kReal}, {"closest_p90_pct", true, CellKind::kReal},
      {"covered_pct", true, CellKind::kReal},   {"pooled", false, CellKind::kBool}};
  for (const SolUnitMetric& u : kSolUnits) {
    columns.push_back({std::string(u.unit) + "_pct", true, CellKind::kReal});
  }
  columns.push_back({"dram_gb_per_s", true, CellKind::kReal});
  columns.push_back({"fma_gflop_per_s", true, CellKind::kReal});
  Table kernels(std::move(columns));
  Table units({{"kernel", false, CellKind::kString},
               {"device", true, CellKind::kInt},
               {"unit", false, CellKind::kString},
               {"value_pct", true, CellKind::kReal},
               {"p90_pct", true, CellKind::kReal},
               {"low_pct", true, CellKind::kReal},
               {"high_pct", true, CellKind::kReal}});
  for (const SolRow& r : report.rows) {
    const SolKernel& k = r.kernel;
    const bool judged = r.verdict != SolVerdict::kNoFigure;
    std::vector<Cell> row = {
        names.Show(k.name, false), k.device_id, k.launches, k.total_ns, PercentCell(r.time_share),
        std::string(SolVerdictName(r.verdict)), r.bound_by,
        judged ? std::string(kSolUnits[r.closest].unit) : std::string(),
        judged ? PctCell(k.value[r.closest]) : Cell(), judged ? PctCell(k.low[r.closest]) : Cell(),
        judged ? PctCell(k.high[r.closest]) : Cell(), judged ? PctCell(k.p90[r.closest]) : Cell(),
        PercentCell(k.covered_fraction), Cell::Bool(k.pooled)};
    for (size_t u = 0; u < kSolUnitCount; ++u) {
      row.push_back(PctCell(k.value[u]));
      if (std::isnan(k.value[u])) continue;
      units.AddRow({names.Show(k.name, false), k.device_id, std::string(kSolUnits[u].unit),
                    PctCell(k.value[u]), PctCell(k.p90[u]), PctCell(k.low[u]),
                    PctCell(k.high[u])});
    }
    row.push_back(PctCell(k.dram_bytes_per_s / 1e9));
    row.push_back(PctCell(k.fma_flop_per_s / 1e9));
    kernels.AddRow(std::move(row));
  }
  out.text.push_back(absl::StrFormat(
      "speed of light per kernel from PM samples (docs/sol.md): each unit's share of its peak, "
      "median over launches [95%% interval] or pooled over launches shorter than the interval; "
      "latency-bound below %.0f%% on every unit",
      kSolLatencyBoundPct));
  out.tables.emplace_back("kernels", std::move(kernels));
  out.tables.emplace_back("units", std::move(units));
  out.notes = report.notes;
  return out;
}

}  // namespace warpscope
