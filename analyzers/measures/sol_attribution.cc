// Per-unit throughput of PM samples attributed to kernel launches by overlap, summarised per
// kernel name (sol_attribution.h, docs/sol.md).
#include "analyzers/measures/sol_attribution.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>
#include <string>
#include <unordered_map>
#include <utility>

#include "analyzers/measures/intervals.h"
#include "analyzers/measures/median.h"
#include "analyzers/measures/sol_unmix.h"
#include "analyzers/model/trace_limits.h"

namespace warpscope {
namespace {

int FindMetric(const PmMetricSet& set, std::string_view name) {
  for (size_t i = 0; i < set.metric_names.size(); ++i) {
    if (set.metric_names[i] == name) return static_cast<int>(i);
  }
  return -1;
}

// Positions of the sol metrics in one set (-1: absent).
struct SolLayout {
  const PmMetricSet* set = nullptr;
  std::array<int, kSolUnitCount> unit{};
  int bytes_read = -1, bytes_write = -1, fma_inst = -1;
};

SolLayout LayoutOf(const PmMetricSet& set) {
  SolLayout l;
  l.set = &set;
  for (size_t u = 0; u < kSolUnitCount; ++u) l.unit[u] = FindMetric(set, kSolUnits[u].metric);
  l.bytes_read = FindMetric(set, kMetricDramBytesRead);
  l.bytes_write = FindMetric(set, kMetricDramBytesWrite);
  l.fma_inst = FindMetric(set, kMetricFmaPipeInstructions);
  return l;
}

double ValueAt(const PmSample& s, int index) {
  return index < 0 ? kNaN : s.values[static_cast<size_t>(index)];
}

// One row's bounds: the part of the time no own sample saw (u) may have held 0..100%.
std::pair<double, double> Bounds(double figure, double unseen) {
  unseen = std::clamp(unseen, 0.0, 1.0);
  const double seen = figure * (1 - unseen);
  return {seen, std::min(100.0, seen + 100.0 * unseen)};
}

}  // namespace

SolUnitValues NoSolValues() {
  SolUnitValues v;
  v.fill(kNaN);
  return v;
}

bool SolSamples::any_unit() const {
  return std::any_of(has_unit.begin(), has_unit.end(), [](bool b) { return b; });
}

double SolLaunch::Figure(size_t unit) const {
  return unit_ns[unit] > 0 ? activity[unit] / unit_ns[unit] : kNaN;
}

SolSamples ExtractSolSamples(const PmInputs& in) {
  SolSamples out;
  std::unordered_map<uint32_t, SolLayout> layouts;
  for (const PmMetricSet& set : in.metric_sets) {
    layouts[set.id] = LayoutOf(set);
    for (size_t u = 0; u < kSolUnitCount; ++u) {
      if (layouts[set.id].unit[u] >= 0) out.has_unit[u] = true;
    }
    if (out.times.IntervalOnDevice(set.device_id) == 0) {
      out.times.intervals.emplace_back(set.device_id, set.interval_ns);
    }
  }
  std::vector<std::pair<const PmSample*, const SolLayout*>> kept;
  for (const PmSample& s : in.samples) {
    auto it = layouts.find(s.metric_set_id);
    if (it == layouts.end() || it->second.set->metric_names.size() != s.values.size() ||
        s.duration_ns == 0 || !PmSampleProblem(s).empty()) {
      ++out.times.skipped;
      continue;
    }
    kept.emplace_back(&s, &it->second);
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& a, const auto& b) { return a.first->start_ns < b.first->start_ns; });
  for (const auto& [s, l] : kept) {
    ActiveWarpSample a;
    a.device_id = l->set->device_id;
    a.start_ns = s->start_ns;
    a.end_ns = s->end_ns();
    a.interval_ns = l->set->interval_ns;
    out.times.samples.push_back(a);
    SolUnitValues pct = NoSolValues();
    for (size_t u = 0; u < kSolUnitCount; ++u) pct[u] = ValueAt(*s, l->unit[u]);
    out.pct.push_back(pct);
    out.dram_bytes.push_back(ValueAt(*s, l->bytes_read) + ValueAt(*s, l->bytes_write));
    out.fma_inst.push_back(ValueAt(*s, l->fma_inst));
  }
  return out;
}

