// Indexes a trace for the advise rules: GPU work per device by start, launches by correlation
// id, host waits and NVTX segments per thread.
#include "analyzers/analyses/advise/advise_timeline.h"

#include "analyzers/measures/call_sites.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace warpscope::advise_internal {
namespace {

// A set of correlation ids: a bit each when they are dense, as CUPTI numbers them (from 1 up,
// so the bits span about the trace's calls), else a sorted list, so that a trace with ids far
// apart does not take a bit for each id in between.
class CorrelationIdSet {
 public:
  void Add(uint32_t id) { ids_.push_back(id); }
  void Seal() {
    uint32_t most = 0;
    for (uint32_t id : ids_) most = std::max(most, id);
    if (most / 64 <= ids_.size() + 4096) {
      bits_.assign(most / 64 + 1, 0);
      for (uint32_t id : ids_) bits_[id / 64] |= uint64_t{1} << (id % 64);
      ids_.clear();
      ids_.shrink_to_fit();
    } else {
      std::sort(ids_.begin(), ids_.end());
    }
  }
  bool Contains(uint32_t id) const {
    if (!bits_.empty()) return id / 64 < bits_.size() && (bits_[id / 64] >> (id % 64) & 1) != 0;
    return std::binary_search(ids_.begin(), ids_.end(), id);
  }

 private:
  std::vector<uint32_t> ids_;
  std::vector<uint64_t> bits_;
};

}  // namespace


AdviseTimeline::AdviseTimeline(const TraceModel& model, const AdviseOptions& options)
    : model_(model), literal_ranges_(options.literal_ranges) {
  IndexWork(options);
  IndexThreads(options.device);
  IndexRanges();
  steps_ = FindSteps(model.nvtx_ranges, options.step);
  warmup_steps_ =
      std::min(options.warmup_steps.value_or(WarmupSteps(steps_)), steps_.steps.size() / 2);
  if (!steps_.steps.empty()) steady_begin_ns_ = steps_.steps[warmup_steps_].start_ns;
}

void AdviseTimeline::IndexWork(const AdviseOptions& options) {
  auto selected = [&](uint32_t device) {
    return !options.device.has_value() || *options.device == device;
  };
  // Two walks, counting then filling, so that each device's table is allocated once at its
  // size: growing it would hold two copies at once, the largest part of advise's memory.
  std::map<uint32_t, size_t> counts;
  bool fill = false;
  auto add = [&](WorkKind kind, uint32_t index, const StreamWork& w) {
    if (!selected(w.device_id) || w.end_ns() < w.start_ns) return;
    if (fill) {
      work_[w.device_id].push_back({w, kind, index});
    } else {
      ++counts[w.device_id];
    }
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < model_.kernels.size(); ++i) {
      add(WorkKind::kKernel, i, model_.kernels[i]);
    }
    for (uint32_t i = 0; i < model_.memcpys.size(); ++i) {
      add(WorkKind::kMemcpy, i, model_.memcpys[i]);
    }
    for (uint32_t i = 0; i < model_.memsets.size(); ++i) {
      add(WorkKind::kMemset, i, model_.memsets[i]);
    }
    for (const auto& [device, count] : counts) work_[device].reserve(count);
    fill = true;
  }
  // Each device's table holds a run of kernels, then of copies, then of memsets, each in file
  // order, which is mostly start order already: each run is sorted (when it is not yet), then
  // the runs are merged.
  auto before = [](const GpuWork& a, const GpuWork& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns() < b.end_ns();
  };
  for (auto& [device, work] : work_) {
    auto run_begin = work.begin();
    while (run_begin != work.end()) {
      const WorkKind kind = run_begin->kind;
      auto run_end = std::find_if(run_begin, work.end(),
                                  [kind](const GpuWork& w) { return w.kind != kind; });
      if (!std::is_sorted(run_begin, run_end, before)) std::sort(run_begin, run_end, before);
      if (run_begin != work.begin()) std::inplace_merge(work.begin(), run_begin, run_end, before);
      run_begin = run_end;
    }
  }
}

