// NVTX ranges projected onto the GPU through API correlation ids (see nvtx_projection.h).
// Linear-ish: GPU records are sorted by correlation id once, API calls by thread and start
// once; each range then binary-searches its thread's calls and walks the ones inside it.
#include "analyzers/measures/nvtx_projection.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string_view>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

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

enum class WorkKind : uint8_t { kKernel, kMemcpy, kMemset, kGraphLaunch };

// One GPU record, reduced to what the projection needs: one per kernel, copy and memset of
// the trace, so its fields are ordered to leave no padding (32 bytes).
struct WorkRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t index = 0;    // into the model's table of that kind
  uint32_t name_id = 0;  // into the projection's work names; only with work_by_name
  WorkKind kind = WorkKind::kKernel;
  bool in_graph = false;
};

// The GPU records that share one correlation id: the work of one API call (48 bytes).
struct LaunchedWork {
  uint64_t time_ns = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t first_record = 0;  // into the kept records
  uint32_t record_count = 0;
  uint32_t kernels = 0;
  uint32_t copies = 0;
  bool graph = false;
  bool claimed = false;  // an API record with this correlation id exists
};

struct LaunchCall {
  uint64_t start_ns = 0;
  uint32_t work = 0;  // into the LaunchedWork table
};

uint64_t EndOf(uint64_t start_ns, uint64_t duration_ns) {
  const uint64_t end = start_ns + duration_ns;
  return end < start_ns ? start_ns : end;  // a wrapped end is counted by the model
}

// Every GPU record of the model, sorted by correlation id. A GraphLaunchEvent is kept only
// when no kernel record shares its correlation id (`-t graph` records no node kernels).
std::vector<WorkRecord> CollectWork(const TraceModel& m) {
  std::vector<WorkRecord> all;
  all.reserve(m.kernels.size() + m.memcpys.size() + m.memsets.size() + m.graph_launches.size());
  auto add = [&](const StreamWork& w, WorkKind kind, uint32_t i, bool in_graph) {
    all.push_back({w.start_ns, EndOf(w.start_ns, w.duration_ns), w.correlation_id, i, 0, kind,
                   in_graph});
  };
  std::vector<size_t> run_ends;  // one run per kind, in file order
  for (uint32_t i = 0; i < m.kernels.size(); ++i) {
    add(m.kernels[i], WorkKind::kKernel, i, m.kernels[i].graph_id != 0);
  }
  run_ends.push_back(all.size());
  for (uint32_t i = 0; i < m.memcpys.size(); ++i) {
    add(m.memcpys[i], WorkKind::kMemcpy, i, m.memcpys[i].graph_node_id != 0);
  }
  run_ends.push_back(all.size());
  for (uint32_t i = 0; i < m.memsets.size(); ++i) add(m.memsets[i], WorkKind::kMemset, i, false);
  run_ends.push_back(all.size());
  for (uint32_t i = 0; i < m.graph_launches.size(); ++i) {
    add(m.graph_launches[i], WorkKind::kGraphLaunch, i, true);
  }
  run_ends.push_back(all.size());
  auto before = [](const WorkRecord& a, const WorkRecord& b) {
    return std::tie(a.correlation_id, a.kind, a.index) <
           std::tie(b.correlation_id, b.kind, b.index);
  };
  // A kind's records in file order are most often in correlation order already: merging the
  // runs then gives the order sorting gives (the key is unique), in linear time.
  size_t begin = 0;
  bool runs_sorted = true;
  for (size_t end : run_ends) {
    runs_sorted = runs_sorted && std::is_sorted(all.begin() + begin, all.begin() + end, before);
    begin = end;
  }
  if (!runs_sorted) {
    std::sort(all.begin(), all.end(), before);
    return all;
  }
  for (size_t r = 1; r < run_ends.size(); ++r) {
    std::inplace_merge(all.begin(), all.begin() + run_ends[r - 1], all.begin() + run_ends[r],
                       before);
  }
  return all;
}

// Groups sorted records by correlation id into `launched`, keeping in `records` (in place:
// a kept record never moves forward, so no second table of them is made) those that count.
// Records with correlation id 0 cannot be joined and are returned as a count.
uint64_t GroupByCorrelation(std::vector<WorkRecord>& records,
                            std::vector<LaunchedWork>& launched) {
  const std::vector<WorkRecord>& all = records;
  size_t groups = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    groups += all[i].correlation_id != 0 &&
              (i == 0 || all[i].correlation_id != all[i - 1].correlation_id);
  }
  launched.reserve(groups);
  size_t kept = 0;
  uint64_t unjoinable = 0;
  size_t i = 0;
  while (i < all.size()) {
    size_t j = i;
    bool has_kernel = false;
    while (j < all.size() && all[j].correlation_id == all[i].correlation_id) {
      has_kernel |= all[j].kind == WorkKind::kKernel;
      ++j;
    }
    if (all[i].correlation_id == 0) {
      for (size_t r = i; r < j; ++r) {
        unjoinable += all[r].kind != WorkKind::kGraphLaunch || !has_kernel;
      }
      i = j;
      continue;
    }
    LaunchedWork& w = launched.emplace_back();
    w.correlation_id = all[i].correlation_id;
    w.first_record = static_cast<uint32_t>(kept);
    for (size_t r = i; r < j; ++r) {
      const WorkRecord rec = all[r];
      w.graph |= rec.in_graph;
      if (rec.kind == WorkKind::kGraphLaunch && has_kernel) continue;
      w.time_ns += rec.end_ns - rec.start_ns;
      w.begin_ns = w.record_count == 0 ? rec.start_ns : std::min(w.begin_ns, rec.start_ns);
      w.end_ns = std::max(w.end_ns, rec.end_ns);
      w.kernels += rec.kind == WorkKind::kKernel;
      w.copies += rec.kind == WorkKind::kMemcpy || rec.kind == WorkKind::kMemset;
      ++w.record_count;
      records[kept++] = rec;
    }
    i = j;
  }
  records.resize(kept);  // not shrunk: a copy would hold both tables at once
  return unjoinable;
}

