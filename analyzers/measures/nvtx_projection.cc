// NVTX ranges projected onto the GPU through API correlation ids (see nvtx_projection.h).
// The ranges are indexed per thread once; each API call and GPU record then waits, by
// correlation id, for its other half, and a joined record is added at once to the ranges open
// at its call: memory grows with the ranges and what waits, not with the records.
#include "analyzers/measures/nvtx_projection.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analyzers/measures/steps.h"
#include "analyzers/model/interval_union.h"

namespace warpscope {

void GpuWorkTotals::Add(uint64_t duration_ns) {
  min_ns = count == 0 ? duration_ns : std::min(min_ns, duration_ns);
  max_ns = std::max(max_ns, duration_ns);
  total_ns += duration_ns;
  ++count;
}

void GpuWorkTotals::Merge(const GpuWorkTotals& other) {
  if (other.count == 0) return;
  min_ns = count == 0 ? other.min_ns : std::min(min_ns, other.min_ns);
  max_ns = std::max(max_ns, other.max_ns);
  total_ns += other.total_ns;
  count += other.count;
}

void NvtxRangeGroup::Merge(const NvtxRangeGroup& other) {
  cpu_durations_ns.insert(cpu_durations_ns.end(), other.cpu_durations_ns.begin(),
                          other.cpu_durations_ns.end());
  gpu_time_ns += other.gpu_time_ns;
  gpu_span_ns += other.gpu_span_ns;
  kernels += other.kernels;
  copies += other.copies;
  graph_launches += other.graph_launches;
  cut_instances += other.cut_instances;
  for (const auto& [name, totals] : other.work_by_name) work_by_name[name].Merge(totals);
}

namespace {

uint64_t EndOf(uint64_t start_ns, uint64_t duration_ns) {
  const uint64_t end = start_ns + duration_ns;
  return end < start_ns ? start_ns : end;  // a wrapped end is counted by the model
}

// Paths of every range (by index into model.nvtx_ranges). Push/pop ranges of one thread
// nest by time; equal times are broken by the recorded depth, which is always larger for
// a range opened inside another.
std::vector<std::string> RangePaths(const TraceModel& m) {
  const std::vector<NvtxRange>& ranges = m.nvtx_ranges;
  std::vector<std::string> paths(ranges.size());
  std::vector<uint32_t> push_pop;
  for (uint32_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].is_push_pop) {
      push_pop.push_back(i);
    } else {
      paths[i] = std::string(ranges[i].name);
    }
  }
  auto end_of = [&](uint32_t i) { return EndOf(ranges[i].start_ns, ranges[i].duration_ns); };
  std::sort(push_pop.begin(), push_pop.end(), [&](uint32_t a, uint32_t b) {
    const NvtxRange& x = ranges[a];
    const NvtxRange& y = ranges[b];
    const uint64_t ex = end_of(a), ey = end_of(b);
    return std::tie(x.thread_id, x.start_ns, ey, x.depth, a) <
           std::tie(y.thread_id, y.start_ns, ex, y.depth, b);
  });
  std::vector<uint32_t> open;  // enclosing ranges on the current thread, innermost last
  for (size_t k = 0; k < push_pop.size(); ++k) {
    const uint32_t i = push_pop[k];
    if (k > 0 && ranges[push_pop[k - 1]].thread_id != ranges[i].thread_id) open.clear();
    while (!open.empty() &&
           (end_of(open.back()) < end_of(i) || ranges[open.back()].depth >= ranges[i].depth)) {
      open.pop_back();
    }
    paths[i] = open.empty() ? std::string(ranges[i].name)
                            : absl::StrCat(paths[open.back()], "/", std::string(ranges[i].name));
    open.push_back(i);
  }
  return paths;
}

// Whether [start, end] lies wholly inside one capture window (windows sorted by begin).
bool InsideOneWindow(const std::vector<CaptureWindowRange>& windows, uint64_t start, uint64_t end) {
  auto after =
      std::upper_bound(windows.begin(), windows.end(), start,
                       [](uint64_t t, const CaptureWindowRange& w) { return t < w.begin_ns; });
  if (after == windows.begin()) return false;
  const CaptureWindowRange& w = *std::prev(after);
  return !w.end_ns.has_value() || end <= *w.end_ns;
}

}  // namespace

