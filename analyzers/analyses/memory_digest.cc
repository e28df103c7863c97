// The memory figures other commands give (memory.h DigestMemory): the steps' timeline options,
// the leak rule, call sites and owners as text, each device's peak and growth and the refused
// requests, from the one memory timeline `warpscope memory` uses.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/memory.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/render/report.h"

namespace warpscope {

MemoryTimelineOptions ProgressTimelineOptions(const TraceModel& model, const StepSet& steps,
                                              size_t warmup, MemoryProgress* progress) {
  MemoryTimelineOptions o;
  for (const Step& s : steps.steps) {
    o.intervals.push_back({s.start_ns, s.end_ns});
    o.instants.push_back(s.start_ns);
  }
  *progress = MemoryProgress();
  if (!steps.steps.empty()) {
    o.instants.push_back(steps.steps.back().end_ns);
    progress->basis = MemoryProgress::Basis::kSteps;
    progress->first = warmup;
  } else {
    // The kernels from the model, or read again from the file when it kept none (memory's own
    // load); a bounded sample of their ends either way.
    KernelEndSample sample;
    const absl::Status read =
        ForEachEvent<KernelEvent>(model, [&](const KernelEvent& k) { sample.Add(k.end_ns()); });
    if (read.ok()) {
      o.instants = KernelProgressInstants(sample.ends(), kKernelProgressPoints,
                                          kKernelWarmupShare, &progress->kernels_per_point);
      progress->kernels_per_point *= static_cast<double>(sample.stride());
    }
    if (!o.instants.empty()) progress->basis = MemoryProgress::Basis::kKernels;
  }
  o.growth_from_instant = progress->first;
  return o;
}

MemoryGrowth GrowthOf(const TraceModel& model, const DeviceMemory& d,
                      const MemoryProgress& progress) {
  MemoryGrowth g;
  g.device_id = d.device_id;
  g.progress = progress;
  if (progress.basis != MemoryProgress::Basis::kNone &&
      d.in_use_at_bytes.size() > progress.first) {
    // Steps: in use at each step's start. Kernels: the least in use since the point before,
    // as evenly spaced kernels fall anywhere inside an iteration.
    const std::vector<uint64_t>& at = progress.basis == MemoryProgress::Basis::kSteps
                                          ? d.in_use_at_bytes
                                          : d.low_before_bytes;
    const std::vector<uint64_t> values(at.begin() + static_cast<ptrdiff_t>(progress.first),
                                       at.end());
    const GrowthJudgement j = JudgeGrowth(values);
    g.slope = j.slope;
    g.onset_step = progress.first + j.onset;
    g.gained = j.gained;
    g.leak = j.leak;
    if (progress.basis == MemoryProgress::Basis::kKernels && !values.empty()) {
      g.kernels_judged = progress.kernels_per_point * static_cast<double>(values.size() - 1);
    }
    if (j.leak && progress.basis == MemoryProgress::Basis::kKernels &&
        g.kernels_judged < kLeakMinimumKernels) {
      g.leak = false;
      g.too_little_work = true;
    }
  }
  std::map<std::pair<std::string, std::string>, SiteGrowth> by_site;  // the first stack's id
  for (const SiteGrowth& s : d.site_growth) {
    auto [it, added] = by_site.try_emplace({MemoryCallSite(model, s.stack_id), s.owner}, s);
    if (!added) {
      it->second.first_bytes += s.first_bytes;
      it->second.last_bytes += s.last_bytes;
    }
  }
  for (const auto& [key, s] : by_site) {
    if (s.last_bytes > s.first_bytes) g.growing_sites.push_back(s);
  }
  std::stable_sort(g.growing_sites.begin(), g.growing_sites.end(),
                   [](const SiteGrowth& a, const SiteGrowth& b) {
                     return a.last_bytes - a.first_bytes > b.last_bytes - b.first_bytes;
                   });
  return g;
}

double MemoryGrowth::PerKernel() const {
  if (progress.basis != MemoryProgress::Basis::kKernels || !slope ||
      progress.kernels_per_point <= 0) {
    return 0;
  }
  return slope->per_step / progress.kernels_per_point;
}

std::string MemoryGrowth::RateText(bool with_interval) const {
  if (!slope) return "";
  const bool kernels = progress.basis == MemoryProgress::Basis::kKernels;
  const double scale = kernels ? 1000 / progress.kernels_per_point : 1;
  const std::string interval =
      with_interval ? absl::StrCat(" (95% ", FormatBytes(scale * slope->low), " to ",
                                   FormatBytes(scale * slope->high), ")")
                    : "";
  if (kernels) {
    return absl::StrCat(FormatBytes(scale * slope->per_step), " per 1,000 kernels launched",
                        interval, " (the trace has no steps)");
  }
  return absl::StrCat(FormatBytes(slope->per_step), " per steady step", interval,
                      onset_step > progress.first ? absl::StrCat(" from step ", onset_step) : "");
}

std::string MemoryCallSite(const TraceModel& model, uint64_t stack_id) {
  if (stack_id == 0) return std::string(kNoStack);
  return CallSiteOfStack(model, model.FindCallStack(stack_id)).Display();
}

std::string MemoryOwnersText(const std::vector<std::pair<std::string, uint64_t>>& owners,
                             size_t top) {
  std::string text;
  for (size_t i = 0; i < owners.size() && i < top; ++i) {
    absl::StrAppend(&text, i == 0 ? "" : ", ", owners[i].first, " ",
                    FormatBytes(static_cast<double>(owners[i].second)));
  }
  return text;
}

namespace {

DeviceMemoryDigest DigestDevice(const TraceModel& model, const DeviceMemory& d,
                                const StepSet& steps, const MemoryProgress& progress) {
  DeviceMemoryDigest out;
  out.device_id = d.device_id;
  if (const DeviceInfo* info = model.FindDevice(d.device_id)) {
    out.capacity_bytes = info->global_memory_bytes;
  }
  out.peak_bytes = d.peak_bytes;
  out.peak_ns = d.peak_ns;
  out.reserved_at_peak_bytes = d.reserved_at_peak_bytes;
  out.peak_reserved_bytes = d.peak_reserved_bytes;
  out.owners_at_peak = d.owners_at_peak;
  out.growth = GrowthOf(model, d, progress);
  const size_t warmup = progress.first;
  if (!out.growth.growing_sites.empty()) {
    const SiteGrowth& s = out.growth.growing_sites.front();
    out.growth_site = MemoryCallSite(model, s.stack_id);
    out.growth_owner = s.owner;
    out.growth_site_bytes = s.last_bytes - s.first_bytes;
  }
  if (steps.steps.size() > warmup) {
    out.steady_steps = steps.steps.size() - warmup;
    out.steady_begin_ns = steps.steps[warmup].start_ns;
    out.steady_end_ns = steps.steps.back().end_ns;
  }
  return out;
}

}  // namespace

MemoryDigest DigestMemory(const TraceModel& model, std::optional<uint32_t> device,
                          std::string_view step) {
  MemoryDigest out;
  if (model.memory_events.empty()) return out;
  const StepSet steps = FindSteps(model.nvtx_ranges, step);
  const size_t warmup = WarmupSteps(steps);
  MemoryProgress progress;
  MemoryTimelineOptions o = ProgressTimelineOptions(model, steps, warmup, &progress);
  o.device = device;
  o.top = 1;  // the largest blocks are `warpscope memory`'s
  const MemoryTimeline t = ComputeMemoryTimeline(model, o);
  out.events = t.events;
  for (const DeviceMemory& d : t.devices)
    out.devices.push_back(DigestDevice(model, d, steps, progress));
  for (const MemoryFailure& f : t.failures) {
    out.failures.push_back({f, MemoryCallSite(model, f.stack_id)});
  }
  return out;
}

}  // namespace warpscope