// Names kept records (kernel name or memory operation) with small ids, for work_by_name.
std::vector<std::string> NameWork(const TraceModel& m, std::vector<WorkRecord>& kept) {
  std::vector<std::string> names;
  std::unordered_map<std::string, uint32_t> ids;
  auto id_of = [&](std::string name) {
    auto [it, added] = ids.try_emplace(std::move(name), static_cast<uint32_t>(names.size()));
    if (added) names.push_back(it->first);
    return it->second;
  };
  // Kernel names repeat: look them up by view first, build a string only once per name.
  std::unordered_map<std::string_view, uint32_t> kernel_ids;
  for (WorkRecord& rec : kept) {
    switch (rec.kind) {
      case WorkKind::kKernel: {
        const KernelEvent& k = m.kernels[rec.index];
        const std::string_view key = !k.name.empty() ? k.name : k.mangled_name;
        auto it = kernel_ids.find(key);
        if (it == kernel_ids.end()) it = kernel_ids.emplace(key, id_of(KernelDisplayName(k))).first;
        rec.name_id = it->second;
        break;
      }
      case WorkKind::kMemcpy:
        rec.name_id = id_of(MemcpyOperationName(m.memcpys[rec.index].copy_kind));
        break;
      case WorkKind::kMemset:
        rec.name_id = id_of(std::string(kMemsetOperationName));
        break;
      case WorkKind::kGraphLaunch:
        rec.name_id =
            id_of(absl::StrCat("[CUDA graph ", m.graph_launches[rec.index].graph_id, "]"));
        break;
    }
  }
  return names;
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

// The launching calls, per thread in start order. CUPTI gives one API record per
// correlation id; should two share one, the first in the file claims the work.
std::unordered_map<uint64_t, std::vector<LaunchCall>> LaunchCallsByThread(
    const TraceModel& model, std::vector<LaunchedWork>& launched) {
  std::unordered_map<uint64_t, std::vector<LaunchCall>> calls_by_thread;
  for (const ApiCallEvent& a : model.api_calls) {
    if (a.correlation_id == 0) continue;
    auto it =
        std::lower_bound(launched.begin(), launched.end(), a.correlation_id,
                         [](const LaunchedWork& w, uint32_t id) { return w.correlation_id < id; });
    if (it == launched.end() || it->correlation_id != a.correlation_id || it->claimed) continue;
    it->claimed = true;
    calls_by_thread[a.thread_id].push_back(
        {a.start_ns, static_cast<uint32_t>(it - launched.begin())});
  }
  for (auto& [thread, calls] : calls_by_thread) {
    std::sort(calls.begin(), calls.end(), [](const LaunchCall& a, const LaunchCall& b) {
      return std::tie(a.start_ns, a.work) < std::tie(b.start_ns, b.work);
    });
  }
  return calls_by_thread;
}

// Lends the launches of threads without ranges of their own (not NCCL's) to the one thread
// that has a range of its own open when the launch starts; none when several have.
void LendLaunchesOfThreadsWithoutRanges(
    const TraceModel& model, std::unordered_map<uint64_t, std::vector<LaunchCall>>& calls) {
  std::map<uint64_t, std::vector<TimeInterval>> spans;  // per thread with ranges, merged
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (r.domain == "NCCL") continue;
    spans[r.thread_id].push_back({r.start_ns, EndOf(r.start_ns, r.duration_ns)});
  }
  if (spans.empty()) return;
  for (auto& [thread, s] : spans) s = MergedIntervals(std::move(s));
  auto open_at = [](const std::vector<TimeInterval>& s, uint64_t t) {
    auto it = std::upper_bound(s.begin(), s.end(), t,
                               [](uint64_t x, const TimeInterval& i) { return x < i.begin_ns; });
    return it != s.begin() && t <= std::prev(it)->end_ns;
  };
  std::vector<std::pair<uint64_t, LaunchCall>> lent;  // added after the walk over `calls`
  for (auto& [thread, list] : calls) {
    if (spans.contains(thread)) continue;
    std::vector<LaunchCall> kept;
    for (const LaunchCall& c : list) {
      uint64_t owner = 0;
      size_t open = 0;
      for (const auto& [other, s] : spans) {
        if (open_at(s, c.start_ns)) owner = other, ++open;
      }
      if (open == 1) {
        lent.push_back({owner, c});
      } else {
        kept.push_back(c);
      }
    }
    list = std::move(kept);
  }
  std::set<uint64_t> changed;
  for (const auto& [owner, c] : lent) {
    calls[owner].push_back(c);
    changed.insert(owner);
  }
  for (uint64_t owner : changed) {
    std::sort(calls[owner].begin(), calls[owner].end(), [](const LaunchCall& a, const LaunchCall& b) {
      return std::tie(a.start_ns, a.work) < std::tie(b.start_ns, b.work);
    });
  }
}