namespace {

enum class WorkKind : uint8_t { kKernel, kMemcpy, kMemset, kGraphLaunch };

// One GPU record, reduced to what the projection needs (24 bytes).
struct WorkRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t name_id = 0;  // into the projection's work names; only with work_by_name
  WorkKind kind = WorkKind::kKernel;
  bool in_graph = false;
};

// One correlation id while it waits: its call, once seen, and its records until then.
struct Launch {
  uint64_t start_ns = 0;
  uint64_t thread_id = 0;  // the thread whose ranges claim it (lent, see the header)
  bool has_call = false;
  bool graph = false;          // a graph launch, or a record of one
  bool graph_counted = false;  // its ranges counted it as a graph launch
  bool has_kernel = false;
  bool has_graph_record = false;  // counts as work only when no kernel shares the id
  WorkRecord graph_record;
  std::vector<WorkRecord> waiting;  // records that came before the call
};

// The ranges of one thread by start, to find those open at an instant ([start, end]).
struct ThreadRanges {
  std::vector<uint32_t> index;  // into model.nvtx_ranges
  std::vector<uint64_t> start, end;
  std::vector<int64_t> skip;  // the last earlier range that ends later; -1 for none

  void Build(const std::vector<NvtxRange>& ranges) {
    std::sort(index.begin(), index.end(), [&](uint32_t a, uint32_t b) {
      return std::tie(ranges[a].start_ns, a) < std::tie(ranges[b].start_ns, b);
    });
    std::vector<int64_t> later;  // a stack of ends, decreasing
    for (uint32_t i : index) {
      const int64_t j = static_cast<int64_t>(start.size());
      start.push_back(ranges[i].start_ns);
      end.push_back(EndOf(ranges[i].start_ns, ranges[i].duration_ns));
      while (!later.empty() && end[later.back()] <= end[j]) later.pop_back();
      skip.push_back(later.empty() ? -1 : later.back());
      later.push_back(j);
    }
  }
  // Those that end before t are jumped over: every range between one and its skip ends no
  // later than it.
  template <typename Visit>
  void ForEachOpenAt(uint64_t t, Visit visit) const {
    int64_t j = std::upper_bound(start.begin(), start.end(), t) - start.begin() - 1;
    while (j >= 0) {
      if (end[j] >= t) {
        visit(index[j]);
        --j;
      } else {
        j = skip[j];
      }
    }
  }
};

}  // namespace

struct NvtxProjector::State {
  using GroupKey = std::tuple<std::string_view, std::string_view, uint64_t>;
  const TraceModel& model;
  NvtxProjectionOptions options;
  size_t max_in_flight = 0;
  std::vector<std::string> paths;  // per range
  std::vector<NvtxRangeGroup> groups;
  std::map<GroupKey, size_t> group_of_key;
  std::vector<uint32_t> group_of_range;
  std::vector<TimeInterval> range_work;  // per range: first start and last end of its work
  std::unordered_map<uint64_t, ThreadRanges> ranges_by_thread;
  std::map<uint64_t, std::vector<TimeInterval>> spans;  // threads with ranges of their own
  std::vector<std::unordered_map<uint32_t, GpuWorkTotals>> by_name;  // per group, by name id
  std::vector<std::string> work_names;
  std::unordered_map<std::string, uint32_t> work_ids;
  std::unordered_map<std::string_view, uint32_t> kernel_ids;  // views of the events' names
  absl::flat_hash_map<uint32_t, Launch> launches;  // by correlation id
  uint64_t api_calls = 0, gpu_records = 0, without_call = 0;
  uint64_t uncorrelated_kernels = 0, uncorrelated_graph_records = 0;

