// PM sample extraction, sample-to-kernel attribution by time overlap, and achieved occupancy.
#include "analyzers/measures/pm_attribution.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/model/trace_limits.h"
#include "proto/writer/stats_table.h"

namespace warpscope {
namespace {

int FindMetric(const PmMetricSet& set, const char* name) {
  for (size_t i = 0; i < set.metric_names.size(); ++i) {
    if (set.metric_names[i] == name) return static_cast<int>(i);
  }
  return -1;
}

// Raises the clock of `device` to `rate` (cycles per ns), adding it if it has none.
void RaiseClock(std::vector<std::pair<uint32_t, double>>& clocks, uint32_t device, double rate) {
  auto it =
      std::find_if(clocks.begin(), clocks.end(), [&](const auto& c) { return c.first == device; });
  if (it == clocks.end()) {
    clocks.emplace_back(device, rate);
  } else {
    it->second = std::max(it->second, rate);
  }
}

}  // namespace

std::string PmDataLossNote(std::span<const StatCounter> stats) {
  std::vector<std::string> parts;
  for (const StatCounter& c : stats) {
    if (c.value == 0 || c.name.rfind("pm_sampling.", 0) != 0) continue;
    if (c.name == stats::kPmGapNs.name) {
      parts.push_back(absl::StrFormat("%.1f ms without samples", c.value / 1e6));
    } else if (c.name == stats::kPmOverflows.name) {
      parts.push_back(absl::StrCat(c.value, " hardware buffer overflow(s)"));
    } else if (c.name == stats::kPmDecodeErrors.name) {
      parts.push_back(absl::StrCat(c.value, " decode error(s)"));
    } else if (c.name == stats::kPmSamplesDropped.name) {
      parts.push_back(absl::StrCat(c.value, " sample(s) dropped by the writer"));
    } else if (c.name == stats::kPmSamplesInvalid.name) {
      parts.push_back(absl::StrCat(c.value, " invalid sample(s)"));
    }
  }
  if (parts.empty()) return "";
  return absl::StrCat("PM samples are incomplete in this trace (", absl::StrJoin(parts, ", "),
                      "): kernels that ran in those stretches have fewer samples or none");
}

PmInputs PmInputsOf(const TraceModel& model) {
  return PmInputs{model.kernels, model.pm_samples, model.pm_metric_sets, model.devices,
                  model.pm_samples_unavailable};
}

uint64_t ActiveWarpSamples::IntervalOnDevice(uint32_t device_id) const {
  for (const auto& [device, interval] : intervals) {
    if (device == device_id) return interval;
  }
  return 0;
}

double ActiveWarpSamples::ClockOnDevice(uint32_t device_id) const {
  for (const auto& [device, clock] : clocks) {
    if (device == device_id) return clock;
  }
  return 0;
}

uint64_t PmAttribution::SamplesOnDevice(uint32_t device_id) const {
  for (size_t i = 0; i < device_ids.size(); ++i) {
    if (device_ids[i] == device_id) return device_sample_count[i];
  }
  return 0;
}

std::string MicrosText(double ns) {
  const double us = ns / 1000.0;
  if (us >= 100) return absl::StrFormat("%.0f us", us);
  if (us >= 10) return absl::StrFormat("%.1f us", us);
  return absl::StrFormat("%.2f us", us);
}

ActiveWarpSampleExtractor::ActiveWarpSampleExtractor(std::span<const PmMetricSet> sets,
                                                     std::span<const DeviceInfo> devices)
    : devices_(devices) {
  for (const PmMetricSet& set : sets) {
    SetLayout l;
    l.set = &set;
    l.warps_per_sm = FindMetric(set, kMetricWarpsPerSmActive);
    l.gpu_warps = FindMetric(set, kMetricGpuWarpsElapsed);
    l.sm_cycles = FindMetric(set, kMetricSmCyclesActive);
    l.elapsed = FindMetric(set, kMetricCyclesElapsed);
    for (const DeviceInfo& d : devices) {
      if (d.id == set.device_id && DeviceLimitsProblem(d).empty()) l.sm_count = d.sm_count;
    }
    layouts_[set.id] = l;
    if (l.warps_per_sm >= 0) totals_.has_warps_per_sm = true;
    if (totals_.IntervalOnDevice(set.device_id) == 0) {
      totals_.intervals.emplace_back(set.device_id, set.interval_ns);
    }
  }
}

std::optional<ActiveWarpSample> ActiveWarpSampleExtractor::Add(const PmSample& s) {
  auto it = layouts_.find(s.metric_set_id);
  if (it == layouts_.end() || it->second.set->metric_names.size() != s.values.size() ||
      s.duration_ns == 0 || !PmSampleProblem(s).empty()) {
    ++totals_.skipped;
    return std::nullopt;
  }
  const SetLayout& l = it->second;
  ActiveWarpSample a;
  a.device_id = l.set->device_id;
  a.start_ns = s.start_ns;
  a.end_ns = s.end_ns();
  a.interval_ns = l.set->interval_ns;
  if (l.warps_per_sm >= 0) a.warps_per_sm = s.values[l.warps_per_sm];
  if (l.sm_cycles >= 0) a.sm_active_cycles = s.values[l.sm_cycles];
  if (l.gpu_warps >= 0) {
    a.gpu_warps = s.values[l.gpu_warps];
  } else if (l.warps_per_sm >= 0 && l.sm_cycles >= 0 && l.elapsed >= 0 && l.sm_count > 0 &&
             s.values[l.elapsed] > 0) {
    a.gpu_warps = a.warps_per_sm * l.sm_count * a.sm_active_cycles / s.values[l.elapsed];
  }
  // Measured GPU-wide warps per SM elapsed cycle give the SM's elapsed cycles.
  if (l.gpu_warps >= 0 && l.warps_per_sm >= 0 && l.sm_cycles >= 0 && l.sm_count > 0 &&
      a.gpu_warps > 0) {
    a.elapsed_cycles = a.warps_per_sm * l.sm_count * a.sm_active_cycles / a.gpu_warps;
  }
  if (!std::isnan(a.gpu_warps)) totals_.has_gpu_warps = true;
  // The SM clock the samples saw: short samples (cut by a window or a decode) are left out, as
  // their cycles can round to a rate no SM reaches. gr__cycles_elapsed.max counts another clock
  // (1.66 GHz against the SMs' 1.98 GHz on an H200), so it is not used for it.
  const double cycles = std::isnan(a.elapsed_cycles) ? a.sm_active_cycles : a.elapsed_cycles;
  const double duration = static_cast<double>(a.end_ns - a.start_ns);
  if (!std::isnan(cycles) && cycles > 0 && 2 * duration >= a.interval_ns) {
    RaiseClock(seen_clocks_, a.device_id, cycles / duration);
  }
  return a;
}

const ActiveWarpSamples& ActiveWarpSampleExtractor::Finish() {
  // For the bounds, the device's own SM clock (CUPTI's device record) where it is faster: the
  // SMs may have run at it outside every sample, and no sample need have had every SM busy.
  totals_.clocks = seen_clocks_;
  for (const DeviceInfo& d : devices_) {
    if (d.core_clock_khz == 0 || d.core_clock_khz > 10'000'000) continue;  // 0 or not a GPU's
    RaiseClock(totals_.clocks, d.id, static_cast<double>(d.core_clock_khz) * 1e-6);
  }
  return totals_;
}

void ActiveWarpSampleExtractor::FillElapsed(ActiveWarpSample& a) const {
  // Without the GPU-wide metric, a sample's SM elapsed cycles are the clock times its length,
  // never fewer than its active cycles: the clock the samples saw (that of any sample in which
  // every SM was busy), else the device record's.
  if (!std::isnan(a.elapsed_cycles) || std::isnan(a.sm_active_cycles)) return;
  double clock = 0;
  for (const auto& [device, rate] : seen_clocks_) {
    if (device == a.device_id) clock = rate;
  }
  if (clock <= 0) clock = totals_.ClockOnDevice(a.device_id);
  if (clock <= 0) return;
  a.elapsed_cycles = std::max(a.sm_active_cycles, clock * static_cast<double>(a.end_ns - a.start_ns));
}

ActiveWarpSamples ExtractActiveWarpSamples(const PmInputs& in) {
  ActiveWarpSampleExtractor extractor(in.metric_sets, in.devices);
  std::vector<ActiveWarpSample> samples;
  samples.reserve(in.samples.size());
  for (const PmSample& s : in.samples) {
    if (std::optional<ActiveWarpSample> a = extractor.Add(s)) samples.push_back(*a);
  }
  ActiveWarpSamples out = extractor.Finish();
  for (ActiveWarpSample& a : samples) extractor.FillElapsed(a);
  out.samples = std::move(samples);
  std::stable_sort(
      out.samples.begin(), out.samples.end(),
      [](const ActiveWarpSample& a, const ActiveWarpSample& b) { return a.start_ns < b.start_ns; });
  return out;
}

PmAttribution AttributeSamples(std::span<const KernelEvent> kernels,
                               const ActiveWarpSamples& samples,
                               std::span<const uint32_t> kernel_group) {
  PmAttribution out;
  out.kernel_samples.resize(kernels.size());
  out.sample_kernel_count.assign(samples.samples.size(), 0);
  out.sample_group_count.assign(samples.samples.size(), 0);
  const bool grouped = kernel_group.size() == kernels.size();
  out.sample_busy_ns.assign(samples.samples.size(), 0);

  // Per device: kernels by start, samples by start (already sorted), then one sweep.
  std::unordered_map<uint32_t, std::vector<uint32_t>> kernels_by_device, samples_by_device;
  for (uint32_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].duration_ns > 0 && !EndOverflows(kernels[i].start_ns, kernels[i].duration_ns)) {
      kernels_by_device[kernels[i].device_id].push_back(i);
    }
  }
  for (uint32_t i = 0; i < samples.samples.size(); ++i) {
    samples_by_device[samples.samples[i].device_id].push_back(i);
  }
  for (auto& [device, sample_ids] : samples_by_device) {
    out.device_ids.push_back(device);
    out.device_sample_count.push_back(sample_ids.size());
    std::vector<uint32_t>& ks = kernels_by_device[device];
    std::sort(ks.begin(), ks.end(),
              [&](uint32_t a, uint32_t b) { return kernels[a].start_ns < kernels[b].start_ns; });
    size_t next = 0;
    std::vector<uint32_t> active;  // kernels started before the sample ends, not yet over
    std::vector<std::pair<uint64_t, uint64_t>> pieces;
    std::vector<uint32_t> groups;
    for (uint32_t si : sample_ids) {
      const ActiveWarpSample& s = samples.samples[si];
      while (next < ks.size() && kernels[ks[next]].start_ns < s.end_ns)
        active.push_back(ks[next++]);
      // Samples come in start order, so a kernel over before this one starts is over for all.
      std::erase_if(active, [&](uint32_t k) { return kernels[k].end_ns() <= s.start_ns; });
      pieces.clear();
      groups.clear();
      for (uint32_t k : active) {
        const uint64_t lo = std::max(kernels[k].start_ns, s.start_ns);
        const uint64_t hi = std::min(kernels[k].end_ns(), s.end_ns);
        if (hi <= lo) continue;
        out.kernel_samples[k].push_back({si, hi - lo});
        pieces.emplace_back(lo, hi);
        groups.push_back(grouped ? kernel_group[k] : k);
      }
      out.sample_kernel_count[si] = static_cast<uint32_t>(pieces.size());
      std::sort(groups.begin(), groups.end());
      out.sample_group_count[si] =
          static_cast<uint32_t>(std::unique(groups.begin(), groups.end()) - groups.begin());
      std::sort(pieces.begin(), pieces.end());
      uint64_t busy = 0, cur_lo = 0, cur_hi = 0;
      bool open = false;
      for (const auto& [lo, hi] : pieces) {
        if (open && lo <= cur_hi) {
          cur_hi = std::max(cur_hi, hi);
          continue;
        }
        if (open) busy += cur_hi - cur_lo;
        cur_lo = lo;
        cur_hi = hi;
        open = true;
      }
      if (open) busy += cur_hi - cur_lo;
      out.sample_busy_ns[si] = busy;
    }
  }
  return out;
}

