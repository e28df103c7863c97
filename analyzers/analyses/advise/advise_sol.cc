// The speed-of-light rules of `warpscope advise` (docs/advise.md, "Kernels"), taken from the
// `sol` analysis when the trace has per-unit PM samples (`--pm-metrics sol`): a kernel far
// from every roof, with its occupancy and stall story joined from the `occupancy` and
// `stalls` analyses, and a matrix-multiply kernel (by its name's class) whose DRAM is the
// unit closest to its limit. A trace without the whole sol set gets neither, and no note.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/advise/advise_timeline.h"
#include "analyzers/analyses/occupancy.h"
#include "analyzers/analyses/sol.h"
#include "analyzers/analyses/stalls.h"
#include "analyzers/measures/kernel_precision.h"
#include "analyzers/measures/occupancy_calculator.h"

namespace warpscope::advise_internal {
namespace {

// A latency-bound kernel is a finding when it holds at least this share of the kernel time of
// its device: below it, hiding its latency saves little.
constexpr double kMaterialKernelShare = 0.05;

bool IsUnit(size_t u, std::string_view name) { return kSolUnits[u].unit == name; }

// The unit index of `name` in kSolUnits.
size_t UnitIndex(std::string_view name) {
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (IsUnit(u, name)) return u;
  }
  return 0;
}

// The highest figure among the units in `pick` (NaN-free), with its unit; -1 when none.
template <typename Pick>
std::pair<double, size_t> Busiest(const SolUnitValues& values, Pick pick) {
  double best = -1;
  size_t unit = 0;
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (!pick(u) || std::isnan(values[u]) || values[u] <= best) continue;
    best = values[u];
    unit = u;
  }
  return {best, unit};
}

// Every unit a verdict weighs and `sm` (DRAM's read and write halves are in `dram`).
bool Weighed(size_t u) { return !IsUnit(u, "dram_read") && !IsUnit(u, "dram_write"); }
bool Compute(size_t u) { return !kSolUnits[u].memory; }

// A matrix multiply by its name's class: a known matrix class, or a GEMM scheme that does not
// say its precision (a Triton GEMM template, cuBLAS's catch-alls).
bool IsMatrixKernel(std::string_view name) {
  const KernelMathClass c = ClassifyKernelMath(name);
  return c.math != KernelMath::kNotMatrix && (c.math != KernelMath::kUnknown || !c.scheme.empty());
}

// The occupancy and stall stories of each kernel, from those analyses when the trace has their
// samples: keyed by name and device (stalls by name: PC samples carry no device).
struct KernelStories {
  std::map<std::pair<std::string, uint32_t>, OccupancyRow> occupancy;
  std::map<std::string, StallShare> top_stall;
};

KernelStories StoriesOf(const TraceModel& model, const PmInputs& in) {
  KernelStories out;
  absl::StatusOr<OccupancyReport> occupancy = BuildOccupancyReport(in, {});
  if (occupancy.ok()) {
    for (OccupancyRow& row : occupancy->rows) {
      out.occupancy.emplace(std::make_pair(row.name, row.device_id), std::move(row));
    }
  }
  bool has_pc = false;
  for (const PcSampleBatch& batch : model.pc_sample_batches) has_pc |= !batch.records.empty();
  if (!has_pc) return out;
  StallReportOptions stall_options;
  stall_options.locator = {};  // the reason only, no source lines
  absl::StatusOr<StallReport> stalls =
      BuildStallReport({&model}, {model.source_name}, stall_options);
  if (!stalls.ok()) return out;
  for (const StallKernelRow& row : stalls->rows) {
    for (const StallShare& s : row.reasons) {
      if (s.state == "selected" || s.state == "not_selected") continue;
      out.top_stall.emplace(row.name, s);
      break;
    }
  }
  return out;
}

