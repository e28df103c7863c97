// Rendering of `warpscope summary` (see summary.h): the kernel, memory, API, NVTX, idle and
// call-site tables as text, CSV or JSON, and the notes that qualify NVTX GPU figures.
#include "analyzers/analyses/summary.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

// Human text (durations as "3.41 us") for tables; raw ns for CSV and JSON.
struct Style {
  bool human;
  bool located;  // leading file/device columns (CSV, JSON)
  const KernelNames* names;  // whole, or short (--short-names)
  size_t name_width = 0;     // cut names to this many columns in tables; 0 = whole
};

// A kernel or API name as the options show it.
std::string ShownName(const Style& s, std::string_view name) {
  std::string shown = s.names->Show(name, false);
  if (s.human && s.name_width > 0) shown = TruncateToWidth(shown, s.name_width);
  return shown;
}

// The calls or kernels of a call-site row, most time first, each shown on its own: a list is
// no name, and shortening it whole would show its last entry.
std::string ShownCalls(const Style& s, const std::vector<std::string>& calls) {
  std::string shown;
  for (const std::string& call : calls) {
    absl::StrAppend(&shown, shown.empty() ? "" : ", ", s.names->Show(call, false));
  }
  if (s.human && s.name_width > 0) shown = TruncateToWidth(shown, s.name_width);
  return shown;
}

Cell Ns(const Style& s, uint64_t ns) { return s.human ? Cell(FormatDuration(ns)) : Cell(ns); }
Cell NsReal(const Style& s, double ns) { return s.human ? Cell(FormatDuration(ns)) : Cell(ns, 1); }
Cell Bytes(const Style& s, uint64_t b) { return s.human ? Cell(FormatBytes(b)) : Cell(b); }
Cell BytesReal(const Style& s, double b) { return s.human ? Cell(FormatBytes(b)) : Cell(b, 1); }
Cell Percent(double p) { return Cell(p, 1); }

// A column of the summary's tables: its header for people and its name and kind for machines;
// `formatted`: people read it as a duration or size ("3.41 us", "4.00 MiB"), text.
struct SummaryColumn {
  std::string human, machine;
  CellKind kind;
  bool formatted = false;
};
SummaryColumn Duration(std::string human, std::string machine) {
  return {std::move(human), std::move(machine), CellKind::kInt, true};
}
SummaryColumn DurationReal(std::string human, std::string machine) {  // averages, medians
  return {std::move(human), std::move(machine), CellKind::kReal, true};
}
SummaryColumn Size(std::string human, std::string machine) {
  return {std::move(human), std::move(machine), CellKind::kInt, true};
}
SummaryColumn SizeReal(std::string human, std::string machine) {
  return {std::move(human), std::move(machine), CellKind::kReal, true};
}
SummaryColumn Count(std::string human, std::string machine) {
  return {std::move(human), std::move(machine), CellKind::kInt};
}
SummaryColumn Real(std::string human, std::string machine) {  // percents, ratios
  return {std::move(human), std::move(machine), CellKind::kReal};
}
SummaryColumn Text(std::string human, std::string machine) {
  return {std::move(human), std::move(machine), CellKind::kString};
}

std::vector<Table::Column> Columns(const Style& s, bool with_device,
                                   std::vector<SummaryColumn> columns,
                                   size_t numeric_columns) {  // the first ones, right-aligned
  std::vector<Table::Column> cols;
  if (s.located) {
    cols.push_back({"file", false, CellKind::kString});
    if (with_device) cols.push_back({"device", true, CellKind::kInt});
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    const SummaryColumn& c = columns[i];
    cols.push_back({s.human ? c.human : c.machine, i < numeric_columns,
                    s.human && c.formatted ? CellKind::kString : c.kind});
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
                       {Real("Time %", "time_percent"),
                        Duration("Total Time", "total_time_ns"),
                        Count("Instances", "instances"),
                        DurationReal("Avg", "avg_ns"),
                        DurationReal("Med", "med_ns"),
                        Duration("Min", "min_ns"),
                        Duration("Max", "max_ns"),
                        DurationReal("StdDev", "stddev_ns"),
                        Text("Name", "name")},
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
    cells.emplace_back(ShownName(s, r.name));
    table.AddRow(std::move(cells));
  }
}