// Adds the GPU work launched by `calls` (one thread's, in start order) between a range's
// start and end to its group; with `names`, also its time per kernel or copy name.
void AddLaunchedWork(const std::vector<LaunchCall>& calls, uint64_t range_start_ns,
                     uint64_t range_end_ns, const std::vector<LaunchedWork>& launched,
                     const std::vector<WorkRecord>& kept,
                     std::unordered_map<uint32_t, GpuWorkTotals>* names, NvtxRangeGroup& g) {
  auto it = std::lower_bound(calls.begin(), calls.end(), range_start_ns,
                             [](const LaunchCall& c, uint64_t t) { return c.start_ns < t; });
  uint64_t begin_ns = 0, end_ns = 0;
  bool any = false;
  for (; it != calls.end() && it->start_ns <= range_end_ns; ++it) {
    const LaunchedWork& w = launched[it->work];
    g.gpu_time_ns += w.time_ns;
    g.kernels += w.kernels;
    g.copies += w.copies;
    g.graph_launches += w.graph;
    if (w.record_count > 0) {
      begin_ns = any ? std::min(begin_ns, w.begin_ns) : w.begin_ns;
      end_ns = std::max(end_ns, w.end_ns);
      any = true;
    }
    if (names != nullptr) {
      for (uint32_t k = w.first_record; k < w.first_record + w.record_count; ++k) {
        (*names)[kept[k].name_id].Add(kept[k].end_ns - kept[k].start_ns);
      }
    }
  }
  if (any) g.gpu_span_ns += end_ns - begin_ns;
}

}  // namespace

NvtxProjection ProjectNvtxRanges(const TraceModel& model, const NvtxProjectionOptions& options) {
  NvtxProjection out;
  out.api_calls = model.api_calls.size();

  std::vector<WorkRecord> kept = CollectWork(model);
  std::vector<LaunchedWork> launched;
  const uint64_t unjoinable = GroupByCorrelation(kept, launched);
  std::vector<std::string> work_names;
  if (options.work_by_name) work_names = NameWork(model, kept);

  std::unordered_map<uint64_t, std::vector<LaunchCall>> calls_by_thread =
      LaunchCallsByThread(model, launched);
  LendLaunchesOfThreadsWithoutRanges(model, calls_by_thread);
  out.gpu_records = kept.size() + unjoinable;
  out.gpu_records_without_api_call = unjoinable;
  for (const LaunchedWork& w : launched) {
    if (!w.claimed) out.gpu_records_without_api_call += w.record_count;
  }

  std::vector<CaptureWindowRange> windows = model.capture_windows;
  std::sort(windows.begin(), windows.end(),
            [](const CaptureWindowRange& a, const CaptureWindowRange& b) {
              return a.begin_ns < b.begin_ns;
            });

  std::vector<std::string> paths = RangePaths(model);
  if (!options.literal_ranges) {
    for (std::string& p : paths) p = RangeFamily(p);
  }
  using GroupKey = std::tuple<std::string_view, std::string_view, uint64_t>;
  std::map<GroupKey, size_t> group_of_key;
  std::vector<NvtxRangeGroup> groups;
  std::vector<std::unordered_map<uint32_t, GpuWorkTotals>> by_name;  // per group, by name id
  for (size_t i = 0; i < model.nvtx_ranges.size(); ++i) {
    const NvtxRange& r = model.nvtx_ranges[i];
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
    NvtxRangeGroup& g = groups[slot->second];
    const uint64_t end = EndOf(r.start_ns, r.duration_ns);
    g.cpu_durations_ns.push_back(end - r.start_ns);
    if (!windows.empty() && !InsideOneWindow(windows, r.start_ns, end)) ++g.cut_instances;

    auto calls = calls_by_thread.find(r.thread_id);
    if (calls == calls_by_thread.end()) continue;
    AddLaunchedWork(calls->second, r.start_ns, end, launched, kept,
                    options.work_by_name ? &by_name[slot->second] : nullptr, g);
  }

  out.groups.reserve(groups.size());
  for (const auto& [key, index] : group_of_key) {
    NvtxRangeGroup& g = groups[index];
    if (options.work_by_name) {
      for (const auto& [id, totals] : by_name[index]) g.work_by_name[work_names[id]] = totals;
    }
    out.groups.push_back(std::move(g));
  }
  return out;
}

}  // namespace warpscope