namespace {

// What ComputeAchievedOccupancy sums over a kernel's samples: active-cycle weights w, w times
// warps per SM, overlaps o, o times warps per SM and elapsed cycles e over the samples used;
// the time in samples of its own and the most active cycles in shared ones.
struct SampleSums {
  double w = 0, wv = 0, o = 0, ov = 0, e = 0;
  bool elapsed_known = true;  // every sample used has SM elapsed cycles
  double own_ns = 0, unseen_active = 0;
};

SampleSums SumSamples(std::span<const SampleOverlap> overlaps, const ActiveWarpSamples& samples,
                      const PmAttribution& attribution, bool has_own, double clock,
                      uint32_t max_warps, double limit, AchievedOccupancy& r) {
  SampleSums sums;
  for (const SampleOverlap& o : overlaps) {
    const ActiveWarpSample& s = samples.samples[o.sample];
    const double overlap = static_cast<double>(o.overlap_ns);
    const bool is_shared = attribution.sample_group_count[o.sample] > 1;
    if (is_shared || std::isnan(s.warps_per_sm)) {
      // Its active cycles in the sample: no more than the clock allows, nor than the sample's.
      double most = clock * overlap;
      if (!std::isnan(s.sm_active_cycles)) most = std::min(most, s.sm_active_cycles);
      sums.unseen_active += most;
    }
    if (std::isnan(s.warps_per_sm)) continue;
    if (has_own && is_shared) continue;
    double value = s.warps_per_sm;
    if (limit > 0 && value > limit) {
      ++r.above_limit;
      value = limit;
    }
    if (!is_shared) sums.own_ns += overlap;
    const double duration_s = static_cast<double>(s.end_ns - s.start_ns);
    const double elapsed = std::isnan(s.elapsed_cycles) || duration_s <= 0
                               ? kNaN
                               : s.elapsed_cycles * overlap / duration_s;
    if (std::isnan(s.sm_active_cycles)) {
      r.time_weighted = true;
    } else {
      const double busy = std::max<double>(1.0, attribution.sample_busy_ns[o.sample]);
      const double w = s.sm_active_cycles * (overlap / busy);
      sums.w += w;
      sums.wv += w * value;
      if (std::isnan(elapsed)) {
        sums.elapsed_known = false;
      } else {
        sums.e += elapsed;
      }
      if (!is_shared) {
        r.seen_occupied += w * value / max_warps;
        r.seen_active_cycles += w;
        r.seen_elapsed_cycles += elapsed;  // NaN, unknown, once a sample lacks it
      }
    }
    sums.o += overlap;
    sums.ov += overlap * value;
  }
  return sums;
}

// Why a kernel has no PM sample.
std::string NoSamplesReason(const KernelEvent& kernel, const ActiveWarpSamples& samples,
                            const PmAttribution& attribution) {
  const uint64_t interval = samples.IntervalOnDevice(kernel.device_id);
  if (EndOverflows(kernel.start_ns, kernel.duration_ns)) {
    return "the kernel's start_ns + duration_ns overflows 64 bits (a corrupt event)";
  }
  if (attribution.SamplesOnDevice(kernel.device_id) == 0) {
    return absl::StrCat("no PM samples on device ", kernel.device_id,
                        " (PM sampling was off: record with --pm-sampling)");
  }
  if (interval > 0 && kernel.duration_ns < interval) {
    return absl::StrCat("no PM samples: kernel shorter than the sampling interval (",
                        MicrosText(static_cast<double>(kernel.duration_ns)), " < ",
                        MicrosText(interval), ")");
  }
  return "no PM samples overlap this kernel (outside the sampled time, or samples lost)";
}

}  // namespace