// The range columns every NVTX table ends with: domain, thread, path (and name).
void AppendRangeColumns(const Style& s, std::vector<Table::Column>& cols) {
  cols.push_back({s.human ? "Domain" : "domain", false, CellKind::kString});
  // People read "all" for a row merged over threads; machines an empty cell.
  cols.push_back({s.human ? "Thread" : "thread_os_tid", true,
                  s.human ? CellKind::kString : CellKind::kInt});
  if (!s.human) cols.push_back({"thread_name", false, CellKind::kString});
  cols.push_back({s.human ? "Range" : "path", false, CellKind::kString});
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
                                            {Duration("GPU Time", "gpu_time_ns"),
                                             Duration("GPU Span", "gpu_span_ns"),
                                             Real("GPU/CPU", "gpu_cpu_ratio"),
                                             Count("Kernels", "kernels"),
                                             Count("Copies", "copies"),
                                             Count("Graphs", "graph_launches"),
                                             Duration("CPU Time", "total_time_ns"),
                                             Count("Instances", "instances"),
                                             DurationReal("Avg", "avg_ns"),
                                             DurationReal("Med", "med_ns"),
                                             Duration("Min", "min_ns"),
                                             Duration("Max", "max_ns"),
                                             DurationReal("StdDev", "stddev_ns")},
                                            13);
  // Tables mark cut rows with '*' on the GPU time instead.
  if (!s.human) cols.push_back({"cut_instances", true, CellKind::kInt});
  AppendRangeColumns(s, cols);
  if (!s.human) cols.push_back({"name", false, CellKind::kString});
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
                                            {Duration("GPU Time", "gpu_time_ns"),
                                             Real("Range %", "range_percent"),
                                             Count("Instances", "instances"),
                                             DurationReal("Avg", "avg_ns"),
                                             Duration("Min", "min_ns"),
                                             Duration("Max", "max_ns")},
                                            6);
  AppendRangeColumns(s, cols);
  cols.push_back({s.human ? "Kernel / Operation" : "name", false, CellKind::kString});
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
      cells.emplace_back(ShownName(s, w.name));
      table.AddRow(std::move(cells));
    }
  }
}

Table MemoryTable(const Style& s) {
  return Table(Columns(s, true,
                       {Real("Time %", "time_percent"),
                        Duration("Total Time", "total_time_ns"),
                        Count("Count", "count"),
                        DurationReal("Avg", "avg_ns"),
                        Duration("Min", "min_ns"),
                        Duration("Max", "max_ns"),
                        Size("Total Bytes", "total_bytes"),
                        SizeReal("Avg Bytes", "avg_bytes"),
                        Size("Min Bytes", "min_bytes"),
                        Size("Max Bytes", "max_bytes"),
                        Real("GB/s", "gb_per_s"),
                        Text("Operation", "operation")},
                       11));
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
    // Bytes per ns are GB/s: the operation's bytes over its total time.
    if (r.time.total_ns == 0) {
      cells.emplace_back();
    } else {
      cells.emplace_back(static_cast<double>(r.total_bytes) / static_cast<double>(r.time.total_ns),
                         2);
    }
    cells.emplace_back(r.operation);
    table.AddRow(std::move(cells));
  }
}

