// The kernel rules of `warpscope advise` (docs/advise.md, "Kernels"), taken from the `tail`,
// `occupancy` and `stalls` analyses when the trace has PM or PC samples.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/tail_summary.h"
#include "analyzers/analyses/advise/advise_timeline.h"
#include "analyzers/analyses/occupancy.h"
#include "analyzers/analyses/stalls.h"

namespace warpscope::advise_internal {
namespace {

bool DeviceSelected(const AdviseOptions& options, uint32_t device) {
  return !options.device.has_value() || *options.device == device;
}

void FindTails(const PmInputs& in, const AdviseOptions& options,
               std::vector<AdviseFinding>* findings) {
  const TailReport report = BuildTailReport(in, TailOptions{});
  for (const KernelTailSummary& s : report.summaries) {
    if (s.verdict.empty() || s.total_tail_cost_ns < 1) continue;
    const ActiveWarpCurve& worst = report.curves[s.worst_instance];
    const KernelEvent& kernel = in.kernels[worst.kernel_index];
    if (!DeviceSelected(options, kernel.device_id)) continue;
    AdviseFinding f;
    f.rule = std::string(kRuleTail);
    f.cost_ns = NsFromDouble(s.total_tail_cost_ns);
    f.occurrences = s.launches_with_curve;
    f.device_id = kernel.device_id;
    f.kernel = s.name;
    f.stream = absl::StrCat(kernel.stream_id);
    f.title = absl::StrCat("long tail in ", s.name);
    f.evidence = absl::StrFormat(
        "the last %.0f%% of its run time is a drain; %.0f%% of the time below half the steady "
        "warps (%s)",
        100 * s.tail_fraction, 100 * s.below_50, s.verdict);
    f.fix =
        "Balance the work per block (split large items, sort by size), or run more, "
        "smaller blocks so the last wave is short; see `warpscope tail`.";
    f.worst_begin_ns = kernel.start_ns;
    f.worst_end_ns = kernel.end_ns();
    findings->push_back(std::move(f));
  }
}

void FindLowOccupancy(const PmInputs& in, const AdviseOptions& options,
                      std::vector<AdviseFinding>* findings) {
  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(in, {});
  if (!report.ok()) return;
  for (const OccupancyRow& row : report->rows) {
    if (!row.theoretical.has_value() || std::isnan(row.achieved)) continue;
    if (!DeviceSelected(options, row.device_id)) continue;
    const double theoretical = row.theoretical->occupancy;
    if (theoretical <= 0 || row.achieved >= kLowAchievedShare * theoretical) continue;
    AdviseFinding f;
    f.rule = std::string(kRuleOccupancy);
    // Run time if the kernel kept its theoretical warps busy, with time inversely
    // proportional to resident warps: an upper bound (docs/advise.md).
    f.cost_ns = NsFromDouble(static_cast<double>(row.total_ns) * (1 - row.achieved / theoretical));
    f.occurrences = row.launches;
    f.device_id = row.device_id;
    f.kernel = row.name;
    f.title = absl::StrCat("low achieved occupancy in ", row.name);
    f.evidence = absl::StrFormat(
        "achieved %.0f%% of the SM's warps against %.0f%% theoretical (limited by %s); upper "
        "bound",
        100 * row.achieved, 100 * theoretical, LimiterNames(row.theoretical->limiters));
    f.fix = row.advice.empty()
                ? "Find why warps do not stay resident (short blocks, tails, imbalance); see "
                  "`warpscope occupancy` and `warpscope tail`."
                : row.advice.front().text;
    findings->push_back(std::move(f));
  }
}

void FindStalls(const TraceModel& model, const AdviseOptions& options,
                std::vector<AdviseFinding>* findings) {
  StallReportOptions stall_options;
  stall_options.locator = {};  // no source lines: the finding names the reason only
  absl::StatusOr<StallReport> report =
      BuildStallReport({&model}, {model.source_name}, stall_options);
  if (!report.ok()) return;
  std::map<std::string, std::pair<uint64_t, const KernelEvent*>> time_by_name;
  for (const KernelEvent& k : model.kernels) {
    if (!DeviceSelected(options, k.device_id)) continue;
    auto& [ns, first] = time_by_name[KernelDisplayName(k)];
    ns += k.duration_ns;
    if (first == nullptr) first = &k;
  }
  for (const StallKernelRow& row : report->rows) {
    auto it = time_by_name.find(row.name);
    if (it == time_by_name.end() || row.reasons.empty()) continue;
    const StallShare& top = row.reasons.front();
    // Warps that were selected, or ready and passed over, are not stalled on anything.
    if (top.fraction < kStallShare || top.state == "selected" || top.state == "not_selected") {
      continue;
    }
    AdviseFinding f;
    f.rule = std::string(kRuleStalls);
    // The kernel time spent in that stall if issue were otherwise unchanged: an upper bound.
    f.cost_ns = NsFromDouble(static_cast<double>(it->second.first) * top.fraction);
    f.occurrences = row.samples;
    f.device_id = it->second.second->device_id;
    f.kernel = row.name;
    f.title = absl::StrCat("warps of ", row.name, " mostly stall on ", top.state);
    f.evidence = absl::StrFormat("%.0f%% of %d PC samples; upper bound", 100 * top.fraction,
                                 static_cast<int>(row.samples));
    f.fix = std::string(StallReasonAdvice(top.state));
    findings->push_back(std::move(f));
  }
}

}  // namespace

void FindKernelEfficiency(const TraceModel& model, const AdviseOptions& options,
                          std::vector<AdviseFinding>* findings, std::vector<std::string>* notes) {
  const PmInputs in = PmInputsOf(model);
  if (model.pm_samples.empty()) {
    notes->push_back(model.pm_samples_unavailable.empty()
                         ? "no PM samples: long-tail and low-occupancy rules skipped (record "
                           "with --pm-sampling)"
                         : absl::StrCat("PM samples unusable (", model.pm_samples_unavailable,
                                        "): long-tail and low-occupancy rules skipped"));
  } else {
    FindTails(in, options, findings);
    FindLowOccupancy(in, options, findings);
  }
  bool has_pc = false;
  for (const PcSampleBatch& batch : model.pc_sample_batches) has_pc |= !batch.records.empty();
  if (!has_pc) {
    notes->push_back("no PC samples: stall rule skipped (record with --pc-sampling)");
  } else {
    FindStalls(model, options, findings);
  }
}

}  // namespace warpscope::advise_internal
