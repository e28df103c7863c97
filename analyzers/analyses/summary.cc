// Kernel / API / memory / NVTX statistics, GPU busy time, and host waits and kernel time by
// call site (see summary.h).
#include "analyzers/analyses/summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/measures/host_waits.h"
#include "analyzers/model/interval_union_stream.h"
#include "analyzers/model/trace_model.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

using DurationGroups = std::map<std::string, DurationSketch>;

std::vector<NamedDurations> ToRows(const DurationGroups& groups) {
  std::vector<NamedDurations> rows;
  uint64_t grand_total = 0;
  for (const auto& [name, durations] : groups) {
    NamedDurations& row = rows.emplace_back();
    row.name = name;
    row.time = DurationStats::Of(durations);
    grand_total += row.time.total_ns;
  }
  for (NamedDurations& row : rows) {
    row.time_percent = grand_total == 0 ? 0 : 100.0 * row.time.total_ns / grand_total;
  }
  return rows;
}

// Orders rows by the --sort key (largest first; names ascending), ties by name.
template <typename Row, typename NameOf>
void SortAndCut(std::vector<Row>& rows, const SummaryOptions& options, NameOf name_of) {
  auto key = [&](const Row& r) -> double {
    switch (options.sort) {
      case SummarySort::kCount:
        return static_cast<double>(r.time.count);
      case SummarySort::kAvg:
        return r.time.avg_ns;
      case SummarySort::kMax:
        return static_cast<double>(r.time.max_ns);
      case SummarySort::kTotal:
        return static_cast<double>(r.time.total_ns);
      case SummarySort::kName:
        return 0;
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (options.sort != SummarySort::kName) {
      const double ka = key(a), kb = key(b);
      if (ka != kb) return ka > kb;
    }
    return name_of(a) < name_of(b);
  });
  if (options.top > 0 && rows.size() > options.top) rows.resize(options.top);
}

void SortNamed(std::vector<NamedDurations>& rows, const SummaryOptions& options) {
  SortAndCut(rows, options, [](const NamedDurations& r) { return r.name; });
}

void SortMemory(std::vector<MemoryOperationSummary>& rows, const SummaryOptions& options) {
  SortAndCut(rows, options, [](const MemoryOperationSummary& r) { return r.operation; });
}

struct MemoryGroup {
  DurationSketch time;
  uint64_t total_bytes = 0, min_bytes = 0, max_bytes = 0;
  void Add(uint64_t ns, uint64_t bytes) {
    min_bytes = time.count() == 0 ? bytes : std::min(min_bytes, bytes);
    max_bytes = std::max(max_bytes, bytes);
    total_bytes += bytes;
    time.Add(ns);
  }
  void Merge(const MemoryGroup& other) {
    if (other.time.count() == 0) return;
    min_bytes = time.count() == 0 ? other.min_bytes : std::min(min_bytes, other.min_bytes);
    max_bytes = std::max(max_bytes, other.max_bytes);
    total_bytes += other.total_bytes;
    time.Merge(other.time);
  }
};
using MemoryGroups = std::map<std::string, MemoryGroup>;

std::vector<MemoryOperationSummary> ToMemoryRows(const MemoryGroups& groups) {
  std::vector<MemoryOperationSummary> rows;
  uint64_t grand_total = 0;
  for (const auto& [operation, group] : groups) {
    MemoryOperationSummary& row = rows.emplace_back();
    row.operation = operation;
    row.time = DurationStats::Of(group.time);
    row.total_bytes = group.total_bytes;
    row.min_bytes = group.min_bytes;
    row.max_bytes = group.max_bytes;
    row.avg_bytes = static_cast<double>(row.total_bytes) / group.time.count();
    grand_total += row.time.total_ns;
  }
  for (MemoryOperationSummary& row : rows) {
    row.time_percent = grand_total == 0 ? 0 : 100.0 * row.time.total_ns / grand_total;
  }
  return rows;
}

template <typename Groups>
void MergeGroups(const Groups& from, Groups& into) {
  for (const auto& [name, group] : from) into[name].Merge(group);
}