  State(const TraceModel& m, const NvtxProjectionOptions& o, size_t bound)
      : model(m), options(o), max_in_flight(bound) {}
  void MakeGroups();
  void IndexRanges();
  uint64_t ThreadFor(uint64_t thread_id, uint64_t t) const;
  template <typename Visit>
  void ForEachRange(const Launch& l, Visit visit) const {
    auto it = ranges_by_thread.find(l.thread_id);
    if (it != ranges_by_thread.end()) it->second.ForEachOpenAt(l.start_ns, visit);
  }
  void Attribute(const Launch& l, const WorkRecord& r);
  void CountGraph(Launch& l);
  void AddRecord(uint32_t correlation_id, const WorkRecord& r);
  void SettleLowest(size_t n);
  void AddCall(const ApiCallEvent& a);
  void Settle(Launch& l);
  void Bound();
  uint32_t NameId(std::string name);
};

void NvtxProjector::State::MakeGroups() {
  paths = RangePaths(model);
  if (!options.literal_ranges) {
    for (std::string& p : paths) p = RangeFamily(p);
  }
  std::vector<CaptureWindowRange> windows = model.capture_windows;
  std::sort(windows.begin(), windows.end(),
            [](const CaptureWindowRange& a, const CaptureWindowRange& b) {
              return a.begin_ns < b.begin_ns;
            });
  const std::vector<NvtxRange>& ranges = model.nvtx_ranges;
  group_of_range.reserve(ranges.size());
  range_work.assign(ranges.size(), {UINT64_MAX, 0});
  for (size_t i = 0; i < ranges.size(); ++i) {
    const NvtxRange& r = ranges[i];
    auto [slot, added] =
        group_of_key.try_emplace(GroupKey{r.domain, paths[i], r.thread_id}, groups.size());
    if (added) {
      NvtxRangeGroup& g = groups.emplace_back();
      g.domain = std::string(r.domain);
      g.name = options.literal_ranges ? std::string(r.name) : RangeFamily(r.name);
      g.path = paths[i];
      g.thread_id = r.thread_id;
      if (const ThreadInfo* t = model.FindThread(r.thread_id)) {
        g.os_tid = t->os_tid;
        g.thread_name = t->name;
      }
      if (options.work_by_name) by_name.emplace_back();
    }
    group_of_range.push_back(static_cast<uint32_t>(slot->second));
    NvtxRangeGroup& g = groups[slot->second];
    const uint64_t end = EndOf(r.start_ns, r.duration_ns);
    g.cpu_durations_ns.push_back(end - r.start_ns);
    if (!windows.empty() && !InsideOneWindow(windows, r.start_ns, end)) ++g.cut_instances;
  }
}

void NvtxProjector::State::IndexRanges() {
  const std::vector<NvtxRange>& ranges = model.nvtx_ranges;
  for (uint32_t i = 0; i < ranges.size(); ++i) {
    ranges_by_thread[ranges[i].thread_id].index.push_back(i);
    if (ranges[i].domain == "NCCL") continue;
    spans[ranges[i].thread_id].push_back(
        {ranges[i].start_ns, EndOf(ranges[i].start_ns, ranges[i].duration_ns)});
  }
  for (auto& [thread, list] : ranges_by_thread) list.Build(ranges);
  for (auto& [thread, s] : spans) s = MergedIntervals(std::move(s));
}

// A thread without ranges of its own (not NCCL's) lends its launches to the one thread that
// has a range of its own open when the launch starts; none when several have.
uint64_t NvtxProjector::State::ThreadFor(uint64_t thread_id, uint64_t t) const {
  if (spans.empty() || spans.contains(thread_id)) return thread_id;
  uint64_t owner = thread_id;
  size_t open = 0;
  for (const auto& [other, s] : spans) {
    auto it = std::upper_bound(s.begin(), s.end(), t,
                               [](uint64_t x, const TimeInterval& i) { return x < i.begin_ns; });
    if (it != s.begin() && t <= std::prev(it)->end_ns) owner = other, ++open;
  }
  return open == 1 ? owner : thread_id;
}

