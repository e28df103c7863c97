// `warpscope advise`: runs the rules (advise_gaps.cc, advise_copies.cc, advise_precision.cc,
// advise_kernels.cc), ranks their findings by cost (per steady step, with steps) and writes
// the head line.
#include "analyzers/analyses/advise/advise.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/advise/advise_timeline.h"

namespace warpscope {

std::string_view AdviseSeverityName(AdviseSeverity severity) {
  switch (severity) {
    case AdviseSeverity::kHigh:
      return "high";
    case AdviseSeverity::kMedium:
      return "medium";
    case AdviseSeverity::kLow:
      break;
  }
  return "low";
}

namespace {

std::string Headline(const AdviseReport& report) {
  std::string line = absl::StrFormat(
      "GPU busy %.1f%% of the %s from the first to the last GPU work (%s idle; trace %s)",
      100 * report.busy_fraction, FormatDuration(static_cast<double>(report.gpu_span_ns)),
      FormatDuration(static_cast<double>(report.gpu_idle_ns)),
      FormatDuration(static_cast<double>(report.wall_ns)));
  if (report.collective_wait_ns > 0) {
    absl::StrAppendFormat(
        &line, ", and %.1f%% only waiting inside NCCL for other ranks",
        100 * static_cast<double>(report.collective_wait_ns) /
            static_cast<double>(std::max<uint64_t>(report.gpu_span_ns, 1) *
                                std::max<size_t>(report.devices.size(), 1)));
  }
  if (report.findings.empty()) return absl::StrCat(line, "; no findings");
  size_t shown = 0;
  std::string memory;
  for (const AdviseFinding& f : report.findings) {
    if (IsMemoryRule(f.rule)) {
      absl::StrAppend(&memory, memory.empty() ? "; memory: " : ", ", f.rule, " ",
                      MemoryCostText(f));
    } else if (shown < 3) {
      absl::StrAppendFormat(&line, "%s %d) %s %s", shown == 0 ? "; top:" : ";", shown + 1, f.rule,
                            CostText(report, f));
      ++shown;
    }
  }
  return line + memory;
}

// The share of a kernel finding's kernel time launched in the steady state (its kernels by
// start): the kernel rules cost every launch, the warm-up's included.
double SteadyKernelShare(const TraceModel& model, const AdviseFinding& f, uint64_t steady_begin) {
  uint64_t all = 0, steady = 0;
  for (const KernelEvent& k : model.kernels) {
    if (k.device_id != f.device_id || KernelDisplayName(k) != f.kernel) continue;
    all += k.duration_ns;
    if (k.start_ns >= steady_begin) steady += k.duration_ns;
  }
  return all == 0 ? 1.0 : static_cast<double>(steady) / static_cast<double>(all);
}

// Costs per steady step: a steady-state finding's cost over the steady steps (the kernel
// rules' only their steady launches': the other rules' costs are the steady state's already,
// one-time findings holding the rest).
void CostPerStep(const advise_internal::AdviseTimeline& timeline, AdviseReport& report) {
  const SteadyStepTime steady = SteadyStepTimeOf(timeline.steps(), timeline.warmup_steps());
  if (steady.steps == 0 || steady.ns == 0) return;
  // Steps that end long before the GPU's work does are not the program's iteration (a range
  // repeated in one phase): the steady state's costs over them would read as many steps'
  // worth. Such a report costs over the GPU span and says why.
  uint64_t gpu_end = 0;
  for (const AdviseDeviceBusy& d : report.devices) gpu_end = std::max(gpu_end, d.end_ns);
  const uint64_t begin = timeline.steady_begin_ns();
  const uint64_t steps_end = timeline.steps().steps.back().end_ns;
  const uint64_t run_end = std::max(gpu_end, steps_end);
  report.steps_coverage = run_end > begin ? static_cast<double>(steps_end - begin) /
                                                static_cast<double>(run_end - begin)
                                          : 1.0;
  if (report.steps_coverage < kMinStepsCoverage) return;
  report.steady_steps = steady.steps;
  report.steady_step_ns = steady.mean_ns();
  for (AdviseFinding& f : report.findings) {
    if (f.one_time) continue;
    double cost = static_cast<double>(f.cost_ns);
    if (IsKernelRule(f.rule)) {
      cost *= SteadyKernelShare(timeline.model(), f, timeline.steady_begin_ns());
    }
    f.cost_per_step_ns = NsFromDouble(cost / static_cast<double>(steady.steps));
    f.step_fraction =
        static_cast<double>(f.cost_per_step_ns) / static_cast<double>(report.steady_step_ns);
  }
}

}  // namespace

std::string CostText(const AdviseReport& report, const AdviseFinding& f) {
  if (IsMemoryRule(f.rule)) return MemoryCostText(f);
  if (HasCostPerStep(report, f)) {
    return absl::StrFormat("%s a step (%.1f%% of a steady step)",
                           FormatDuration(static_cast<double>(f.cost_per_step_ns)),
                           100 * f.step_fraction);
  }
  return absl::StrFormat("%s (%.1f%% of the GPU span)",
                         FormatDuration(static_cast<double>(f.cost_ns)), 100 * f.cost_fraction);
}

bool IsKernelRule(std::string_view rule) {
  return rule == kRuleTail || rule == kRuleOccupancy || rule == kRuleStalls ||
         rule == kRuleLatencyBound || rule == kRuleMemoryBoundGemm;
}

bool RankedBefore(const AdviseFinding& a, const AdviseFinding& b) {
  return std::tie(a.one_time, b.cost_per_step_ns, b.cost_ns, a.rule, a.nvtx_path) <
         std::tie(b.one_time, a.cost_per_step_ns, a.cost_ns, b.rule, b.nvtx_path);
}

AdviseSeverity SeverityOf(double fraction, const AdviseOptions& options) {
  if (fraction >= options.high_fraction) return AdviseSeverity::kHigh;
  if (fraction >= options.medium_fraction) return AdviseSeverity::kMedium;
  return AdviseSeverity::kLow;
}

namespace {

// Kernel findings name the line that launched the kernel most often (its most common stack).
void NameLaunchSites(const advise_internal::AdviseTimeline& timeline,
                     std::vector<AdviseFinding>& findings) {
  const TraceModel& model = timeline.model();
  if (model.api_stacks.empty()) return;
  for (AdviseFinding& f : findings) {
    if (!f.where.empty() || !IsKernelRule(f.rule)) continue;
    std::vector<uint32_t> launches;
    for (const KernelEvent& k : model.kernels) {
      if (k.device_id == f.device_id && KernelDisplayName(k) == f.kernel) {
        launches.push_back(k.correlation_id);
      }
    }
    f.where = timeline.CallSiteText(launches);
  }
}

}  // namespace

AdviseReport BuildAdviseReport(const TraceModel& model, std::string label,
                               const AdviseOptions& options) {
  using namespace advise_internal;  // NOLINT: the rule finders
  AdviseReport report;
  report.label = std::move(label);
  report.wall_ns = model.span.duration_ns();
  const AdviseTimeline timeline(model, options);
  report.steps = timeline.steps().steps.size();
  report.warmup_steps = timeline.warmup_steps();
  report.step_rule = timeline.steps().how;
  std::vector<AdviseFinding> findings;
  const GapTotals gaps = FindGapCauses(timeline, options, &findings);
  FindPageableCopies(timeline, options, &findings);
  FindCopiesWithoutOverlap(timeline, options, &findings);
  FindFp32MatrixWork(timeline, &findings, &report.notes);
  FindKernelEfficiency(model, options, &findings, &report.notes);
  FindSpeedOfLight(model, options, &findings);
  report.collective_wait_ns = FindCollectiveWaits(timeline, options, &findings);
  NameLaunchSites(timeline, findings);

  report.devices = gaps.devices;
  report.gpu_idle_ns = gaps.idle_ns;
  report.idle_attributed_ns = gaps.attributed_ns;
  uint64_t first = UINT64_MAX, last = 0;
  for (const AdviseDeviceBusy& d : report.devices) {
    report.gpu_busy_ns += d.busy_ns;
    first = std::min(first, d.begin_ns);
    last = std::max(last, d.end_ns);
  }
  report.gpu_span_ns = report.devices.empty() ? report.wall_ns : last - first;
  const double span = static_cast<double>(std::max<uint64_t>(report.gpu_span_ns, 1));
  // Waiting inside NCCL for other ranks keeps a kernel on the GPU but does no work.
  const uint64_t working = report.gpu_busy_ns - std::min(report.gpu_busy_ns, report.collective_wait_ns);
  report.busy_fraction =
      std::min(1.0, static_cast<double>(working) /
                        (span * static_cast<double>(std::max<size_t>(report.devices.size(), 1))));

  for (AdviseFinding& f : findings) {
    if (f.cost_ns < options.min_finding_ns) continue;
    f.cost_fraction = static_cast<double>(f.cost_ns) / span;
    f.cost_max_ns = std::max(f.cost_max_ns, f.cost_ns);
    report.findings.push_back(std::move(f));
  }
  CostPerStep(timeline, report);
  for (AdviseFinding& f : report.findings) {
    const bool per_step = HasCostPerStep(report, f);
    f.severity = SeverityOf(per_step ? f.step_fraction : f.cost_fraction, options);
  }
  std::stable_sort(report.findings.begin(), report.findings.end(), RankedBefore);
  AccountHostBlocked(timeline, gaps, &report.findings, &report.notes);
  if (options.top > 0 && report.findings.size() > options.top) {
    report.findings.resize(options.top);
  }
  // Memory findings cost bytes, not time: listed after the others, every one of them.
  FindMemoryIssues(model, options, &report.findings);
  if (report.devices.empty()) report.notes.push_back("no GPU work in the trace");
  report.headline = Headline(report);
  if (options.short_names) ShortenKernelNames(model, report);
  return report;
}

}  // namespace warpscope
