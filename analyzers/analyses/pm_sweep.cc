// PM samples attributed to launches in one sweep over sorted records (pm_sweep.h). The sweep
// follows AttributeSamples (pm_attribution.cc): per device, samples in start order, each
// measured against the launches that overlap it. A sample is measured once every launch that
// starts before its end has arrived; a launch is handed over once it ends before the next
// sample still to be measured starts, and before the sweep's time.
#include "analyzers/analyses/pm_sweep.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "analyzers/analyses/export/spill_sort.h"
#include "analyzers/model/interval_union.h"
#include "analyzers/model/trace_limits.h"

namespace warpscope {
namespace {

// Records held in memory before a sorted run goes to a temporary file: the most the sort
// holds, whatever the trace's size.
constexpr size_t kSortBudgetBytes = 16u << 20;
constexpr uint64_t kKernelRecord = 0, kSampleRecord = 1;

struct LaunchRecord {
  uint64_t index = 0, start_ns = 0, duration_ns = 0;
  uint32_t device_id = 0, group = 0;
};

template <typename T>
std::string_view Bytes(const T& value) {
  return {reinterpret_cast<const char*>(&value), sizeof(value)};
}

template <typename T>
T FromBytes(std::string_view bytes) {
  T value;
  std::memcpy(&value, bytes.data(), std::min(bytes.size(), sizeof(value)));
  return value;
}

// A measured sample as each launch it touches keeps it.
struct MeasuredSample {
  ActiveWarpSample sample;
  uint64_t overlap_ns = 0;  // with the launch that keeps it
  uint32_t kernels = 0, groups = 0;
  uint64_t busy_ns = 0;
};

class Sweeper {
 public:
  using Visit = std::function<void(const SweptKernel&, const SweptSamples&)>;
  Sweeper(const ActiveWarpSamples& totals, const std::vector<std::pair<uint32_t, uint64_t>>& counts,
          const Visit& visit)
      : visit_(visit) {
    one_ = totals;
    for (const auto& [device, n] : counts) {
      attribution_.device_ids.push_back(device);
      attribution_.device_sample_count.push_back(n);
    }
  }

  void AddKernel(const LaunchRecord& r) {
    Switch(r.device_id);
    now_ = r.start_ns;
    const SweptKernel k{r.index, r.group, r.start_ns, r.duration_ns, r.device_id};
    // Launches without time, or whose end overflows, touch no sample (AttributeSamples).
    if (r.duration_ns == 0 || EndOverflows(r.start_ns, r.duration_ns)) {
      Hand(k, {});
    } else {
      active_.push_back({k, {}});
    }
    Advance();
  }

  void AddSample(const ActiveWarpSample& s) {
    Switch(s.device_id);
    now_ = s.start_ns;
    pending_.push_back(s);
    Advance();
  }

  // The end of the records: every sample measured, every launch handed over.
  void Flush() {
    while (!pending_.empty()) {
      Measure(pending_.front());
      pending_.pop_front();
    }
    HandOver(std::numeric_limits<uint64_t>::max());
  }

 private:
  struct ActiveKernel {
    SweptKernel kernel;
    std::vector<MeasuredSample> samples;
    uint64_t end_ns() const { return kernel.start_ns + kernel.duration_ns; }
  };

  void Switch(uint32_t device) {
    if (device_.has_value() && *device_ == device) return;
    Flush();
    device_ = device;
  }

  void Advance() {
    while (!pending_.empty() && pending_.front().end_ns <= now_) {
      Measure(pending_.front());
      pending_.pop_front();
    }
    HandOver(pending_.empty() ? now_ : std::min(now_, pending_.front().start_ns));
  }

  // The launches that touch `s`: their overlaps, how many launches and groups, the busy time
  // (the union of their time in it).
  void Measure(const ActiveWarpSample& s) {
    touched_.clear();
    pieces_.clear();
    groups_.clear();
    for (size_t i = 0; i < active_.size(); ++i) {
      const SweptKernel& k = active_[i].kernel;
      const uint64_t lo = std::max(k.start_ns, s.start_ns);
      const uint64_t hi = std::min(active_[i].end_ns(), s.end_ns);
      if (hi <= lo) continue;
      touched_.emplace_back(i, hi - lo);
      pieces_.push_back({lo, hi});
      groups_.push_back(k.group);
    }
    std::sort(groups_.begin(), groups_.end());
    const auto groups =
        static_cast<uint32_t>(std::unique(groups_.begin(), groups_.end()) - groups_.begin());
    const uint64_t busy = LengthOfMerged(MergedIntervals(pieces_));
    for (const auto& [i, overlap] : touched_) {
      active_[i].samples.push_back(
          {s, overlap, static_cast<uint32_t>(touched_.size()), groups, busy});
    }
  }

