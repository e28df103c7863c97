// Tail summaries per kernel name, summed as launches come (tail_summary.h).
#include "analyzers/measures/tail_summary.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/sampling_coverage.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

// Turns a summary's weighted sums into rates, and gives its verdict.
void FinishSummary(const TailOptions& options, KernelTailSummary& sum) {
  if (sum.launches_with_curve == 0) return;
  const double w = static_cast<double>(sum.curve_ns);
  if (w <= 0) return;
  sum.tail_fraction /= w;
  sum.tail_low /= w;
  sum.tail_high /= w;
  if (sum.tail_high - sum.tail_low > kMaxTailWidth) {
    // Each edge is known to one PM sample: samples a twentieth of a launch keep it within 10%.
    const double launch_ns = w / sum.launches_with_curve;
    sum.too_few = absl::StrFormat(
        "its tail is known only to %.0f-%.0f%% of the runtime (a launch of %s spans few PM "
        "samples): record with --pm-interval %s or shorter",
        100 * sum.tail_low, 100 * sum.tail_high, FormatDuration(launch_ns),
        FormatDuration(std::max(1000.0, launch_ns / 20)));
  }
  sum.tail_cost_fraction /= w;
  sum.below_50 /= w;
  sum.below_25 /= w;
  sum.steady /= w;
  sum.verdict = TailVerdict(sum.tail_fraction, sum.tail_cost_fraction, sum.below_50, sum.below_25,
                            sum.curve_ns, options);
  sum.coverage_note =
      LowCoverageNote("PM", sum.launches_with_curve, sum.launches, sum.covered_fraction());
  if (sum.launches_with_curve < sum.launches) {
    sum.note = absl::StrCat(sum.launches - sum.launches_with_curve, " of ", sum.launches,
                            " launches without tail metrics: ", sum.note);
  } else {
    sum.note.clear();
  }
}

// The place of launch `index` among `curves` (in the trace's order, each launch once).
uint32_t CurveOfLaunch(const std::vector<ActiveWarpCurve>& curves, uint64_t index) {
  auto it = std::lower_bound(
      curves.begin(), curves.end(), index,
      [](const ActiveWarpCurve& c, uint64_t i) { return c.kernel_index < i; });
  return static_cast<uint32_t>(it - curves.begin());
}

}  // namespace

std::string MissingSamplesProblem(std::string_view samples_unavailable, bool any_samples,
                                  bool has_gpu_warps) {
  if (!any_samples && !samples_unavailable.empty()) return std::string(samples_unavailable);
  if (!any_samples) {
    return "the trace has no PM samples: record with `warpscope record --pm-sampling` to get "
           "active-warp curves";
  }
  if (!has_gpu_warps) {
    return absl::StrCat("the PM metric set has no GPU-wide active warps (", kMetricGpuWarpsElapsed,
                        ", or ", kMetricWarpsPerSmActive, " with ", kMetricSmCyclesActive, " and ",
                        kMetricCyclesElapsed, ")");
  }
  return "";
}

TailReportBuilder::TailReportBuilder(const TailOptions& options, bool keep_every_curve,
                                     std::span<const DeviceInfo> devices,
                                     const std::function<bool(std::string_view)>& select)
    : options_(options), keep_every_curve_(keep_every_curve), devices_(devices), select_(select) {}

uint32_t TailReportBuilder::AddLaunch(const KernelEvent& kernel) {
  // Debian's absl::string_view is not std::string_view: the lookup takes absl's.
  auto name = summary_of_name_.find(absl::string_view(kernel.name.data(), kernel.name.size()));
  if (name == summary_of_name_.end()) {
    uint32_t summary = kNotSelected;
    if (!select_ || select_(kernel.name)) {
      summary = static_cast<uint32_t>(summaries_.size());
      summaries_.emplace_back().name = std::string(kernel.name);
      names_.emplace_back();
    }
    name = summary_of_name_.emplace(std::string(kernel.name), summary).first;
  }
  if (name->second == kNotSelected) return kNotSelected;
  KernelTailSummary& sum = summaries_[name->second];
  ++sum.launches;
  sum.total_ns += kernel.duration_ns;
  const uint64_t launch_id = kernel.launch ? kernel.launch->id : 0;
  auto [kind, new_kind] = kind_of_.try_emplace({name->second, launch_id, kernel.device_id},
                                               static_cast<uint32_t>(kinds_.size()));
  if (new_kind) {
    // The last description of the device wins, as everywhere the devices are read.
    const DeviceInfo* device = nullptr;
    for (const DeviceInfo& d : devices_) {
      if (d.id == kernel.device_id) device = &d;
    }
    kinds_.push_back({name->second, ResidentWarpLimitOf(device, kernel.launch)});
  }
  return kind->second;
}