AchievedOccupancy ComputeAchievedOccupancy(const KernelEvent& kernel,
                                           std::span<const SampleOverlap> overlaps,
                                           const ActiveWarpSamples& samples,
                                           const PmAttribution& attribution,
                                           uint32_t max_warps_per_sm, double limit_warps_per_sm) {
  AchievedOccupancy r;
  const double duration = static_cast<double>(kernel.duration_ns);
  double covered = 0, shared = 0;
  bool has_own = false;  // a sample with the metric that no kernel of another group touches
  for (const SampleOverlap& o : overlaps) {
    ++r.samples;
    covered += o.overlap_ns;
    const bool is_shared = attribution.sample_group_count[o.sample] > 1;
    if (is_shared) {
      ++r.shared_samples;
      shared += o.overlap_ns;
    } else if (!std::isnan(samples.samples[o.sample].warps_per_sm)) {
      has_own = true;
    }
  }
  const uint32_t max_warps = max_warps_per_sm > 0 ? max_warps_per_sm : 64;
  const double clock = samples.ClockOnDevice(kernel.device_id);
  const SampleSums sums =
      SumSamples(overlaps, samples, attribution, has_own, clock, max_warps, limit_warps_per_sm, r);
  r.unseen_ns = std::max(0.0, duration - sums.own_ns);
  if (clock > 0) {
    r.unseen_active_cycles_max = sums.unseen_active + clock * std::max(0.0, duration - covered);
    r.unseen_elapsed_cycles = clock * r.unseen_ns;
  }
  r.from_shared_samples = !has_own && sums.o > 0;
  if (duration > 0) {
    r.coverage = std::min(1.0, covered / duration);
    r.shared_time_fraction = std::min(1.0, shared / duration);
  }
  if (r.samples == 0) {
    r.reason = NoSamplesReason(kernel, samples, attribution);
    return r;
  }
  if (sums.o == 0) {
    r.reason = absl::StrCat("the PM metric set lacks ", kMetricWarpsPerSmActive);
    return r;
  }
  // Samples whose SMs were idle have no active cycles, and a set without the metric has no
  // cycles at all: the kernel's time in each sample is the weight then.
  if (sums.w > 0 && !r.time_weighted) {
    r.mean_warps_per_sm = sums.wv / sums.w;
    r.weight = sums.w;
    if (sums.elapsed_known && sums.e > 0) {
      r.achieved_elapsed = sums.wv / sums.e / max_warps;
      r.elapsed_weight = sums.e;
    }
  } else {
    r.mean_warps_per_sm = sums.ov / sums.o;
    r.weight = sums.o;
    r.time_weighted = true;
  }
  r.achieved = r.mean_warps_per_sm / max_warps;
  return r;
}

}  // namespace warpscope