GpuBusy BusyOf(const UnionTotals& u) {
  GpuBusy busy;
  busy.begin_ns = u.begin_ns;
  busy.end_ns = u.end_ns;
  busy.busy_ns = u.covered_ns;
  busy.idle_ns = u.end_ns - u.begin_ns - u.covered_ns;
  busy.gaps = u.gaps;
  busy.longest_gap_ns = u.longest_gap_ns;
  busy.late_records = u.late;
  return busy;
}

// The group of each name as the events hold it (a view into their model's interned strings:
// one address per distinct name), so that the groups keyed by string are searched once per
// name, not once per event.
template <typename Group>
class GroupOfName {
 public:
  explicit GroupOfName(std::map<std::string, Group>& groups) : groups_(groups) {}
  template <typename NameOf>
  Group& Find(std::string_view name, NameOf name_of) {
    auto [it, added] = cache_.try_emplace(name.data(), name.size(), nullptr);
    if (added || it->second.first != name.size()) it->second = {name.size(), &groups_[name_of()]};
    return *it->second.second;
  }

 private:
  std::map<std::string, Group>& groups_;
  std::unordered_map<const char*, std::pair<size_t, Group*>> cache_;
};

// One device's GPU work, folded.
struct DeviceFold {
  explicit DeviceFold(size_t window) : busy(window) {}
  DurationGroups kernels;
  MemoryGroups memory;
  IntervalUnionStream busy;
  GroupOfName<DurationSketch> kernel_group{kernels};
};

constexpr EventKinds kFoldedEvents =
    EventKindBit(EventKind::kKernel) | EventKindBit(EventKind::kMemcpy) |
    EventKindBit(EventKind::kMemset) | EventKindBit(EventKind::kApiCall) |
    EventKindBit(EventKind::kGraphLaunch);

// One trace's GPU work and API calls folded as they come, and its NVTX projection.
class TraceFold : public TraceEventSink {
 public:
  TraceFold(const TraceModel& model, const SummaryOptions& options, bool file_order)
      : window_(file_order ? IntervalUnionStream::kDefaultWindow : size_t{1} << 60) {
    if (!options.nvtx && !options.nvtx_kernels) return;  // only the NVTX reports use it
    NvtxProjectionOptions projection;
    projection.work_by_name = options.nvtx_kernels;
    projection.literal_ranges = options.literal_ranges;
    projector = std::make_unique<NvtxProjector>(
        model, projection, file_order ? NvtxProjector::kFileOrderInFlight : 0);
  }
  using TraceEventSink::Add;
  void Add(const KernelEvent& k) override {
    DeviceFold& d = Device(k.device_id);
    // KernelDisplayName is the name, else the mangled name, else a constant.
    d.kernel_group.Find(!k.name.empty() ? k.name : k.mangled_name,
                        [&] { return KernelDisplayName(k); })
        .Add(k.duration_ns);
    d.busy.Add({k.start_ns, std::max(k.start_ns, k.end_ns())});
    if (projector) projector->Add(k);
  }
  void Add(const MemcpyEvent& c) override {
    DeviceFold& d = Device(c.device_id);
    d.memory[MemcpyOperationName(c.copy_kind)].Add(c.duration_ns, c.bytes);
    d.busy.Add({c.start_ns, std::max(c.start_ns, c.end_ns())});
    if (projector) projector->Add(c);
  }
  void Add(const MemsetEvent& s) override {
    DeviceFold& d = Device(s.device_id);
    d.memory[std::string(kMemsetOperationName)].Add(s.duration_ns, s.bytes);
    d.busy.Add({s.start_ns, std::max(s.start_ns, s.end_ns())});
    if (projector) projector->Add(s);
  }
  void Add(const ApiCallEvent& a) override {
    api_group_.Find(a.name, [&] { return std::string(a.name); }).Add(a.duration_ns);
    if (projector) projector->Add(a);
  }
  void Add(const GraphLaunchEvent& g) override {
    if (projector) projector->Add(g);
  }
  DeviceFold& Device(uint32_t id) { return devices.try_emplace(id, window_).first->second; }