// "; achieved occupancy 12% of the SM's warps against 50% theoretical (limited by registers)",
// and "; its top stall reason long_scoreboard (64% of PC samples)", where known. Sets
// `*low_occupancy` when achieved is under 60% of theoretical (or theoretical under 60%), and
// `*stall_state` when the top reason holds at least kStallShare of the samples.
std::string StoryText(const KernelStories& stories, const SolRow& r, bool* low_occupancy,
                      std::string* stall_state) {
  std::string text;
  auto occ = stories.occupancy.find({std::string(r.kernel.name), r.kernel.device_id});
  if (occ != stories.occupancy.end() && !std::isnan(occ->second.achieved)) {
    const OccupancyRow& o = occ->second;
    absl::StrAppendFormat(&text, "; achieved occupancy %.0f%% of the SM's warps", 100 * o.achieved);
    if (o.theoretical.has_value()) {
      absl::StrAppendFormat(&text, " against %.0f%% theoretical (limited by %s)",
                            100 * o.theoretical->occupancy, LimiterNames(o.theoretical->limiters));
      *low_occupancy = o.achieved < kLowAchievedShare * o.theoretical->occupancy ||
                       o.theoretical->occupancy < kLowAchievedShare;
    }
  }
  auto stall = stories.top_stall.find(std::string(r.kernel.name));
  if (stall != stories.top_stall.end()) {
    absl::StrAppendFormat(&text, "; its top stall reason %s (%.0f%% of PC samples)",
                          stall->second.state, 100 * stall->second.fraction);
    if (stall->second.fraction >= kStallShare) *stall_state = stall->second.state;
  }
  return text;
}

// "l2 at 12.3% of peak [10.1, 14.0]" (pooled: "pooled over N launches shorter than the
// interval").
std::string FigureText(const SolKernel& k, size_t unit) {
  std::string text =
      absl::StrFormat("%s at %.1f%% of peak [%.1f, %.1f]", std::string(kSolUnits[unit].unit),
                      k.value[unit], k.low[unit], k.high[unit]);
  if (k.pooled) absl::StrAppend(&text, " pooled over its launches (shorter than the interval)");
  absl::StrAppendFormat(&text, ", PM samples saw %.0f%% of its time", 100 * k.covered_fraction);
  return text;
}

AdviseFinding KernelFinding(std::string_view rule, const SolRow& r, const std::string& title) {
  AdviseFinding f;
  f.rule = std::string(rule);
  f.title = title;
  f.occurrences = r.kernel.launches;
  f.device_id = r.kernel.device_id;
  f.kernel = std::string(r.kernel.name);
  return f;
}

// Cost: the time if its busiest unit ran at the latency-bound line (60% of peak) with the same
// work, time falling in proportion: total x (1 - busiest / 60). An upper bound on what hiding
// latency gives; the most, at the interval's low bound, is cost_max.
void LatencyBound(const SolRow& r, const KernelStories& stories,
                  std::vector<AdviseFinding>* findings) {
  const SolKernel& k = r.kernel;
  const auto [busiest, unit] = Busiest(k.value, Weighed);
  if (busiest < 0) return;
  const double total = static_cast<double>(k.total_ns);
  AdviseFinding f =
      KernelFinding(kRuleLatencyBound, r,
                    absl::StrCat(std::string(k.name), " runs far from every roof (latency-bound)"));
  f.cost_ns = NsFromDouble(total * (1 - busiest / kSolLatencyBoundPct));
  const double low = std::isnan(k.low[unit]) ? busiest : std::min(busiest, k.low[unit]);
  f.cost_max_ns = NsFromDouble(total * (1 - low / kSolLatencyBoundPct));
  bool low_occupancy = false;
  std::string stall;
  const std::string story = StoryText(stories, r, &low_occupancy, &stall);
  f.evidence = absl::StrFormat(
      "every unit below %.0f%% of its peak; the busiest, %s; %.0f%% of the kernel time%s; "
      "cost: the time if its busiest unit reached %.0f%% with the same work, an upper bound",
      kSolLatencyBoundPct, FigureText(k, unit), 100 * r.time_share, story, kSolLatencyBoundPct);
  if (low_occupancy) {
    f.fix =
        "Too few warps hide its latency: raise occupancy (fewer registers or less shared "
        "memory per block, more blocks); see `warpscope occupancy`.";
  } else if (!StallReasonAdvice(stall).empty()) {
    f.fix = absl::StrCat("Its warps wait: ", std::string(StallReasonAdvice(stall)),
                         " See `warpscope stalls`.");
  } else {
    f.fix =
        "Its warps wait on latency, not throughput: give each thread more independent work "
        "(unroll, batch loads), keep more warps resident, avoid dependent load chains; "
        "`warpscope occupancy` and `warpscope stalls` (record with --pc-sampling) say which.";
  }
  findings->push_back(std::move(f));
}