void AdviseTimeline::IndexThreads(std::optional<uint32_t> device) {
  // Correlation ids of GPU work, to tell launches from other API calls.
  CorrelationIdSet launched;
  for (const auto& [device, work] : work_) {
    for (const GpuWork& w : work) launched.Add(w.correlation_id);
  }
  launched.Seal();
  auto was_launched = [&](uint32_t id) { return launched.Contains(id); };
  std::vector<uint64_t> launch_calls_ns;
  ThreadTimeline* thread = nullptr;  // the last call's: calls of a thread come in runs
  uint64_t thread_id = 0;
  for (uint32_t i = 0; i < model_.api_calls.size(); ++i) {
    const ApiCallEvent& api = model_.api_calls[i];
    if (was_launched(api.correlation_id)) {
      launch_calls_ns.push_back(api.duration_ns);
      launch_by_correlation_.emplace_back(api.correlation_id, i);
      if (thread == nullptr || api.thread_id != thread_id) {
        thread = &threads_[api.thread_id];
        thread_id = api.thread_id;
      }
      thread->launch_starts.push_back(api.start_ns);
    }
  }
  // In file order the ids mostly rise already.
  auto by_id = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(launch_by_correlation_.begin(), launch_by_correlation_.end(), by_id)) {
    std::stable_sort(launch_by_correlation_.begin(), launch_by_correlation_.end(), by_id);
  }
  median_launch_call_ns_ = MedianOf(std::move(launch_calls_ns));
  for (HostWait& wait : FindHostWaits(model_, device)) {
    threads_[wait.thread_id].waits.push_back(std::move(wait));
  }
  for (auto& [id, thread] : threads_) {
    std::sort(thread.launch_starts.begin(), thread.launch_starts.end());
    std::sort(thread.waits.begin(), thread.waits.end(), [](const HostWait& a, const HostWait& b) {
      return std::tie(a.end_ns, a.start_ns, a.label) < std::tie(b.end_ns, b.start_ns, b.label);
    });
  }
}

void AdviseTimeline::IndexRanges() {
  // Sweep each thread's range starts and ends; a segment starts at every boundary.
  std::map<uint64_t, std::vector<std::pair<uint64_t, int64_t>>> boundaries;  // (t, +-(i+1))
  for (uint32_t i = 0; i < model_.nvtx_ranges.size(); ++i) {
    const NvtxRange& r = model_.nvtx_ranges[i];
    if (r.duration_ns == 0) continue;
    boundaries[r.thread_id].push_back({r.start_ns, static_cast<int64_t>(i) + 1});
    boundaries[r.thread_id].push_back({r.end_ns(), -(static_cast<int64_t>(i) + 1)});
  }
  const auto& ranges = model_.nvtx_ranges;
  std::set<uint64_t> ranged;
  for (const NvtxRange& r : ranges) {
    if (r.domain != "NCCL" && r.duration_ns > 0) ranged.insert(r.thread_id);
  }
  ranged_threads_.assign(ranged.begin(), ranged.end());
  for (auto& [thread_id, events] : boundaries) {
    std::sort(events.begin(), events.end());
    ThreadTimeline& thread = threads_[thread_id];
    std::vector<uint32_t> open;
    for (size_t i = 0; i < events.size();) {
      const uint64_t t = events[i].first;
      for (; i < events.size() && events[i].first == t; ++i) {
        const int64_t e = events[i].second;
        if (e > 0) {
          open.push_back(static_cast<uint32_t>(e - 1));
        } else {
          open.erase(std::remove(open.begin(), open.end(), static_cast<uint32_t>(-e - 1)),
                     open.end());
        }
      }
      std::sort(open.begin(), open.end(), [&](uint32_t a, uint32_t b) {
        return std::tie(ranges[a].start_ns, ranges[a].depth) <
               std::tie(ranges[b].start_ns, ranges[b].depth);
      });
      thread.segment_starts.push_back(t);
      thread.open_ranges.push_back(open);
    }
  }
}

const ApiCallEvent* AdviseTimeline::LaunchOf(uint32_t correlation_id) const {
  auto [begin, end] = std::equal_range(
      launch_by_correlation_.begin(), launch_by_correlation_.end(),
      std::pair<uint32_t, uint32_t>(correlation_id, 0),
      [](const auto& a, const auto& b) { return a.first < b.first; });
  if (begin == end) return nullptr;
  // The runtime call, not the driver call it made, is what the program wrote: the last
  // runtime call of the id, else its first call.
  const ApiCallEvent* found = &model_.api_calls[begin->second];
  for (auto it = begin; it != end; ++it) {
    const ApiCallEvent& api = model_.api_calls[it->second];
    if (api.domain == v1::API_DOMAIN_RUNTIME) found = &api;
  }
  return found;
}

const ThreadTimeline* AdviseTimeline::Thread(uint64_t thread_id) const {
  auto it = threads_.find(thread_id);
  return it == threads_.end() ? nullptr : &it->second;
}