  std::map<uint32_t, DeviceFold> devices;
  DurationGroups api;
  std::unique_ptr<NvtxProjector> projector;

 private:
  size_t window_;
  GroupOfName<DurationSketch> api_group_{api};
};

// Folds `model`'s GPU work and API calls: from its tables when they were kept (or `tables`
// says so), else from its file read again in one pass.
absl::StatusOr<std::unique_ptr<TraceFold>> FoldTrace(const TraceModel& model,
                                                     const SummaryOptions& options,
                                                     bool tables) {
  tables = tables || (model.kept_events & kFoldedEvents) == kFoldedEvents;
  auto fold = std::make_unique<TraceFold>(model, options, !tables);
  if (!tables) {
    // As ReadEventsAgain, for several kinds in one pass.
    TraceModelOptions again;
    again.keep_events = 0;
    again.keep_pc_sample_records = false;
    again.sink = fold.get();
    again.sink_events = kFoldedEvents;
    again.skip_other_events = true;
    again.slice = model.slice;
    if (absl::Status s = TraceModel::Load(model.source_name, again).status(); !s.ok()) return s;
    return fold;
  }
  for (const ApiCallEvent& a : model.api_calls) fold->Add(a);
  for (const KernelEvent& k : model.kernels) fold->Add(k);
  for (const MemcpyEvent& c : model.memcpys) fold->Add(c);
  for (const MemsetEvent& m : model.memsets) fold->Add(m);
  for (const GraphLaunchEvent& g : model.graph_launches) fold->Add(g);
  return fold;
}

// NVTX rows by GPU time for `total` (host time breaks ties), else by the host figures.
void SortNvtx(std::vector<NvtxRangeSummary>& rows, const SummaryOptions& options) {
  auto key = [&](const NvtxRangeSummary& r) -> std::pair<double, double> {
    switch (options.sort) {
      case SummarySort::kCount:
        return {static_cast<double>(r.cpu.count), 0};
      case SummarySort::kAvg:
        return {r.cpu.avg_ns, 0};
      case SummarySort::kMax:
        return {static_cast<double>(r.cpu.max_ns), 0};
      case SummarySort::kTotal:
        return {static_cast<double>(r.gpu_time_ns), static_cast<double>(r.cpu.total_ns)};
      case SummarySort::kName:
        break;
    }
    return {0, 0};
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const NvtxRangeSummary& a,
                                                 const NvtxRangeSummary& b) {
    if (options.sort != SummarySort::kName) {
      const auto ka = key(a), kb = key(b);
      if (ka != kb) return ka > kb;
    }
    return std::tie(a.path, a.domain, a.os_tid) < std::tie(b.path, b.domain, b.os_tid);
  });
  if (options.top > 0 && rows.size() > options.top) rows.resize(options.top);
}

std::vector<NvtxRangeSummary> ToNvtxRows(std::vector<NvtxRangeGroup>& groups,
                                         const SummaryOptions& options) {
  std::vector<NvtxRangeSummary> rows;
  rows.reserve(groups.size());
  for (NvtxRangeGroup& g : groups) {
    NvtxRangeSummary& row = rows.emplace_back();
    row.domain = g.domain;
    row.name = g.name;
    row.path = g.path;
    row.all_threads = g.all_threads;
    row.os_tid = g.os_tid;
    row.thread_name = g.thread_name;
    row.cpu = DurationStats::Of(g.cpu_durations_ns);
    row.gpu_time_ns = g.gpu_time_ns;
    row.gpu_span_ns = g.gpu_span_ns;
    row.kernels = g.kernels;
    row.copies = g.copies;
    row.graph_launches = g.graph_launches;
    row.cut_instances = g.cut_instances;
    for (const auto& [name, totals] : g.work_by_name) {
      NvtxWorkSummary& w = row.work.emplace_back();
      w.name = name;
      w.time = totals;
      w.range_percent = g.gpu_time_ns == 0 ? 0 : 100.0 * totals.total_ns / g.gpu_time_ns;
    }
    std::stable_sort(row.work.begin(), row.work.end(),
                     [](const NvtxWorkSummary& a, const NvtxWorkSummary& b) {
                       if (a.time.total_ns != b.time.total_ns) {
                         return a.time.total_ns > b.time.total_ns;
                       }
                       return a.name < b.name;
                     });
    if (options.top > 0 && row.work.size() > options.top) row.work.resize(options.top);
  }
  SortNvtx(rows, options);
  return rows;
}

}  // namespace