namespace {

// Adds one sample's share to a launch: o / B of what it measured.
void AddSample(const SolSamples& samples, const PmAttribution& attribution, uint32_t si,
               double overlap, SolLaunch& launch) {
  const ActiveWarpSample& s = samples.times.samples[si];
  const double busy = static_cast<double>(attribution.sample_busy_ns[si]);
  if (!(busy > 0)) return;
  const double share = overlap / busy;
  const double length = static_cast<double>(s.end_ns - s.start_ns);
  launch.used_ns += overlap;
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    const double pct = samples.pct[si][u];
    if (std::isnan(pct)) continue;
    launch.activity[u] += pct * length * share;
    launch.unit_ns[u] += overlap;
  }
  if (!std::isnan(samples.dram_bytes[si])) {
    launch.dram_bytes += samples.dram_bytes[si] * share;
    launch.dram_ns += overlap;
  }
  if (!std::isnan(samples.fma_inst[si])) {
    launch.fma_inst += samples.fma_inst[si] * share;
    launch.fma_ns += overlap;
  }
}

}  // namespace

std::vector<SolLaunch> AttributeSolSamples(std::span<const KernelEvent> kernels,
                                           const SolSamples& samples,
                                           std::span<const uint32_t> kernel_group) {
  return AttributeSolSamples(kernels, samples,
                             AttributeSamples(kernels, samples.times, kernel_group));
}

std::vector<SolLaunch> AttributeSolSamples(std::span<const KernelEvent> kernels,
                                           const SolSamples& samples,
                                           const PmAttribution& attribution) {
  std::vector<SolLaunch> out(kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    SolLaunch& launch = out[k];
    launch.duration_ns = kernels[k].duration_ns;
    const std::vector<SampleOverlap>& overlaps = attribution.kernel_samples[k];
    for (const SampleOverlap& o : overlaps) {
      launch.covered_ns += static_cast<double>(o.overlap_ns);
      if (attribution.sample_group_count[o.sample] <= 1) {
        launch.own_ns += static_cast<double>(o.overlap_ns);
      }
    }
    launch.from_shared = launch.own_ns == 0 && launch.covered_ns > 0;
    for (const SampleOverlap& o : overlaps) {
      const bool own = attribution.sample_group_count[o.sample] <= 1;
      if (own || launch.from_shared) {
        AddSample(samples, attribution, o.sample, static_cast<double>(o.overlap_ns), launch);
      }
    }
    // A unit above its peak measured other work too (a copy in the idle part of a sample,
    // another process): capped, and counted.
    for (size_t u = 0; u < kSolUnitCount; ++u) {
      if (launch.unit_ns[u] > 0 && launch.activity[u] > 100.0 * launch.unit_ns[u]) {
        launch.activity[u] = 100.0 * launch.unit_ns[u];
        ++launch.capped;
      }
    }
  }
  return out;
}