// The rates are weighted by duration and divided by the total in FinishSummary.
void TailReportBuilder::AddToSummary(const ActiveWarpCurve& c, KernelTailSummary& sum,
                                     NameState& state) {
  const double w = static_cast<double>(c.duration_ns);
  if (sum.launches_with_curve == 0 || c.tail_cost_ns > state.worst_cost ||
      (c.tail_cost_ns == state.worst_cost && c.kernel_index < state.worst_index)) {
    state.worst_cost = c.tail_cost_ns;
    state.worst_index = c.kernel_index;
  }
  ++sum.launches_with_curve;
  sum.curve_ns += c.duration_ns;
  sum.covered_ns += c.coverage * w;
  sum.total_tail_cost_ns += c.tail_cost_ns;
  sum.tail_fraction += w * c.tail_fraction;
  sum.tail_low += w * c.tail_low;
  sum.tail_high += w * c.tail_high;
  sum.tail_cost_fraction += w * c.tail_cost_fraction;
  sum.below_50 += w * c.below_50;
  sum.below_25 += w * c.below_25;
  sum.steady += w * c.steady;
  sum.peak = std::max(sum.peak, c.peak);
  sum.shared_samples += c.shared_samples;
  sum.above_limit += c.above_limit;
  if (c.levels_from_shared) ++sum.launches_levels_from_shared;
  sum.limit_warps = std::max(sum.limit_warps, c.limit_warps);
}

// Without keep_every_curve: the worst launch's curve, or while none has tail metrics, the first
// launch's with a curve.
void TailReportBuilder::Keep(ActiveWarpCurve& c, NameState& state) {
  const bool kept_worst = state.kept.has_value() && state.kept->has_tail_metrics;
  if (c.has_tail_metrics) {
    if (!kept_worst || state.worst_index == c.kernel_index) state.kept = std::move(c);
  } else if (!kept_worst && !c.segments.empty() &&
             (!state.kept.has_value() || c.kernel_index < state.kept->kernel_index)) {
    state.kept = std::move(c);
  }
}

void TailReportBuilder::AddCurve(uint32_t kind, ActiveWarpCurve curve) {
  const uint32_t s = kinds_[kind].summary;
  KernelTailSummary& sum = summaries_[s];
  NameState& state = names_[s];
  curve.summary = s;
  if (curve.has_tail_metrics) {
    AddToSummary(curve, sum, state);
  } else if (!curve.note.empty() &&
             (!state.note_index.has_value() || curve.kernel_index < *state.note_index)) {
    // The summary gives the note of its first launch without tail metrics.
    state.note_index = curve.kernel_index;
    sum.note = curve.note;
  }
  if (keep_every_curve_) {
    curves_.push_back(std::move(curve));
  } else {
    Keep(curve, state);
  }
}

TailReport TailReportBuilder::Finish(std::string problem) {
  TailReport report;
  report.problem = std::move(problem);
  for (KernelTailSummary& sum : summaries_) FinishSummary(options_, sum);
  std::vector<uint32_t> order(summaries_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const KernelTailSummary& x = summaries_[a];
    const KernelTailSummary& y = summaries_[b];
    if (x.total_tail_cost_ns != y.total_tail_cost_ns) {
      return x.total_tail_cost_ns > y.total_tail_cost_ns;
    }
    return x.total_ns > y.total_ns;
  });
  std::vector<uint32_t> rank(order.size());
  for (uint32_t r = 0; r < order.size(); ++r) rank[order[r]] = r;
  report.curves = std::move(curves_);
  for (NameState& state : names_) {
    if (state.kept.has_value()) report.curves.push_back(std::move(*state.kept));
  }
  std::sort(report.curves.begin(), report.curves.end(),
            [](const ActiveWarpCurve& a, const ActiveWarpCurve& b) {
              return a.kernel_index < b.kernel_index;
            });
  for (ActiveWarpCurve& c : report.curves) c.summary = rank[c.summary];
  for (uint32_t s : order) {
    KernelTailSummary& sum = summaries_[s];
    if (sum.launches_with_curve > 0) {
      sum.worst_instance = CurveOfLaunch(report.curves, names_[s].worst_index);
    }
    report.summaries.push_back(std::move(sum));
  }
  return report;
}

TailReport BuildTailReport(const PmInputs& in, const TailOptions& options,
                           const std::function<bool(std::string_view)>& select) {
  const ActiveWarpSamples samples = ExtractActiveWarpSamples(in);
  const PmAttribution attribution = AttributeSamples(in.kernels, samples);
  TailReportBuilder builder(options, /*keep_every_curve=*/true, in.devices, select);
  for (uint64_t k = 0; k < in.kernels.size(); ++k) {
    const KernelEvent& kernel = in.kernels[k];
    const uint32_t kind = builder.AddLaunch(kernel);
    if (kind == TailReportBuilder::kNotSelected) continue;
    builder.AddCurve(kind, BuildActiveWarpCurve(k, kernel, attribution.kernel_samples[k], samples,
                                                attribution, builder.LimitOf(kind), options));
  }
  return builder.Finish(MissingSamplesProblem(in.samples_unavailable, !samples.samples.empty(),
                                              samples.has_gpu_warps));
}

}  // namespace warpscope