DurationStats DurationStats::Of(std::vector<uint64_t>& durations) {
  DurationStats s;
  s.count = durations.size();
  if (durations.empty()) return s;
  std::sort(durations.begin(), durations.end());
  for (uint64_t d : durations) s.total_ns += d;
  s.min_ns = durations.front();
  s.max_ns = durations.back();
  s.avg_ns = static_cast<double>(s.total_ns) / s.count;
  const size_t mid = durations.size() / 2;
  s.median_ns = durations.size() % 2 == 1
                    ? static_cast<double>(durations[mid])
                    : (static_cast<double>(durations[mid - 1]) + durations[mid]) / 2;
  if (durations.size() > 1) {
    double sum_sq = 0;
    for (uint64_t d : durations) {
      const double diff = static_cast<double>(d) - s.avg_ns;
      sum_sq += diff * diff;
    }
    s.stddev_ns = std::sqrt(sum_sq / (durations.size() - 1));
  }
  return s;
}

absl::Status ParseSummarySort(std::string_view name, SummaryOptions* options) {
  if (name == "total") {
    options->sort = SummarySort::kTotal;
  } else if (name == "count") {
    options->sort = SummarySort::kCount;
  } else if (name == "avg") {
    options->sort = SummarySort::kAvg;
  } else if (name == "max") {
    options->sort = SummarySort::kMax;
  } else if (name == "name") {
    options->sort = SummarySort::kName;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown sort key ",
                                                   QuoteValue(std::string(name)),
                                                   ": use total, count, avg, max or name"));
  }
  return absl::OkStatus();
}

absl::Status ParseSummaryReports(std::string_view list, SummaryOptions* options) {
  options->kernels = options->api = options->memory = options->nvtx = options->idle = false;
  options->nvtx_kernels = options->syncs = options->launch_sites = false;
  for (absl::string_view item :
       absl::StrSplit(absl::string_view(list.data(), list.size()), ',', absl::SkipWhitespace())) {
    if (item == "kernels") {
      options->kernels = true;
    } else if (item == "api") {
      options->api = true;
    } else if (item == "memory") {
      options->memory = true;
    } else if (item == "nvtx") {
      options->nvtx = true;
    } else if (item == "nvtx-kernels") {
      options->nvtx_kernels = true;
    } else if (item == "idle") {
      options->idle = true;
    } else if (item == "syncs") {
      options->syncs = true;
    } else if (item == "launch-sites") {
      options->launch_sites = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown report ",
                                                     QuoteValue(std::string(item)),
                                                     ": use kernels, api, memory, nvtx, "
                                                     "nvtx-kernels, idle, syncs or launch-sites"));
    }
  }
  if (!options->kernels && !options->api && !options->memory && !options->nvtx &&
      !options->nvtx_kernels && !options->idle && !options->syncs && !options->launch_sites) {
    return absl::InvalidArgumentError(
        "--report names no report: use "
        "kernels,api,memory,nvtx,nvtx-kernels,idle,syncs,launch-sites");
  }
  return absl::OkStatus();
}