const std::vector<uint32_t>& AdviseTimeline::OpenRangesAt(uint64_t thread_id, uint64_t t) const {
  static const std::vector<uint32_t> kNone;
  const ThreadTimeline* thread = Thread(thread_id);
  if (thread == nullptr) return kNone;
  auto it = std::upper_bound(thread->segment_starts.begin(), thread->segment_starts.end(), t);
  if (it == thread->segment_starts.begin()) return kNone;
  return thread->open_ranges[static_cast<size_t>(it - thread->segment_starts.begin()) - 1];
}

std::string AdviseTimeline::RangeName(uint32_t range_index) const {
  const std::string_view name = model_.nvtx_ranges[range_index].name;
  return literal_ranges_ ? std::string(name) : RangeFamily(name);
}

std::string AdviseTimeline::RangePath(uint32_t range_index) const {
  const NvtxRange& range = model_.nvtx_ranges[range_index];
  if (!range.is_push_pop) return RangeName(range_index);
  std::string path;
  for (uint32_t i : OpenRangesAt(range.thread_id, range.start_ns)) {
    const NvtxRange& outer = model_.nvtx_ranges[i];
    if (i == range_index || !outer.is_push_pop || outer.depth >= range.depth) continue;
    if (outer.start_ns > range.start_ns || outer.end_ns() < range.end_ns()) continue;
    path.append(RangeName(i)).push_back('/');
  }
  path.append(RangeName(range_index));
  return path;
}

std::string AdviseTimeline::PathAt(uint64_t thread_id, uint64_t t) const {
  // The innermost range of the program's own (not NCCL's) open on `thread` at `t`.
  auto innermost_own = [&](uint64_t thread) -> std::optional<uint32_t> {
    const std::vector<uint32_t>& open = OpenRangesAt(thread, t);
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      if (model_.nvtx_ranges[*it].domain != "NCCL") return *it;
    }
    return std::nullopt;
  };
  if (!std::binary_search(ranged_threads_.begin(), ranged_threads_.end(), thread_id)) {
    std::optional<uint32_t> lent;
    size_t threads_open = 0;
    for (uint64_t other : ranged_threads_) {
      if (const auto r = innermost_own(other); r.has_value()) {
        lent = r;
        ++threads_open;
      }
    }
    if (threads_open == 1) return RangePath(*lent);
  }
  const std::vector<uint32_t>& open = OpenRangesAt(thread_id, t);
  return open.empty() ? std::string() : RangePath(open.back());
}

bool AdviseTimeline::RangeLaunchedWork(uint32_t range_index) const {
  const NvtxRange& range = model_.nvtx_ranges[range_index];
  return RangeLaunchedWorkBetween(range_index, range.start_ns, range.end_ns() + 1);
}

bool AdviseTimeline::RangeLaunchedWorkBetween(uint32_t range_index, uint64_t from,
                                              uint64_t to) const {
  const NvtxRange& range = model_.nvtx_ranges[range_index];
  const ThreadTimeline* thread = Thread(range.thread_id);
  if (thread == nullptr) return false;
  from = std::max(from, range.start_ns);
  to = std::min(to, range.end_ns() + 1);
  auto it = std::lower_bound(thread->launch_starts.begin(), thread->launch_starts.end(), from);
  return it != thread->launch_starts.end() && *it < to;
}

std::string AdviseTimeline::WorkName(const GpuWork& work) const {
  switch (work.kind) {
    case WorkKind::kKernel:
      return KernelDisplayName(model_.kernels[work.index]);
    case WorkKind::kMemcpy:
      return MemcpyOperationName(model_.memcpys[work.index].copy_kind);
    case WorkKind::kMemset:
      break;
  }
  return std::string(kMemsetOperationName);
}

std::string AdviseTimeline::CallSiteText(uint32_t correlation_id) const {
  if (model_.api_stacks.empty()) return "";
  return CallSiteOfCall(model_, correlation_id).Display();
}

std::string AdviseTimeline::CallSiteText(const std::vector<uint32_t>& correlation_ids) const {
  if (model_.api_stacks.empty()) return "";
  return MostCommonCallSite(model_, correlation_ids).Display();
}

void AdviseTimeline::DescribeThread(uint64_t thread_id, AdviseFinding* finding) const {
  if (const ThreadInfo* thread = model_.FindThread(thread_id); thread != nullptr) {
    finding->os_tid = thread->os_tid;
    finding->thread_name = thread->name;
  }
}

}  // namespace warpscope::advise_internal