void NvtxProjector::State::Attribute(const Launch& l, const WorkRecord& r) {
  ++gpu_records;
  const uint64_t ns = r.end_ns - r.start_ns;
  ForEachRange(l, [&](uint32_t range) {
    const uint32_t group = group_of_range[range];
    NvtxRangeGroup& g = groups[group];
    g.gpu_time_ns += ns;
    g.kernels += r.kind == WorkKind::kKernel;
    g.copies += r.kind == WorkKind::kMemcpy || r.kind == WorkKind::kMemset;
    TimeInterval& work = range_work[range];
    work.begin_ns = std::min(work.begin_ns, r.start_ns);
    work.end_ns = std::max(work.end_ns, r.end_ns);
    if (options.work_by_name) by_name[group][r.name_id].Add(ns);
  });
}

void NvtxProjector::State::CountGraph(Launch& l) {
  if (!l.has_call || !l.graph || l.graph_counted) return;
  l.graph_counted = true;
  ForEachRange(l, [&](uint32_t range) { ++groups[group_of_range[range]].graph_launches; });
}

void NvtxProjector::State::AddRecord(uint32_t correlation_id, const WorkRecord& r) {
  if (correlation_id == 0) {
    if (r.kind == WorkKind::kGraphLaunch) {
      ++uncorrelated_graph_records;
      return;
    }
    uncorrelated_kernels += r.kind == WorkKind::kKernel;
    ++gpu_records;
    ++without_call;
    return;
  }
  auto [it, added] = launches.try_emplace(correlation_id);
  Launch& l = it->second;
  l.graph |= r.in_graph;
  if (r.kind == WorkKind::kGraphLaunch) {
    if (!l.has_kernel && !l.has_graph_record) l.graph_record = r, l.has_graph_record = true;
  } else {
    l.has_kernel |= r.kind == WorkKind::kKernel;
    if (l.has_call) {
      Attribute(l, r);
    } else {
      l.waiting.push_back(r);
    }
  }
  l.has_graph_record &= !l.has_kernel;
  CountGraph(l);
  // One record per call but for graph launches: a bounded projection lets the pair go.
  if (max_in_flight != 0 && l.has_call && !l.graph) {
    launches.erase(it);
  } else if (added) {
    Bound();
  }
}

void NvtxProjector::State::AddCall(const ApiCallEvent& a) {
  ++api_calls;
  if (a.correlation_id == 0) return;
  auto [it, added] = launches.try_emplace(a.correlation_id);
  Launch& l = it->second;
  if (l.has_call) return;  // should two share an id, the first in the file claims the work
  l.has_call = true;
  l.start_ns = a.start_ns;
  l.thread_id = ThreadFor(a.thread_id, a.start_ns);
  for (const WorkRecord& r : l.waiting) Attribute(l, r);
  const bool joined = !l.waiting.empty();
  l.waiting = {};
  CountGraph(l);
  if (max_in_flight != 0 && joined && !l.graph) {
    launches.erase(it);
  } else if (added) {
    Bound();
  }
}

// A launch that waits no longer: its records without a call count as such, and a graph
// launch record with no kernel of its own as the work of its call.
void NvtxProjector::State::Settle(Launch& l) {
  gpu_records += l.waiting.size();
  without_call += l.waiting.size();
  if (l.has_graph_record && !l.has_kernel) {
    if (l.has_call) {
      Attribute(l, l.graph_record);
    } else {
      ++gpu_records;
      ++without_call;
    }
  }
}

// Past the bound by an eighth, the lowest correlation ids (the oldest) are settled down to the
// bound: one selection per max_in_flight / 8 launches, not an order kept at every call.
void NvtxProjector::State::Bound() {
  if (max_in_flight != 0 && launches.size() > max_in_flight + max_in_flight / 8) {
    SettleLowest(launches.size() - max_in_flight);
  }
}

// Settles and lets go the n launches of lowest correlation id, lowest first.
void NvtxProjector::State::SettleLowest(size_t n) {
  std::vector<uint32_t> ids;
  ids.reserve(launches.size());
  for (const auto& [id, l] : launches) ids.push_back(id);
  n = std::min(n, ids.size());
  std::nth_element(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end());
  ids.resize(n);
  std::sort(ids.begin(), ids.end());
  for (uint32_t id : ids) {
    auto it = launches.find(id);
    Settle(it->second);
    launches.erase(it);
  }
}