namespace {

// Rows by total time (then the --sort key); each row's calls most time first.
std::vector<CallSiteSummary> ToSiteRows(const CallSiteGroups& sites,
                                        const SummaryOptions& options) {
  std::vector<CallSiteSummary> rows;
  uint64_t grand_total = 0;
  for (const auto& [key, g] : sites.groups()) {
    CallSiteSummary& row = rows.emplace_back();
    row.site = g.site.site;
    row.function = g.site.function;
    row.source_file = g.site.file;
    row.line = g.site.frame == nullptr ? 0 : g.site.frame->line;
    row.stack_cut = g.site.past_cut;
    std::vector<std::pair<uint64_t, std::string>> calls;
    for (const auto& [name, ns] : g.ns_by_call) calls.emplace_back(ns, name);
    std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (auto& [ns, name] : calls) row.calls.push_back(std::move(name));
    std::vector<uint64_t> durations = g.durations_ns;  // Of sorts them
    row.time = DurationStats::Of(durations);
    grand_total += row.time.total_ns;
  }
  for (CallSiteSummary& row : rows) {
    row.time_percent = grand_total == 0 ? 0 : 100.0 * row.time.total_ns / grand_total;
  }
  SortAndCut(rows, options, [](const CallSiteSummary& r) { return r.site + " " + r.function; });
  return rows;
}

// Host waits (measures/host_waits.h) and kernels of `model`, by the call site of their call.
void CollectCallSites(const TraceModel& model, const SummaryOptions& options,
                      CallSiteGroups& syncs, CallSiteGroups& launches) {
  if (options.syncs) {
    for (const HostWait& wait : FindHostWaits(model, std::nullopt)) {
      AddBlockedTime(model, wait, &syncs);
    }
  }
  if (options.launch_sites) {
    for (const KernelEvent& k : model.kernels) {
      launches.Add(model, k.correlation_id, KernelDisplayName(k), k.duration_ns);
    }
  }
}

TraceSummary Summarize(const TraceModel& model, std::string label, const SummaryOptions& options,
                       TraceFold& fold, NvtxProjection projection) {
  TraceSummary summary;
  summary.label = std::move(label);
  std::set<uint32_t> ids;
  for (uint32_t id : model.DeviceIds()) ids.insert(id);
  for (const auto& [id, d] : fold.devices) ids.insert(id);
  for (uint32_t id : ids) {
    DeviceSummary& dev = summary.devices.emplace_back();
    dev.device_id = id;
    if (const DeviceInfo* info = model.FindDevice(id)) dev.device_name = info->name;
    auto folded = fold.devices.find(id);
    if (folded == fold.devices.end()) continue;
    dev.kernels = ToRows(folded->second.kernels);
    SortNamed(dev.kernels, options);
    dev.memory = ToMemoryRows(folded->second.memory);
    SortMemory(dev.memory, options);
    const UnionTotals busy = folded->second.busy.Finish();
    if (busy.intervals > 0) {
      dev.has_busy = true;
      dev.busy = BusyOf(busy);
    }
  }
  summary.api_calls = ToRows(fold.api);
  SortNamed(summary.api_calls, options);
  summary.nvtx_ranges = ToNvtxRows(projection.groups, options);
  CallSiteGroups syncs, launches;
  CollectCallSites(model, options, syncs, launches);
  summary.syncs = ToSiteRows(syncs, options);
  summary.launch_sites = ToSiteRows(launches, options);
  summary.api_stacks = model.EventCount(EventKind::kApiStack);
  summary.api_call_records = projection.api_calls;
  summary.gpu_records = projection.gpu_records;
  summary.gpu_records_without_api_call = projection.gpu_records_without_api_call;
  if (options.memory) summary.device_memory = DigestMemory(model);
  return summary;
}

// The combined view of several traces: every device's work, the API calls and the NVTX
// ranges by (domain, path) over all threads.
TraceSummary Combine(const std::vector<const TraceModel*>& models,
                     const std::vector<std::unique_ptr<TraceFold>>& folds,
                     std::map<std::pair<std::string, std::string>, NvtxRangeGroup>& nvtx,
                     const SummaryOptions& options) {
  TraceSummary all;
  // Built, not assigned from a literal: GCC 12 warns falsely (-Wrestrict) on `= "*"`.
  all.label = std::string(1, '*');
  DeviceSummary& dev = all.devices.emplace_back();
  dev.all_devices = true;
  DurationGroups kernels, api;
  MemoryGroups memory;
  CallSiteGroups syncs, launches;
  for (size_t i = 0; i < models.size(); ++i) {
    for (const auto& [id, d] : folds[i]->devices) {
      MergeGroups(d.kernels, kernels);
      MergeGroups(d.memory, memory);
    }
    MergeGroups(folds[i]->api, api);
    CollectCallSites(*models[i], options, syncs, launches);
    all.api_stacks += models[i]->EventCount(EventKind::kApiStack);
  }
  all.syncs = ToSiteRows(syncs, options);
  all.launch_sites = ToSiteRows(launches, options);
  dev.kernels = ToRows(kernels);
  SortNamed(dev.kernels, options);
  dev.memory = ToMemoryRows(memory);
  SortMemory(dev.memory, options);
  all.api_calls = ToRows(api);
  SortNamed(all.api_calls, options);
  std::vector<NvtxRangeGroup> groups;
  groups.reserve(nvtx.size());
  for (auto& [key, g] : nvtx) groups.push_back(std::move(g));
  all.nvtx_ranges = ToNvtxRows(groups, options);
  return all;
}

absl::StatusOr<std::vector<TraceSummary>> SummarizeAll(
    const std::vector<const TraceModel*>& models, const std::vector<std::string>& labels,
    const SummaryOptions& options, bool tables) {
  std::vector<TraceSummary> out;
  std::vector<std::unique_ptr<TraceFold>> folds;
  // Ranges of every trace by (domain, path), over all threads: the combined NVTX view.
  std::map<std::pair<std::string, std::string>, NvtxRangeGroup> combined_nvtx;
  for (size_t i = 0; i < models.size(); ++i) {
    absl::StatusOr<std::unique_ptr<TraceFold>> fold = FoldTrace(*models[i], options, tables);
    if (!fold.ok()) return fold.status();
    NvtxProjection projection;
    if ((*fold)->projector) projection = (*fold)->projector->Finish();
    if (models.size() > 1 || options.combined) {
      for (const NvtxRangeGroup& g : projection.groups) {
        auto [it, added] = combined_nvtx.try_emplace({g.domain, g.path});
        if (added) {
          it->second.domain = g.domain;
          it->second.name = g.name;
          it->second.path = g.path;
          it->second.all_threads = true;
        }
        it->second.Merge(g);
      }
    }
    out.push_back(Summarize(*models[i], i < labels.size() ? labels[i] : models[i]->source_name,
                            options, **fold, std::move(projection)));
    folds.push_back(*std::move(fold));
  }
  if (models.size() >= 2 || options.combined) {
    out.push_back(Combine(models, folds, combined_nvtx, options));
  }
  return out;
}

}  // namespace

