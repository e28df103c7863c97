// Kernel / API / memory / NVTX statistics and GPU busy time (see summary.h).
#include "analyzers/lib/summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "libinject/setting_error.h"

namespace warpscope {
namespace {

using DurationGroups = std::map<std::pair<std::string, std::string>, std::vector<uint64_t>>;

std::string KernelName(const KernelEvent& k) {
  if (!k.name.empty()) return std::string(k.name);
  if (!k.mangled_name.empty()) return std::string(k.mangled_name);
  return "<unnamed kernel>";
}

std::string MemcpyOperation(v1::CopyKind kind) {
  return absl::StrCat("[CUDA memcpy ", std::string(CopyKindName(kind)), "]");
}
constexpr const char* kMemsetOperation = "[CUDA memset]";

std::vector<NamedDurations> ToRows(DurationGroups& groups) {
  std::vector<NamedDurations> rows;
  uint64_t grand_total = 0;
  for (auto& [key, durations] : groups) {
    NamedDurations& row = rows.emplace_back();
    row.name = key.first;
    row.domain = key.second;
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
  SortAndCut(rows, options, [](const NamedDurations& r) { return std::tie(r.name, r.domain); });
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
    kernels[{KernelName(k), ""}].push_back(k.duration_ns);
    intervals.emplace_back(k.start_ns, std::max(k.start_ns, k.end_ns()));
  }
  for (const MemcpyEvent& c : m.memcpys) {
    if (device != nullptr && c.device_id != *device) continue;
    MemoryGroup& g = memory[MemcpyOperation(c.copy_kind)];
    g.durations.push_back(c.duration_ns);
    g.bytes.push_back(c.bytes);
    intervals.emplace_back(c.start_ns, std::max(c.start_ns, c.end_ns()));
  }
  for (const MemsetEvent& s : m.memsets) {
    if (device != nullptr && s.device_id != *device) continue;
    MemoryGroup& g = memory[kMemsetOperation];
    g.durations.push_back(s.duration_ns);
    g.bytes.push_back(s.bytes);
    intervals.emplace_back(s.start_ns, std::max(s.start_ns, s.end_ns()));
  }
}

void CollectHost(const TraceModel& m, DurationGroups& api, DurationGroups& nvtx) {
  for (const ApiCallEvent& a : m.api_calls) api[{std::string(a.name), ""}].push_back(a.duration_ns);
  for (const NvtxRange& r : m.nvtx_ranges) {
    nvtx[{std::string(r.name), std::string(r.domain)}].push_back(r.duration_ns);
  }
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
    } else if (item == "idle") {
      options->idle = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown report ",
                                                     QuoteValue(std::string(item)),
                                                     ": use kernels, api, memory, nvtx or idle"));
    }
  }
  if (!options->kernels && !options->api && !options->memory && !options->nvtx && !options->idle) {
    return absl::InvalidArgumentError("--report names no report: use kernels,api,memory,nvtx,idle");
  }
  return absl::OkStatus();
}

TraceSummary SummarizeTrace(const TraceModel& model, std::string label,
                            const SummaryOptions& options) {
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
  DurationGroups api, nvtx;
  CollectHost(model, api, nvtx);
  summary.api_calls = ToRows(api);
  SortNamed(summary.api_calls, options);
  summary.nvtx_ranges = ToRows(nvtx);
  SortNamed(summary.nvtx_ranges, options);
  return summary;
}

