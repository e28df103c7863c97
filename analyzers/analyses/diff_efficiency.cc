// Per-kernel occupancy, tail cost and stall mix of one trace, for `warpscope diff`
// (diff_efficiency.h).
#include "analyzers/analyses/diff_efficiency.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "analyzers/measures/tail_summary.h"
#include "analyzers/measures/ns_from_double.h"
#include "analyzers/analyses/occupancy.h"

namespace warpscope {
namespace {

// Launch-time-weighted means of the occupancy report's rows per name.
void AddOccupancy(const PmInputs& in, TraceEfficiency& out) {
  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(in, {});
  if (!report.ok()) return;
  out.has_pm_samples = report->has_pm_samples;
  if (!out.has_pm_samples) return;
  struct Weighted {
    double achieved = 0, achieved_ns = 0, theoretical = 0, theoretical_ns = 0;
  };
  std::map<std::string, Weighted> sums;
  for (const OccupancyRow& row : report->rows) {
    Weighted& w = sums[row.name];
    const double ns = static_cast<double>(row.total_ns);
    if (!std::isnan(row.achieved) && row.achieved_launches > 0) {
      out.kernels[row.name].occupancy_launches += row.achieved_launches;
      w.achieved += row.achieved * ns;
      w.achieved_ns += ns;
    }
    if (row.theoretical && row.theoretical->blocks_per_sm > 0) {
      w.theoretical += row.theoretical->occupancy * ns;
      w.theoretical_ns += ns;
    }
  }
  for (const auto& [name, w] : sums) {
    if (w.achieved_ns <= 0 && w.theoretical_ns <= 0) continue;
    KernelEfficiency& k = out.kernels[name];
    if (w.achieved_ns > 0) k.achieved = w.achieved / w.achieved_ns;
    if (w.theoretical_ns > 0) k.theoretical = w.theoretical / w.theoretical_ns;
  }
}

void AddTails(const PmInputs& in, TraceEfficiency& out) {
  const TailReport report = BuildTailReport(in, TailOptions{});
  std::map<std::string, std::vector<uint64_t>> costs;
  for (const ActiveWarpCurve& curve : report.curves) {
    if (!curve.has_tail_metrics || curve.kernel_index >= in.kernels.size()) continue;
    // Saturating: a damaged trace can give any figure.
    costs[std::string(in.kernels[curve.kernel_index].name)].push_back(
        NsFromDouble(curve.tail_cost_ns));
  }
  for (auto& [name, ns] : costs) out.kernels[name].tail = DurationStats::Of(ns);
}

void AddStalls(const TraceModel& model, TraceEfficiency& out) {
  StallReportOptions options;
  options.top = 0;
  options.locator = {};  // no source lines: only the mix is compared
  absl::StatusOr<StallReport> report = BuildStallReport({&model}, {""}, options);
  if (!report.ok()) return;  // no PC samples
  out.has_pc_samples = true;
  for (StallKernelRow& row : report->rows) {
    KernelEfficiency& k = out.kernels[row.name];
    k.stall_samples = row.samples;
    k.stalls = std::move(row.reasons);
  }
}

}  // namespace

TraceEfficiency CollectEfficiency(const TraceModel& model) {
  TraceEfficiency out;
  const PmInputs in = PmInputsOf(model);
  if (!model.pm_samples.empty()) AddOccupancy(in, out);
  for (const PmMetricSet& set : model.pm_metric_sets) {
    out.pm_interval_ns = std::max(out.pm_interval_ns, set.interval_ns);
  }
  if (out.has_pm_samples) AddTails(in, out);
  AddStalls(model, out);
  return out;
}

absl::StatusOr<TraceEfficiency> CollectEfficiencyOf(const TraceModel& model) {
  const bool samples = !model.pm_samples.empty() || !model.pc_sample_batches.empty();
  if (!samples || (model.kept_events & EventKindBit(EventKind::kKernel)) != 0) {
    return CollectEfficiency(model);
  }
  TraceModelOptions whole;
  whole.slice = model.slice;
  absl::StatusOr<TraceModel> loaded = TraceModel::Load(model.source_name, whole);
  if (!loaded.ok()) return loaded.status();
  return CollectEfficiency(*loaded);
}

}  // namespace warpscope
