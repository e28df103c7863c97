// Kernel / API / memory / NVTX statistics and GPU busy time (see summary.h).
#include "analyzers/analyses/summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "proto/common/setting_error.h"

namespace warpscope {
namespace {

using DurationGroups = std::map<std::string, std::vector<uint64_t>>;

std::vector<NamedDurations> ToRows(DurationGroups& groups) {
  std::vector<NamedDurations> rows;
  uint64_t grand_total = 0;
  for (auto& [name, durations] : groups) {
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
  std::vector<uint64_t> durations;
  std::vector<uint64_t> bytes;
};

std::vector<MemoryOperationSummary> ToMemoryRows(std::map<std::string, MemoryGroup>& groups) {
  std::vector<MemoryOperationSummary> rows;
  uint64_t grand_total = 0;
  for (auto& [operation, group] : groups) {
    MemoryOperationSummary& row = rows.emplace_back();
    row.operation = operation;
    row.time = DurationStats::Of(group.durations);
    for (uint64_t b : group.bytes) row.total_bytes += b;
    row.min_bytes = *std::min_element(group.bytes.begin(), group.bytes.end());
    row.max_bytes = *std::max_element(group.bytes.begin(), group.bytes.end());
    row.avg_bytes = static_cast<double>(row.total_bytes) / group.bytes.size();
    grand_total += row.time.total_ns;
  }
  for (MemoryOperationSummary& row : rows) {
    row.time_percent = grand_total == 0 ? 0 : 100.0 * row.time.total_ns / grand_total;
  }
  return rows;
}

// Union of [start, end) intervals and the gaps between them.
GpuBusy Busy(std::vector<std::pair<uint64_t, uint64_t>>& intervals) {
  GpuBusy busy;
  std::sort(intervals.begin(), intervals.end());
  busy.begin_ns = intervals.front().first;
  uint64_t cur_begin = intervals.front().first;
  uint64_t cur_end = intervals.front().second;
  for (size_t i = 1; i < intervals.size(); ++i) {
    const auto [b, e] = intervals[i];
    if (b > cur_end) {
      busy.busy_ns += cur_end - cur_begin;
      ++busy.gaps;
      busy.longest_gap_ns = std::max(busy.longest_gap_ns, b - cur_end);
      cur_begin = b;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  busy.busy_ns += cur_end - cur_begin;
  busy.end_ns = cur_end;
  busy.idle_ns = busy.span_ns() - busy.busy_ns;
  return busy;
}

// Adds a model's GPU events on `device` (all devices when null) to the groups.
void CollectDevice(const TraceModel& m, const uint32_t* device, DurationGroups& kernels,
                   std::map<std::string, MemoryGroup>& memory,
                   std::vector<std::pair<uint64_t, uint64_t>>& intervals) {
  for (const KernelEvent& k : m.kernels) {
    if (device != nullptr && k.device_id != *device) continue;
    kernels[KernelDisplayName(k)].push_back(k.duration_ns);
    intervals.emplace_back(k.start_ns, std::max(k.start_ns, k.end_ns()));
  }
  for (const MemcpyEvent& c : m.memcpys) {
    if (device != nullptr && c.device_id != *device) continue;
    MemoryGroup& g = memory[MemcpyOperationName(c.copy_kind)];
    g.durations.push_back(c.duration_ns);
    g.bytes.push_back(c.bytes);
    intervals.emplace_back(c.start_ns, std::max(c.start_ns, c.end_ns()));
  }
  for (const MemsetEvent& s : m.memsets) {
    if (device != nullptr && s.device_id != *device) continue;
    MemoryGroup& g = memory[std::string(kMemsetOperationName)];
    g.durations.push_back(s.duration_ns);
    g.bytes.push_back(s.bytes);
    intervals.emplace_back(s.start_ns, std::max(s.start_ns, s.end_ns()));
  }
}

void CollectApi(const TraceModel& m, DurationGroups& api) {
  for (const ApiCallEvent& a : m.api_calls) api[std::string(a.name)].push_back(a.duration_ns);
}

NvtxProjection Project(const TraceModel& m, const SummaryOptions& options) {
  if (!options.nvtx && !options.nvtx_kernels) return {};  // only the NVTX reports use it
  NvtxProjectionOptions projection;
  projection.work_by_name = options.nvtx_kernels;
  return ProjectNvtxRanges(m, projection);
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
  options->nvtx_kernels = false;
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
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown report ",
                                                     QuoteValue(std::string(item)),
                                                     ": use kernels, api, memory, nvtx, "
                                                     "nvtx-kernels or idle"));
    }
  }
  if (!options->kernels && !options->api && !options->memory && !options->nvtx &&
      !options->nvtx_kernels && !options->idle) {
    return absl::InvalidArgumentError(
        "--report names no report: use kernels,api,memory,nvtx,nvtx-kernels,idle");
  }
  return absl::OkStatus();
}

namespace {

TraceSummary Summarize(const TraceModel& model, std::string label, const SummaryOptions& options,
                       NvtxProjection projection) {
  TraceSummary summary;
  summary.label = std::move(label);
  for (uint32_t id : model.DeviceIds()) {
    DeviceSummary& dev = summary.devices.emplace_back();
    dev.device_id = id;
    if (const DeviceInfo* info = model.FindDevice(id)) dev.device_name = info->name;
    DurationGroups kernels;
    std::map<std::string, MemoryGroup> memory;
    std::vector<std::pair<uint64_t, uint64_t>> intervals;
    CollectDevice(model, &id, kernels, memory, intervals);
    dev.kernels = ToRows(kernels);
    SortNamed(dev.kernels, options);
    dev.memory = ToMemoryRows(memory);
    SortMemory(dev.memory, options);
    if (!intervals.empty()) {
      dev.has_busy = true;
      dev.busy = Busy(intervals);
    }
  }
  DurationGroups api;
  CollectApi(model, api);
  summary.api_calls = ToRows(api);
  SortNamed(summary.api_calls, options);
  summary.nvtx_ranges = ToNvtxRows(projection.groups, options);
  summary.api_call_records = projection.api_calls;
  summary.gpu_records = projection.gpu_records;
  summary.gpu_records_without_api_call = projection.gpu_records_without_api_call;
  return summary;
}

}  // namespace

TraceSummary SummarizeTrace(const TraceModel& model, std::string label,
                            const SummaryOptions& options) {
  return Summarize(model, std::move(label), options, Project(model, options));
}

std::vector<TraceSummary> SummarizeTraces(const std::vector<const TraceModel*>& models,
                                          const std::vector<std::string>& labels,
                                          const SummaryOptions& options) {
  std::vector<TraceSummary> out;
  // Ranges of every trace by (domain, path), over all threads: the combined NVTX view.
  std::map<std::pair<std::string, std::string>, NvtxRangeGroup> combined_nvtx;
  for (size_t i = 0; i < models.size(); ++i) {
    NvtxProjection projection = Project(*models[i], options);
    if (models.size() > 1) {
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
    out.push_back(Summarize(*models[i],
                            i < labels.size() ? labels[i] : models[i]->source_name, options,
                            std::move(projection)));
  }
  if (models.size() < 2) return out;
  TraceSummary& all = out.emplace_back();
  // Built, not assigned from a literal: GCC 12 warns falsely (-Wrestrict) on `= "*"`.
  all.label = std::string(1, '*');
  DeviceSummary& dev = all.devices.emplace_back();
  dev.all_devices = true;
  DurationGroups kernels, api;
  std::map<std::string, MemoryGroup> memory;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;  // unused: ranks' clocks differ
  for (const TraceModel* m : models) {
    CollectDevice(*m, nullptr, kernels, memory, intervals);
    CollectApi(*m, api);
  }
  dev.kernels = ToRows(kernels);
  SortNamed(dev.kernels, options);
  dev.memory = ToMemoryRows(memory);
  SortMemory(dev.memory, options);
  all.api_calls = ToRows(api);
  SortNamed(all.api_calls, options);
  std::vector<NvtxRangeGroup> groups;
  groups.reserve(combined_nvtx.size());
  for (auto& [key, g] : combined_nvtx) groups.push_back(std::move(g));
  all.nvtx_ranges = ToNvtxRows(groups, options);
  return out;
}

// ---------------------------------------------------------------------------------------
// Rendering

namespace {

// Human text (durations as "3.41 us") for tables; raw ns for CSV and JSON.
struct Style {
  bool human;
  bool located;  // leading file/device columns (CSV, JSON)
};

Cell Ns(const Style& s, uint64_t ns) { return s.human ? Cell(FormatDuration(ns)) : Cell(ns); }
Cell NsReal(const Style& s, double ns) { return s.human ? Cell(FormatDuration(ns)) : Cell(ns, 1); }
Cell Bytes(const Style& s, uint64_t b) { return s.human ? Cell(FormatBytes(b)) : Cell(b); }
Cell BytesReal(const Style& s, double b) { return s.human ? Cell(FormatBytes(b)) : Cell(b, 1); }
Cell Percent(double p) { return Cell(p, 1); }

std::vector<Table::Column> Columns(const Style& s, bool with_device,
                                   std::vector<std::pair<std::string, std::string>> names,
                                   size_t numeric_columns) {  // the first ones, right-aligned
  std::vector<Table::Column> cols;
  if (s.located) {
    cols.push_back({"file", false});
    if (with_device) cols.push_back({"device", true});
  }
  for (size_t i = 0; i < names.size(); ++i) {
    cols.push_back({s.human ? names[i].first : names[i].second, i < numeric_columns});
  }
  return cols;
}

std::vector<Cell> Location(const Style& s, const TraceSummary& t, const DeviceSummary* d) {
  std::vector<Cell> cells;
  if (!s.located) return cells;
  cells.emplace_back(t.label);
  if (d != nullptr) cells.push_back(d->all_devices ? Cell() : Cell(d->device_id));
  return cells;
}

Table NamedTable(const Style& s, bool with_device) {
  return Table(Columns(s, with_device,
                       {{"Time %", "time_percent"},
                        {"Total Time", "total_time_ns"},
                        {"Instances", "instances"},
                        {"Avg", "avg_ns"},
                        {"Med", "med_ns"},
                        {"Min", "min_ns"},
                        {"Max", "max_ns"},
                        {"StdDev", "stddev_ns"},
                        {"Name", "name"}},
                       8));
}

void AddNamedRows(Table& table, const Style& s, const TraceSummary& t, const DeviceSummary* d,
                  const std::vector<NamedDurations>& rows) {
  for (const NamedDurations& r : rows) {
    std::vector<Cell> cells = Location(s, t, d);
    cells.push_back(Percent(r.time_percent));
    cells.push_back(Ns(s, r.time.total_ns));
    cells.push_back(Cell(r.time.count));
    cells.push_back(NsReal(s, r.time.avg_ns));
    cells.push_back(NsReal(s, r.time.median_ns));
    cells.push_back(Ns(s, r.time.min_ns));
    cells.push_back(Ns(s, r.time.max_ns));
    cells.push_back(NsReal(s, r.time.stddev_ns));
    cells.emplace_back(r.name);
    table.AddRow(std::move(cells));
  }
}

// The range columns every NVTX table ends with: domain, thread, path (and name).
void AppendRangeColumns(const Style& s, std::vector<Table::Column>& cols) {
  cols.push_back({s.human ? "Domain" : "domain", false});
  cols.push_back({s.human ? "Thread" : "thread_os_tid", true});
  if (!s.human) cols.push_back({"thread_name", false});
  cols.push_back({s.human ? "Range" : "path", false});
}

void AppendRangeCells(const Style& s, const NvtxRangeSummary& r, std::vector<Cell>& cells) {
  cells.emplace_back(s.human && r.domain.empty() ? "(default)" : r.domain);
  if (r.all_threads) {
    cells.push_back(s.human ? Cell("all") : Cell());
  } else {
    cells.push_back(r.os_tid == 0 ? Cell() : Cell(r.os_tid));
  }
  if (!s.human) cells.emplace_back(r.thread_name);
  cells.emplace_back(r.path);
}

// No Time % column: nested ranges would count twice. Host figures keep the names they had
// before GPU columns came (total_time_ns, avg_ns, ...).
Table NvtxTable(const Style& s) {
  std::vector<Table::Column> cols = Columns(s, false,
                                            {{"GPU Time", "gpu_time_ns"},
                                             {"GPU Span", "gpu_span_ns"},
                                             {"GPU/CPU", "gpu_cpu_ratio"},
                                             {"Kernels", "kernels"},
                                             {"Copies", "copies"},
                                             {"Graphs", "graph_launches"},
                                             {"CPU Time", "total_time_ns"},
                                             {"Instances", "instances"},
                                             {"Avg", "avg_ns"},
                                             {"Med", "med_ns"},
                                             {"Min", "min_ns"},
                                             {"Max", "max_ns"},
                                             {"StdDev", "stddev_ns"}},
                                            13);
  // Tables mark cut rows with '*' on the GPU time instead.
  if (!s.human) cols.push_back({"cut_instances", true});
  AppendRangeColumns(s, cols);
  if (!s.human) cols.push_back({"name", false});
  return Table(std::move(cols));
}

void AddNvtxRows(Table& table, const Style& s, const TraceSummary& t) {
  for (const NvtxRangeSummary& r : t.nvtx_ranges) {
    std::vector<Cell> cells = Location(s, t, nullptr);
    if (s.human) {
      cells.emplace_back(FormatDuration(r.gpu_time_ns) + (r.cut_instances > 0 ? " *" : ""));
    } else {
      cells.emplace_back(r.gpu_time_ns);
    }
    cells.push_back(Ns(s, r.gpu_span_ns));
    cells.emplace_back(r.gpu_cpu_ratio(), 2);
    cells.emplace_back(r.kernels);
    cells.emplace_back(r.copies);
    cells.emplace_back(r.graph_launches);
    cells.push_back(Ns(s, r.cpu.total_ns));
    cells.emplace_back(r.cpu.count);
    cells.push_back(NsReal(s, r.cpu.avg_ns));
    cells.push_back(NsReal(s, r.cpu.median_ns));
    cells.push_back(Ns(s, r.cpu.min_ns));
    cells.push_back(Ns(s, r.cpu.max_ns));
    cells.push_back(NsReal(s, r.cpu.stddev_ns));
    if (!s.human) cells.emplace_back(r.cut_instances);
    AppendRangeCells(s, r, cells);
    if (!s.human) cells.emplace_back(r.name);
    table.AddRow(std::move(cells));
  }
}

// nvtx-kernels: per range group, the kernels and memory operations launched inside it.
Table NvtxWorkTable(const Style& s) {
  std::vector<Table::Column> cols = Columns(s, false,
                                            {{"GPU Time", "gpu_time_ns"},
                                             {"Range %", "range_percent"},
                                             {"Instances", "instances"},
                                             {"Avg", "avg_ns"},
                                             {"Min", "min_ns"},
                                             {"Max", "max_ns"}},
                                            6);
  AppendRangeColumns(s, cols);
  cols.push_back({s.human ? "Kernel / Operation" : "name", false});
  return Table(std::move(cols));
}

void AddNvtxWorkRows(Table& table, const Style& s, const TraceSummary& t) {
  for (const NvtxRangeSummary& r : t.nvtx_ranges) {
    for (const NvtxWorkSummary& w : r.work) {
      std::vector<Cell> cells = Location(s, t, nullptr);
      cells.push_back(Ns(s, w.time.total_ns));
      cells.push_back(Percent(w.range_percent));
      cells.emplace_back(w.time.count);
      cells.push_back(NsReal(s, w.time.count == 0 ? 0.0
                                                  : static_cast<double>(w.time.total_ns) /
                                                        static_cast<double>(w.time.count)));
      cells.push_back(Ns(s, w.time.min_ns));
      cells.push_back(Ns(s, w.time.max_ns));
      AppendRangeCells(s, r, cells);
      cells.emplace_back(w.name);
      table.AddRow(std::move(cells));
    }
  }
}

Table MemoryTable(const Style& s) {
  return Table(Columns(s, true,
                       {{"Time %", "time_percent"},
                        {"Total Time", "total_time_ns"},
                        {"Count", "count"},
                        {"Avg", "avg_ns"},
                        {"Min", "min_ns"},
                        {"Max", "max_ns"},
                        {"Total Bytes", "total_bytes"},
                        {"Avg Bytes", "avg_bytes"},
                        {"Min Bytes", "min_bytes"},
                        {"Max Bytes", "max_bytes"},
                        {"Operation", "operation"}},
                       10));
}

void AddMemoryRows(Table& table, const Style& s, const TraceSummary& t, const DeviceSummary& d) {
  for (const MemoryOperationSummary& r : d.memory) {
    std::vector<Cell> cells = Location(s, t, &d);
    cells.push_back(Percent(r.time_percent));
    cells.push_back(Ns(s, r.time.total_ns));
    cells.push_back(Cell(r.time.count));
    cells.push_back(NsReal(s, r.time.avg_ns));
    cells.push_back(Ns(s, r.time.min_ns));
    cells.push_back(Ns(s, r.time.max_ns));
    cells.push_back(Bytes(s, r.total_bytes));
    cells.push_back(BytesReal(s, r.avg_bytes));
    cells.push_back(Bytes(s, r.min_bytes));
    cells.push_back(Bytes(s, r.max_bytes));
    cells.emplace_back(r.operation);
    table.AddRow(std::move(cells));
  }
}

Table IdleTable(const Style& s) {
  return Table(Columns(s, true,
                       {{"Span", "span_ns"},
                        {"Busy", "busy_ns"},
                        {"Busy %", "busy_percent"},
                        {"Idle", "idle_ns"},
                        {"Gaps", "gaps"},
                        {"Longest Gap", "longest_gap_ns"},
                        {"Begin", "begin_ns"},
                        {"End", "end_ns"}},
                       8));
}

double BusyPercent(const GpuBusy& b) {
  return b.span_ns() == 0 ? 100.0 : 100.0 * b.busy_ns / b.span_ns();
}

void AddIdleRow(Table& table, const Style& s, const TraceSummary& t, const DeviceSummary& d) {
  std::vector<Cell> cells = Location(s, t, &d);
  const GpuBusy& b = d.busy;
  cells.push_back(Ns(s, b.span_ns()));
  cells.push_back(Ns(s, b.busy_ns));
  cells.push_back(Percent(BusyPercent(b)));
  cells.push_back(Ns(s, b.idle_ns));
  cells.push_back(Cell(b.gaps));
  cells.push_back(Ns(s, b.longest_gap_ns));
  cells.push_back(Cell(b.begin_ns));
  cells.push_back(Cell(b.end_ns));
  table.AddRow(std::move(cells));
}

std::string DeviceTitle(const DeviceSummary& d) {
  if (d.all_devices) return "all GPUs";
  if (d.device_name.empty()) return absl::StrCat("GPU ", d.device_id);
  return absl::StrCat("GPU ", d.device_id, " (", d.device_name, ")");
}

std::string TableOrNone(const Table& table, const char* none) {
  if (table.num_rows() == 0) return absl::StrCat("  (", none, ")\n");
  return table.RenderText();
}

// What limits a trace's NVTX GPU figures, in sentences (SummaryNotes adds where they are from).
std::vector<std::string> TraceNotes(const TraceSummary& t) {
  std::vector<std::string> notes;
  if (t.nvtx_ranges.empty()) return notes;
  if (t.gpu_records > 0 && t.api_call_records == 0) {
    notes.push_back(absl::StrCat(
        "GPU time of NVTX ranges needs runtime or driver API records and this trace has "
        "none, so its ",
        t.gpu_records, t.gpu_records == 1 ? " kernel or copy counts" : " kernels and copies count",
        " for no range: record with -t cuda,nvtx (the default) or add runtime or driver to -t"));
  } else if (t.gpu_records_without_api_call > 0) {
    notes.push_back(absl::StrCat(
        t.gpu_records_without_api_call, " of ", t.gpu_records,
        " kernels and copies ", t.gpu_records_without_api_call == 1 ? "has" : "have",
        " no API record with their correlation id (dropped, or its API domain was not "
        "recorded): no NVTX range counts ",
        t.gpu_records_without_api_call == 1 ? "it" : "them"));
  }
  uint64_t cut = 0;
  for (const NvtxRangeSummary& r : t.nvtx_ranges) cut += r.cut_instances;
  if (cut > 0) {
    notes.push_back(absl::StrCat(
        "* ", cut, cut == 1 ? " range instance reaches" : " range instances reach",
        " outside the capture windows: work launched outside a window was not recorded, so "
        "the GPU figures of its row are lower bounds"));
  }
  return notes;
}

std::string RenderText(const std::vector<TraceSummary>& summaries, const SummaryOptions& options) {
  const Style s{true, false};
  std::string out;
  const size_t traces = summaries.size() > 1 ? summaries.size() - 1 : summaries.size();
  for (const TraceSummary& t : summaries) {
    if (!out.empty()) out += "\n";
    absl::StrAppend(&out, "== ",
                    t.label == "*" ? absl::StrCat("all ", traces, " traces combined")
                                   : absl::StrCat("trace ", t.label),
                    " ==\n");
    for (const DeviceSummary& d : t.devices) {
      const std::string title = DeviceTitle(d);
      if (options.kernels) {
        Table table = NamedTable(s, true);
        AddNamedRows(table, s, t, &d, d.kernels);
        absl::StrAppend(&out, "\n-- ", title, ": kernels --\n", TableOrNone(table, "no kernels"));
      }
      if (options.memory) {
        Table table = MemoryTable(s);
        AddMemoryRows(table, s, t, d);
        absl::StrAppend(&out, "\n-- ", title, ": memory operations --\n",
                        TableOrNone(table, "no memory operations"));
      }
      if (options.idle && d.has_busy) {
        const GpuBusy& b = d.busy;
        absl::StrAppend(&out, "\n", title, ": busy ", FormatDuration(b.busy_ns), " of ",
                        FormatDuration(b.span_ns()), " (", absl::StrFormat("%.1f", BusyPercent(b)),
                        "%); idle ", FormatDuration(b.idle_ns), " in ", b.gaps,
                        b.gaps == 1 ? " gap" : " gaps");
        if (b.gaps > 0) absl::StrAppend(&out, ", longest ", FormatDuration(b.longest_gap_ns));
        out += "\n";
      }
    }
    if (options.api) {
      Table table = NamedTable(s, false);
      AddNamedRows(table, s, t, nullptr, t.api_calls);
      absl::StrAppend(&out, "\n-- CUDA API calls --\n", TableOrNone(table, "no API calls"));
    }
    if (options.nvtx) {
      Table table = NvtxTable(s);
      AddNvtxRows(table, s, t);
      absl::StrAppend(&out, "\n-- NVTX ranges: host time and the GPU work launched inside --\n",
                      TableOrNone(table, "no NVTX ranges"));
    }
    if (options.nvtx_kernels) {
      Table table = NvtxWorkTable(s);
      AddNvtxWorkRows(table, s, t);
      absl::StrAppend(&out, "\n-- NVTX ranges: kernels and copies launched inside --\n",
                      TableOrNone(table, "no GPU work launched inside NVTX ranges"));
    }
    if (options.nvtx || options.nvtx_kernels) {
      for (const std::string& note : TraceNotes(t)) absl::StrAppend(&out, "\nnote: ", note, "\n");
    }
  }
  return out;
}

struct MachineTables {
  std::vector<std::pair<std::string, Table>> tables;
};

MachineTables BuildMachineTables(const std::vector<TraceSummary>& summaries,
                                 const SummaryOptions& options) {
  const Style s{false, true};
  MachineTables out;
  if (options.kernels) {
    Table table = NamedTable(s, true);
    for (const TraceSummary& t : summaries) {
      for (const DeviceSummary& d : t.devices) AddNamedRows(table, s, t, &d, d.kernels);
    }
    out.tables.emplace_back("kernels", std::move(table));
  }
  if (options.api) {
    Table table = NamedTable(s, false);
    for (const TraceSummary& t : summaries) AddNamedRows(table, s, t, nullptr, t.api_calls);
    out.tables.emplace_back("api", std::move(table));
  }
  if (options.memory) {
    Table table = MemoryTable(s);
    for (const TraceSummary& t : summaries) {
      for (const DeviceSummary& d : t.devices) AddMemoryRows(table, s, t, d);
    }
    out.tables.emplace_back("memory", std::move(table));
  }
  if (options.nvtx) {
    Table table = NvtxTable(s);
    for (const TraceSummary& t : summaries) AddNvtxRows(table, s, t);
    out.tables.emplace_back("nvtx", std::move(table));
  }
  if (options.nvtx_kernels) {
    Table table = NvtxWorkTable(s);
    for (const TraceSummary& t : summaries) AddNvtxWorkRows(table, s, t);
    out.tables.emplace_back("nvtx_kernels", std::move(table));
  }
  if (options.idle) {
    Table table = IdleTable(s);
    for (const TraceSummary& t : summaries) {
      for (const DeviceSummary& d : t.devices) {
        if (d.has_busy) AddIdleRow(table, s, t, d);
      }
    }
    out.tables.emplace_back("idle", std::move(table));
  }
  return out;
}

}  // namespace

std::string RenderSummary(const std::vector<TraceSummary>& summaries, OutputFormat format,
                          const SummaryOptions& options) {
  if (format == OutputFormat::kTable) return RenderText(summaries, options);
  MachineTables machine = BuildMachineTables(summaries, options);
  if (format == OutputFormat::kCsv) {
    std::string out;
    for (const auto& [name, table] : machine.tables) {
      if (!out.empty()) out += "\n";
      // A single report stays plain CSV; several are marked so that they can be split.
      if (machine.tables.size() > 1) absl::StrAppend(&out, "# report: ", name, "\n");
      out += table.RenderCsv();
    }
    return out;
  }
  JsonWriter json;
  json.BeginObject();
  json.Key("traces").BeginArray();
  for (const TraceSummary& t : summaries) {
    if (t.label != "*") json.String(t.label);
  }
  json.EndArray();
  for (const auto& [name, table] : machine.tables) {
    std::string rows = table.RenderJson();
    while (!rows.empty() && rows.back() == '\n') rows.pop_back();
    json.Key(name).Raw(rows);
  }
  json.EndObject();
  return json.str() + "\n";
}

std::vector<std::string> SummaryNotes(const std::vector<TraceSummary>& summaries,
                                      const SummaryOptions& options) {
  std::vector<std::string> lines;
  if (!options.nvtx && !options.nvtx_kernels) return lines;
  for (const TraceSummary& t : summaries) {
    if (t.label == "*") continue;  // each trace speaks for itself
    for (const std::string& note : TraceNotes(t)) {
      lines.push_back(absl::StrCat("warpscope: ", t.label, ": ", note));
    }
  }
  return lines;
}

}  // namespace warpscope