std::vector<TraceSummary> SummarizeTraces(const std::vector<const TraceModel*>& models,
                                          const std::vector<std::string>& labels,
                                          const SummaryOptions& options) {
  std::vector<TraceSummary> out;
  for (size_t i = 0; i < models.size(); ++i) {
    out.push_back(SummarizeTrace(*models[i], i < labels.size() ? labels[i] : models[i]->source_name,
                                 options));
  }
  if (models.size() < 2) return out;
  TraceSummary& all = out.emplace_back();
  // Built, not assigned from a literal: GCC 12 warns falsely (-Wrestrict) on `= "*"`.
  all.label = std::string(1, '*');
  DeviceSummary& dev = all.devices.emplace_back();
  dev.all_devices = true;
  DurationGroups kernels, api, nvtx;
  std::map<std::string, MemoryGroup> memory;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;  // unused: ranks' clocks differ
  for (const TraceModel* m : models) {
    CollectDevice(*m, nullptr, kernels, memory, intervals);
    CollectHost(*m, api, nvtx);
  }
  dev.kernels = ToRows(kernels);
  SortNamed(dev.kernels, options);
  dev.memory = ToMemoryRows(memory);
  SortMemory(dev.memory, options);
  all.api_calls = ToRows(api);
  SortNamed(all.api_calls, options);
  all.nvtx_ranges = ToRows(nvtx);
  SortNamed(all.nvtx_ranges, options);
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

// NVTX tables (with_domain) have no Time % column: nested ranges would count twice.
Table NamedTable(const Style& s, bool with_device, bool with_domain) {
  std::vector<std::pair<std::string, std::string>> names;
  if (!with_domain) names.push_back({"Time %", "time_percent"});
  names.insert(names.end(), {{"Total Time", "total_time_ns"},
                             {"Instances", "instances"},
                             {"Avg", "avg_ns"},
                             {"Med", "med_ns"},
                             {"Min", "min_ns"},
                             {"Max", "max_ns"},
                             {"StdDev", "stddev_ns"}});
  const size_t numeric = names.size();
  if (with_domain) names.push_back({"Domain", "domain"});
  names.push_back({"Name", "name"});
  return Table(Columns(s, with_device, names, numeric));
}

void AddNamedRows(Table& table, const Style& s, const TraceSummary& t, const DeviceSummary* d,
                  const std::vector<NamedDurations>& rows, bool with_domain) {
  for (const NamedDurations& r : rows) {
    std::vector<Cell> cells = Location(s, t, d);
    if (!with_domain) cells.push_back(Percent(r.time_percent));
    cells.push_back(Ns(s, r.time.total_ns));
    cells.push_back(Cell(r.time.count));
    cells.push_back(NsReal(s, r.time.avg_ns));
    cells.push_back(NsReal(s, r.time.median_ns));
    cells.push_back(Ns(s, r.time.min_ns));
    cells.push_back(Ns(s, r.time.max_ns));
    cells.push_back(NsReal(s, r.time.stddev_ns));
    if (with_domain) cells.emplace_back(s.human && r.domain.empty() ? "(default)" : r.domain);
    cells.emplace_back(r.name);
    table.AddRow(std::move(cells));
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
        Table table = NamedTable(s, true, false);
        AddNamedRows(table, s, t, &d, d.kernels, false);
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
      Table table = NamedTable(s, false, false);
      AddNamedRows(table, s, t, nullptr, t.api_calls, false);
      absl::StrAppend(&out, "\n-- CUDA API calls --\n", TableOrNone(table, "no API calls"));
    }
    if (options.nvtx) {
      Table table = NamedTable(s, false, true);
      AddNamedRows(table, s, t, nullptr, t.nvtx_ranges, true);
      absl::StrAppend(&out, "\n-- NVTX ranges --\n", TableOrNone(table, "no NVTX ranges"));
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
    Table table = NamedTable(s, true, false);
    for (const TraceSummary& t : summaries) {
      for (const DeviceSummary& d : t.devices) AddNamedRows(table, s, t, &d, d.kernels, false);
    }
    out.tables.emplace_back("kernels", std::move(table));
  }
  if (options.api) {
    Table table = NamedTable(s, false, false);
    for (const TraceSummary& t : summaries) AddNamedRows(table, s, t, nullptr, t.api_calls, false);
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
    Table table = NamedTable(s, false, true);
    for (const TraceSummary& t : summaries) {
      AddNamedRows(table, s, t, nullptr, t.nvtx_ranges, true);
    }
    out.tables.emplace_back("nvtx", std::move(table));
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

}  // namespace warpscope