Table IdleTable(const Style& s) {
  return Table(Columns(s, true,
                       {Duration("Span", "span_ns"),
                        Duration("Busy", "busy_ns"),
                        Real("Busy %", "busy_percent"),
                        Duration("Idle", "idle_ns"),
                        Count("Gaps", "gaps"),
                        Duration("Longest Gap", "longest_gap_ns"),
                        Count("Begin", "begin_ns"),
                        Count("End", "end_ns")},
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

// A section of the text form: a blank line, its heading, then its table or what it lacks.
void AddSection(std::string heading, Table table, const char* none, Report& out) {
  TextBlock block;
  block.before = {"", std::move(heading)};
  if (table.num_rows() == 0) {
    block.after = {absl::StrCat("  (", none, ")")};
  } else {
    block.table = std::move(table);
  }
  out.text_blocks.push_back(std::move(block));
}

void AddLines(std::vector<std::string> lines, Report& out) {
  TextBlock block;
  block.before = std::move(lines);
  out.text_blocks.push_back(std::move(block));
}

// syncs and launch-sites: time by call site (measures/call_sites.h). `calls_column`: what the
// names column holds, as {text header, machine name}.
Table CallSiteTable(const Style& s, SummaryColumn count_column, SummaryColumn calls_column) {
  std::vector<Table::Column> cols = Columns(s, false,
                                            {Real("Time %", "time_percent"),
                                             Duration("Total Time", "total_time_ns"),
                                             std::move(count_column),
                                             DurationReal("Avg", "avg_ns"),
                                             Duration("Max", "max_ns"),
                                             Text("Line", "site"),
                                             Text("Function", "function"),
                                             std::move(calls_column)},
                                            5);
  if (!s.human) {
    cols.push_back({"source_file", false, CellKind::kString});
    cols.push_back({"line", true, CellKind::kInt});
    cols.push_back({"stack_cut", false, CellKind::kBool});
  }
  return Table(std::move(cols));
}

Table SyncsTable(const Style& s) {
  return CallSiteTable(s, Count("Calls", "calls"), Text("CUDA Calls", "cuda_calls"));
}

Table LaunchSitesTable(const Style& s) {
  return CallSiteTable(s, Count("Kernels", "launches"), Text("Kernel Names", "kernels"));
}

void AddCallSiteRows(Table& table, const Style& s, const TraceSummary& t,
                     const std::vector<CallSiteSummary>& rows) {
  for (const CallSiteSummary& r : rows) {
    std::vector<Cell> cells = Location(s, t, nullptr);
    cells.push_back(Percent(r.time_percent));
    cells.push_back(Ns(s, r.time.total_ns));
    cells.emplace_back(r.time.count);
    cells.push_back(NsReal(s, r.time.avg_ns));
    cells.push_back(Ns(s, r.time.max_ns));
    cells.emplace_back(r.site);
    // A line found past a cut in its stack says so where people read it.
    cells.emplace_back(s.human && r.stack_cut ? absl::StrCat(r.function, " ", kPastCut)
                                              : r.function);
    cells.emplace_back(ShownCalls(s, r.calls));
    if (!s.human) {
      cells.emplace_back(r.source_file);
      cells.push_back(r.line == 0 ? Cell() : Cell(r.line));
      cells.push_back(Cell::Bool(r.stack_cut));
    }
    table.AddRow(std::move(cells));
  }
}

// The text sections of the syncs and launch-sites reports, with what a trace without stacks
// lacks.
void AddCallSiteText(const Style& s, const TraceSummary& t, const SummaryOptions& options,
                     Report& out) {
  const std::string no_stacks =
      t.api_stacks == 0 ? " (the trace has no call stacks: record with WARPSCOPE_STACKS on)" : "";
  if (options.syncs) {
    Table table = SyncsTable(s);
    AddCallSiteRows(table, s, t, t.syncs);
    AddSection(absl::StrCat("-- host time blocked in syncs and blocking copies, by call site --",
                            no_stacks),
               std::move(table), "no host waits", out);
  }
  if (options.launch_sites) {
    Table table = LaunchSitesTable(s);
    AddCallSiteRows(table, s, t, t.launch_sites);
    AddSection(absl::StrCat("-- kernel time by the call site that launched it --", no_stacks),
               std::move(table), "no kernels", out);
  }
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
        " no API record with their correlation id, so no NVTX range, thread or call site "
        "counts ",
        t.gpu_records_without_api_call == 1 ? "it" : "them",
        ": launches through the driver API (cuBLASLt, Triton, NCCL) in a trace recorded "
        "before every launch call was, or dropped records (cupti.dropped_records in info); "
        "record again with the default -t, or add launch or driver to -t"));
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

// A device's sections of the text form: kernels, memory operations, busy and idle time.
void AddDeviceText(const Style& s, const TraceSummary& t, const DeviceSummary& d,
                   const SummaryOptions& options, Report& out) {
  const std::string title = DeviceTitle(d);
  if (options.kernels) {
    Table table = NamedTable(s, true);
    AddNamedRows(table, s, t, &d, d.kernels);
    AddSection(absl::StrCat("-- ", title, ": kernels --"), std::move(table), "no kernels", out);
  }
  if (options.memory) {
    Table table = MemoryTable(s);
    AddMemoryRows(table, s, t, d);
    AddSection(absl::StrCat("-- ", title, ": memory operations --"), std::move(table),
               "no memory operations", out);
  }
  if (options.idle && d.has_busy) {
    const GpuBusy& b = d.busy;
    std::string line = absl::StrCat(title, ": busy ", FormatDuration(b.busy_ns), " of ",
                                    FormatDuration(b.span_ns()), " (",
                                    absl::StrFormat("%.1f", BusyPercent(b)), "%); idle ",
                                    FormatDuration(b.idle_ns), " in ", b.gaps,
                                    b.gaps == 1 ? " gap" : " gaps");
    if (b.gaps > 0) absl::StrAppend(&line, ", longest ", FormatDuration(b.longest_gap_ns));
    AddLines({"", std::move(line)}, out);
  }
}

// The text form: a section per trace (and the combined view) with human durations; the notes
// follow it (Report::notes).
void AddSummaryText(const std::vector<TraceSummary>& summaries, const SummaryOptions& options,
                    Report& out) {
  const Style s{true, false, &options.names, options.name_width};
  const size_t traces = summaries.size() > 1 ? summaries.size() - 1 : summaries.size();
  for (const TraceSummary& t : summaries) {
    std::vector<std::string> heading;
    if (&t != &summaries.front()) heading.emplace_back();
    heading.push_back(absl::StrCat("== ",
                                   t.label == "*" ? absl::StrCat("all ", traces, " traces combined")
                                                  : absl::StrCat("trace ", t.label),
                                   " =="));
    AddLines(std::move(heading), out);
    // A device the process never used (no kernel, no copy) has no section, unless no device
    // was used at all: then the first says so.
    bool any_work = false;
    for (const DeviceSummary& d : t.devices) any_work |= !d.kernels.empty() || !d.memory.empty();
    for (const DeviceSummary& d : t.devices) {
      if (d.kernels.empty() && d.memory.empty() && (any_work || &d != &t.devices.front())) {
        continue;
      }
      AddDeviceText(s, t, d, options, out);
    }
    if (options.memory && HasDeviceMemory({t})) {
      AddSection("-- device memory (warpscope memory for more) --", DeviceMemoryTable({t}, true),
                 "no device memory", out);
      AddLines(DeviceMemoryLines(t), out);
    }
    if (options.api) {
      Table table = NamedTable(s, false);
      AddNamedRows(table, s, t, nullptr, t.api_calls);
      AddSection("-- CUDA API calls --", std::move(table), "no API calls", out);
    }
    if (options.nvtx) {
      Table table = NvtxTable(s);
      AddNvtxRows(table, s, t);
      AddSection("-- NVTX ranges: host time and the GPU work launched inside --", std::move(table),
                 "no NVTX ranges", out);
    }
    if (options.nvtx_kernels) {
      Table table = NvtxWorkTable(s);
      AddNvtxWorkRows(table, s, t);
      AddSection("-- NVTX ranges: kernels and copies launched inside --", std::move(table),
                 "no GPU work launched inside NVTX ranges", out);
    }
    AddCallSiteText(s, t, options, out);
  }
}

// Lines on what limits the NVTX GPU figures of each trace, each starting "TRACE: ".
std::vector<std::string> SummaryNotes(const std::vector<TraceSummary>& summaries,
                                      const SummaryOptions& options) {
  std::vector<std::string> lines;
  if (!options.nvtx && !options.nvtx_kernels) return lines;
  for (const TraceSummary& t : summaries) {
    if (t.label == "*") continue;  // each trace speaks for itself
    for (const std::string& note : TraceNotes(t)) {
      lines.push_back(absl::StrCat(t.label, ": ", note));
    }
  }
  return lines;
}

}  // namespace

Report SummaryReport(const std::vector<TraceSummary>& summaries, const SummaryOptions& options) {
  const Style s{false, true, &options.names, options.name_width};
  Report out;
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
  if (options.memory && HasDeviceMemory(summaries)) {
    out.tables.emplace_back("device_memory", DeviceMemoryTable(summaries, false));
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
  if (options.syncs) {
    Table table = SyncsTable(s);
    for (const TraceSummary& t : summaries) AddCallSiteRows(table, s, t, t.syncs);
    out.tables.emplace_back("syncs", std::move(table));
  }
  if (options.launch_sites) {
    Table table = LaunchSitesTable(s);
    for (const TraceSummary& t : summaries) AddCallSiteRows(table, s, t, t.launch_sites);
    out.tables.emplace_back("launch_sites", std::move(table));
  }
  out.notes = SummaryNotes(summaries, options);
  AddSummaryText(summaries, options, out);
  return out;
}

}  // namespace warpscope