  // Hands over the launches that end by `settled`: no sample still to come can touch them.
  void HandOver(uint64_t settled) {
    size_t kept = 0;
    for (size_t i = 0; i < active_.size(); ++i) {
      if (active_[i].end_ns() <= settled) {
        Hand(active_[i].kernel, active_[i].samples);
      } else {
        if (kept != i) active_[kept] = std::move(active_[i]);
        ++kept;
      }
    }
    active_.resize(kept);
  }

  void Hand(const SweptKernel& k, const std::vector<MeasuredSample>& samples) {
    one_.samples.clear();
    attribution_.sample_kernel_count.clear();
    attribution_.sample_group_count.clear();
    attribution_.sample_busy_ns.clear();
    overlaps_.clear();
    for (const MeasuredSample& m : samples) {
      overlaps_.push_back({static_cast<uint32_t>(one_.samples.size()), m.overlap_ns});
      one_.samples.push_back(m.sample);
      attribution_.sample_kernel_count.push_back(m.kernels);
      attribution_.sample_group_count.push_back(m.groups);
      attribution_.sample_busy_ns.push_back(m.busy_ns);
    }
    visit_(k, SweptSamples{one_, attribution_, overlaps_});
  }

  const Visit& visit_;
  ActiveWarpSamples one_;     // the totals, with one launch's samples
  PmAttribution attribution_;  // the counts of those samples
  std::vector<SampleOverlap> overlaps_;
  std::optional<uint32_t> device_;
  uint64_t now_ = 0;
  std::vector<ActiveKernel> active_;
  std::deque<ActiveWarpSample> pending_;  // arrived, in start order, not yet measured
  std::vector<std::pair<size_t, uint64_t>> touched_;
  std::vector<TimeInterval> pieces_;
  std::vector<uint32_t> groups_;
};

}  // namespace

PmSources PmSourcesOf(const TraceModel& model) {
  PmSources s;
  s.metric_sets = model.pm_metric_sets;
  s.devices = model.devices;
  s.samples_unavailable = model.pm_samples_unavailable;
  s.kernels = [&model](const std::function<void(const KernelEvent&)>& visit) {
    return ForEachEvent<KernelEvent>(model, visit);
  };
  s.samples = [&model](const std::function<void(const PmSample&)>& visit) {
    return ForEachPmSample(model, visit);
  };
  return s;
}

PmSources PmSourcesOf(const PmInputs& in) {
  PmSources s;
  s.metric_sets = in.metric_sets;
  s.devices = in.devices;
  s.samples_unavailable = in.samples_unavailable;
  s.kernels = [kernels = in.kernels](const std::function<void(const KernelEvent&)>& visit) {
    for (const KernelEvent& k : kernels) visit(k);
    return absl::OkStatus();
  };
  s.samples = [samples = in.samples](const std::function<void(const PmSample&)>& visit) {
    for (const PmSample& p : samples) visit(p);
    return absl::OkStatus();
  };
  return s;
}

absl::Status SweepPmSamples(const PmSources& sources,
                            const std::function<uint32_t(const KernelEvent&)>& group_of,
                            const std::function<void(const SweptKernel&, const SweptSamples&)>& visit,
                            PmSweepTotals* totals) {
  SpillSorter sorter(kSortBudgetBytes);
  absl::Status sorted;  // the first error of the sort
  uint64_t index = 0;
  absl::Status read = sources.kernels([&](const KernelEvent& k) {
    const LaunchRecord r{index, k.start_ns, k.duration_ns, k.device_id, group_of(k)};
    if (sorted.ok()) sorted = sorter.Add({k.device_id, k.start_ns, kKernelRecord, index}, Bytes(r));
    ++index;
  });
  if (!read.ok()) return read;
  ActiveWarpSampleExtractor extractor(sources.metric_sets, sources.devices);
  std::vector<std::pair<uint32_t, uint64_t>> counts;  // samples per device
  uint64_t order = 0;
  read = sources.samples([&](const PmSample& p) {
    const std::optional<ActiveWarpSample> a = extractor.Add(p);
    if (!a.has_value()) return;
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.first == a->device_id; });
    if (it == counts.end()) it = counts.insert(counts.end(), {a->device_id, 0});
    ++it->second;
    if (sorted.ok()) sorted = sorter.Add({a->device_id, a->start_ns, kSampleRecord, order}, Bytes(*a));
    ++order;
  });
  if (!read.ok()) return read;
  if (!sorted.ok()) return sorted;
  const ActiveWarpSamples& all = extractor.Finish();
  if (totals != nullptr) {
    totals->samples = all;
    totals->used_samples = order;
  }
  Sweeper sweeper(all, counts, visit);
  absl::Status drained = sorter.Drain([&](const SpillSorter::Key& key, std::string_view bytes) {
    if (key[2] == kKernelRecord) {
      sweeper.AddKernel(FromBytes<LaunchRecord>(bytes));
      return;
    }
    ActiveWarpSample a = FromBytes<ActiveWarpSample>(bytes);
    extractor.FillElapsed(a);
    sweeper.AddSample(a);
  });
  if (!drained.ok()) return drained;
  sweeper.Flush();
  return absl::OkStatus();
}

}  // namespace warpscope