double SolMedian(std::vector<double> values) {
  if (values.empty()) return kNaN;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

double SolP90(std::vector<double> values) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

void SolMedianInterval(std::vector<double> lows, std::vector<double> highs, double* low,
                       double* high) {
  *low = *high = kNaN;
  const size_t n = lows.size();
  if (n == 0 || highs.size() != n) return;
  std::sort(lows.begin(), lows.end());
  std::sort(highs.begin(), highs.end());
  const double half = 0.5 * kZ95 * std::sqrt(static_cast<double>(n));
  const double center = static_cast<double>(n) / 2;
  const auto lo_rank = static_cast<int64_t>(std::floor(center - half));
  const auto hi_rank = static_cast<int64_t>(std::ceil(center + half));
  *low = lows[static_cast<size_t>(std::clamp<int64_t>(lo_rank, 1, n) - 1)];
  *high = highs[static_cast<size_t>(std::clamp<int64_t>(hi_rank, 1, n) - 1)];
}

namespace {

// Sums and lists of one kernel row while its launches are read.
struct RowBuild {
  SolKernel row;
  std::vector<uint64_t> durations;
  std::array<std::vector<double>, kSolUnitCount> figures, lows, highs;
  SolLaunch pooled;  // sums over the launches' used samples
  double covered_ns = 0, own_ns = 0;
};

void AddLaunch(const SolLaunch& l, RowBuild& b) {
  b.durations.push_back(l.duration_ns);
  b.covered_ns += l.covered_ns;
  b.own_ns += l.own_ns;
  b.row.capped += l.capped;
  if (l.used_ns > 0) ++b.row.measured_launches;
  if (l.from_shared) ++b.row.shared_launches;
  const double unseen =
      l.duration_ns == 0 ? 1.0 : 1.0 - l.own_ns / static_cast<double>(l.duration_ns);
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    const double figure = l.Figure(u);
    if (std::isnan(figure)) continue;
    const auto [lo, hi] = Bounds(figure, unseen);
    b.figures[u].push_back(figure);
    b.lows[u].push_back(lo);
    b.highs[u].push_back(hi);
    b.pooled.activity[u] += l.activity[u];
    b.pooled.unit_ns[u] += l.unit_ns[u];
  }
  b.pooled.dram_bytes += l.dram_bytes;
  b.pooled.dram_ns += l.dram_ns;
  b.pooled.fma_inst += l.fma_inst;
  b.pooled.fma_ns += l.fma_ns;
}

void FinishRow(RowBuild& b, uint64_t interval_ns) {
  SolKernel& r = b.row;
  const double total = static_cast<double>(r.total_ns);
  r.covered_fraction = total > 0 ? b.covered_ns / total : 0;
  r.own_fraction = total > 0 ? b.own_ns / total : 0;
  r.median_duration_ns = MedianOf(b.durations);
  r.pooled = interval_ns > 0 && r.median_duration_ns < interval_ns;
  r.value = r.p90 = r.low = r.high = NoSolValues();
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (b.figures[u].empty()) continue;
    if (r.pooled) {
      r.value[u] = b.pooled.Figure(u);
      std::tie(r.low[u], r.high[u]) = Bounds(r.value[u], 1.0 - r.own_fraction);
    } else {
      r.value[u] = SolMedian(b.figures[u]);
      r.p90[u] = SolP90(b.figures[u]);
      SolMedianInterval(b.lows[u], b.highs[u], &r.low[u], &r.high[u]);
    }
    r.low[u] = std::min(r.low[u], r.value[u]);  // the interval holds the figure
    r.high[u] = std::max(r.high[u], r.value[u]);
  }
  if (b.pooled.dram_ns > 0) r.dram_bytes_per_s = b.pooled.dram_bytes / b.pooled.dram_ns * 1e9;
  if (b.pooled.fma_ns > 0) r.fma_flop_per_s = b.pooled.fma_inst * 64.0 / b.pooled.fma_ns * 1e9;
}

}  // namespace

std::vector<SolKernel> BuildSolKernels(std::span<const KernelEvent> kernels,
                                       const SolSamples& samples) {
  // Rows: one per name and device; the attribution's groups are the rows.
  std::map<std::pair<std::string_view, uint32_t>, uint32_t> index;
  std::vector<uint32_t> group(kernels.size());
  std::vector<RowBuild> builds;
  for (size_t k = 0; k < kernels.size(); ++k) {
    auto [it, added] = index.try_emplace({kernels[k].name, kernels[k].device_id},
                                         static_cast<uint32_t>(builds.size()));
    if (added) {
      builds.emplace_back();
      builds.back().row.name = kernels[k].name;
      builds.back().row.device_id = kernels[k].device_id;
    }
    group[k] = it->second;
  }
  const PmAttribution attribution = AttributeSamples(kernels, samples.times, group);
  const std::vector<SolLaunch> launches = AttributeSolSamples(kernels, samples, attribution);
  for (size_t k = 0; k < kernels.size(); ++k) {
    RowBuild& b = builds[group[k]];
    ++b.row.launches;
    b.row.total_ns += kernels[k].duration_ns;
    AddLaunch(launches[k], b);
  }
  std::vector<SolKernel> out;
  out.reserve(builds.size());
  std::vector<SolUnitValues> prior;
  for (RowBuild& b : builds) {
    FinishRow(b, samples.times.IntervalOnDevice(b.row.device_id));
    prior.push_back(b.row.value);
    out.push_back(b.row);
  }
  const std::vector<SolUnmixed> unmixed =
      UnmixSolFigures(group, builds.size(), samples, attribution, prior);
  for (size_t g = 0; g < out.size(); ++g) {
    out[g].unmixed_ok = unmixed[g].solved;
    out[g].unmixed = unmixed[g].value;
    out[g].unmixed_low = unmixed[g].low;
    out[g].unmixed_high = unmixed[g].high;
  }
  return out;
}

}  // namespace warpscope