// Cost: DRAM traffic the kernel need not make (tiles that reuse operands, a fused epilogue,
// narrower operands) would let it run until its busiest compute unit were as loaded as DRAM is
// now: total x (1 - compute / dram). An upper bound (the bytes cannot all go).
void MemoryBoundGemm(const SolRow& r, std::vector<AdviseFinding>* findings) {
  const SolKernel& k = r.kernel;
  const size_t dram = UnitIndex("dram");
  const double d = k.value[dram];
  if (std::isnan(d) || d <= 0) return;
  const auto [compute, compute_unit] = Busiest(k.value, Compute);
  const double c = std::max(compute, 0.0);
  AdviseFinding f =
      KernelFinding(kRuleMemoryBoundGemm, r,
                    absl::StrCat("matrix multiply ", std::string(k.name), " is bound by DRAM"));
  f.cost_ns = NsFromDouble(static_cast<double>(k.total_ns) * (1 - std::min(c, d) / d));
  std::string bandwidth;
  if (!std::isnan(k.dram_bytes_per_s)) {
    bandwidth = absl::StrFormat(" (%.0f GB/s)", k.dram_bytes_per_s / 1e9);
  }
  f.evidence = absl::StrFormat(
      "a matrix multiply by its name, yet DRAM is the unit closest to its limit: %s%s; its busiest "
      "compute unit, %s, at %.1f%%; cost: the time if it ran until that unit were as loaded as "
      "DRAM is now, an upper bound",
      FigureText(k, dram), bandwidth, std::string(kSolUnits[compute_unit].unit), c);
  f.fix =
      "A GEMM should reuse what it reads: its shapes may be too skinny to tile (batch the "
      "small matrices, pad), its epilogue unfused (fuse bias and activation), or its "
      "operands wider than needed (BF16/FP8 instead of FP32); see `warpscope sol`.";
  findings->push_back(std::move(f));
}

// Whether a metric set of the trace holds every unit of the sol set: a verdict weighs them all
// (a set with a few of them, SM and DRAM throughput say, cannot tell latency-bound from bound
// by a unit it does not read).
bool HasSolSet(const TraceModel& model) {
  for (const PmMetricSet& set : model.pm_metric_sets) {
    const bool all =
        std::all_of(std::begin(kSolUnits), std::end(kSolUnits), [&](const SolUnitMetric& u) {
          return std::find(set.metric_names.begin(), set.metric_names.end(), u.metric) !=
                 set.metric_names.end();
        });
    if (all) return true;
  }
  return false;
}

}  // namespace

void FindSpeedOfLight(const TraceModel& model, const AdviseOptions& options,
                      std::vector<AdviseFinding>* findings) {
  if (model.pm_samples.empty() || !HasSolSet(model)) return;
  const PmInputs in = PmInputsOf(model);
  SolReportOptions sol_options;
  sol_options.device = options.device;
  sol_options.top = 0;
  absl::StatusOr<SolReport> sol = BuildSolReport(in, sol_options);
  if (!sol.ok() || !sol->has_sol_samples) return;
  // Each kernel's share of the kernel time of its device.
  std::map<uint32_t, uint64_t> device_ns;
  for (const SolRow& r : sol->rows) device_ns[r.kernel.device_id] += r.kernel.total_ns;
  std::vector<const SolRow*> latency, gemms;
  for (SolRow& r : sol->rows) {
    const uint64_t all = device_ns[r.kernel.device_id];
    r.time_share = all == 0 ? 0 : static_cast<double>(r.kernel.total_ns) / static_cast<double>(all);
    if (r.verdict == SolVerdict::kLatencyBound && r.time_share >= kMaterialKernelShare) {
      latency.push_back(&r);
    } else if (r.verdict == SolVerdict::kMemoryBound && IsUnit(r.closest, "dram") &&
               IsMatrixKernel(r.kernel.name)) {
      gemms.push_back(&r);
    }
  }
  if (!latency.empty()) {
    const KernelStories stories = StoriesOf(model, in);
    for (const SolRow* r : latency) LatencyBound(*r, stories, findings);
  }
  for (const SolRow* r : gemms) MemoryBoundGemm(*r, findings);
}

}  // namespace warpscope::advise_internal