TraceSummary SummarizeTrace(const TraceModel& model, std::string label,
                            const SummaryOptions& options) {
  std::vector<TraceSummary> one = SummarizeTraces({&model}, {std::move(label)}, options);
  return std::move(one.front());
}

std::vector<TraceSummary> SummarizeTraces(const std::vector<const TraceModel*>& models,
                                          const std::vector<std::string>& labels,
                                          const SummaryOptions& options) {
  // From the tables nothing is read: it cannot fail.
  return *SummarizeAll(models, labels, options, /*tables=*/true);
}

absl::StatusOr<std::vector<TraceSummary>> SummarizeTraceFiles(
    const std::vector<const TraceModel*>& models, const std::vector<std::string>& labels,
    const SummaryOptions& options) {
  return SummarizeAll(models, labels, options, /*tables=*/false);
}

TraceModelOptions SummaryLoadOptions(const SummaryOptions& options, bool short_names) {
  TraceModelOptions load;
  load.keep_pc_sample_records = false;
  if (!options.syncs && !options.launch_sites && !short_names) {
    load.keep_events = EventKindBit(EventKind::kNvtxRange);
  }
  return load;
}

DurationStats DurationStats::Of(const DurationSketch& sketch) {
  DurationStats s;
  s.count = sketch.count();
  if (s.count == 0) return s;
  s.total_ns = sketch.total_ns();
  s.min_ns = sketch.min_ns();
  s.max_ns = sketch.max_ns();
  s.avg_ns = static_cast<double>(s.total_ns) / s.count;
  s.median_ns = sketch.Median();
  s.stddev_ns = sketch.SampleStddev();
  return s;
}

}  // namespace warpscope