uint32_t NvtxProjector::State::NameId(std::string name) {
  auto [it, added] = work_ids.try_emplace(std::move(name), static_cast<uint32_t>(work_names.size()));
  if (added) work_names.push_back(it->first);
  return it->second;
}

NvtxProjector::NvtxProjector(const TraceModel& model, const NvtxProjectionOptions& options,
                             size_t max_in_flight)
    : state_(std::make_unique<State>(model, options, max_in_flight)) {
  state_->MakeGroups();
  state_->IndexRanges();
}

NvtxProjector::~NvtxProjector() = default;

void NvtxProjector::Add(const ApiCallEvent& call) { state_->AddCall(call); }

void NvtxProjector::Add(const KernelEvent& k) {
  WorkRecord r{k.start_ns, EndOf(k.start_ns, k.duration_ns), 0, WorkKind::kKernel, k.graph_id != 0};
  if (state_->options.work_by_name) {
    const std::string_view key = !k.name.empty() ? k.name : k.mangled_name;
    auto it = state_->kernel_ids.find(key);
    if (it == state_->kernel_ids.end()) {
      it = state_->kernel_ids.emplace(key, state_->NameId(KernelDisplayName(k))).first;
    }
    r.name_id = it->second;
  }
  state_->AddRecord(k.correlation_id, r);
}

void NvtxProjector::Add(const MemcpyEvent& c) {
  WorkRecord r{c.start_ns, EndOf(c.start_ns, c.duration_ns), 0, WorkKind::kMemcpy,
               c.graph_node_id != 0};
  if (state_->options.work_by_name) r.name_id = state_->NameId(MemcpyOperationName(c.copy_kind));
  state_->AddRecord(c.correlation_id, r);
}

void NvtxProjector::Add(const MemsetEvent& s) {
  WorkRecord r{s.start_ns, EndOf(s.start_ns, s.duration_ns), 0, WorkKind::kMemset, false};
  if (state_->options.work_by_name) r.name_id = state_->NameId(std::string(kMemsetOperationName));
  state_->AddRecord(s.correlation_id, r);
}

void NvtxProjector::Add(const GraphLaunchEvent& g) {
  WorkRecord r{g.start_ns, EndOf(g.start_ns, g.duration_ns), 0, WorkKind::kGraphLaunch, true};
  if (state_->options.work_by_name) {
    r.name_id = state_->NameId(absl::StrCat("[CUDA graph ", g.graph_id, "]"));
  }
  state_->AddRecord(g.correlation_id, r);
}

NvtxProjection NvtxProjector::Finish() {
  State& s = *state_;
  s.SettleLowest(s.launches.size());
  if (s.uncorrelated_kernels == 0) {
    s.gpu_records += s.uncorrelated_graph_records;
    s.without_call += s.uncorrelated_graph_records;
  }
  for (size_t i = 0; i < s.range_work.size(); ++i) {
    const TimeInterval& w = s.range_work[i];
    if (w.begin_ns <= w.end_ns) s.groups[s.group_of_range[i]].gpu_span_ns += w.end_ns - w.begin_ns;
  }
  NvtxProjection out;
  out.api_calls = s.api_calls;
  out.gpu_records = s.gpu_records;
  out.gpu_records_without_api_call = s.without_call;
  out.groups.reserve(s.groups.size());
  for (const auto& [key, index] : s.group_of_key) {
    NvtxRangeGroup& g = s.groups[index];
    if (s.options.work_by_name) {
      for (const auto& [id, totals] : s.by_name[index]) g.work_by_name[s.work_names[id]] = totals;
    }
    out.groups.push_back(std::move(g));
  }
  return out;
}

NvtxProjection ProjectNvtxRanges(const TraceModel& model, const NvtxProjectionOptions& options) {
  NvtxProjector projector(model, options);
  for (const ApiCallEvent& a : model.api_calls) projector.Add(a);
  for (const KernelEvent& k : model.kernels) projector.Add(k);
  for (const MemcpyEvent& c : model.memcpys) projector.Add(c);
  for (const MemsetEvent& m : model.memsets) projector.Add(m);
  for (const GraphLaunchEvent& g : model.graph_launches) projector.Add(g);
  return projector.Finish();
}

}  // namespace warpscope
