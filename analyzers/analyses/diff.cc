// Builds and renders the comparison of two traces (diff.h, docs/diff.md).
#include "analyzers/analyses/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "analyzers/analyses/diff_efficiency.h"
#include "analyzers/measures/nvtx_projection.h"
#include "analyzers/analyses/summary.h"

namespace warpscope {
namespace {

// The instances of one NVTX range (all threads) and the GPU time of the work they launched.
struct RangeWork {
  uint64_t count = 0;
  uint64_t gpu_ns = 0;
  uint64_t host_ns = 0;  // host time of the instances, start to end
};

// What one trace contributes to the comparison.
struct Side {
  std::map<std::string, DurationStats> kernels;  // by name; medians as `summary` computes them
  std::map<std::string, DurationStats> memory;
  std::map<std::string, RangeWork> ranges;
  uint64_t gpu_busy_ns = 0, kernel_ns = 0, memory_ns = 0, span_ns = 0;
};

// One side from `summary`'s fold of the trace (its combined view, last: every device, the
// NVTX ranges over all threads): kernels and copies by name in bounded memory, medians as
// `summary` computes them.
absl::StatusOr<Side> Collect(const TraceModel& model, const DiffOptions& options) {
  SummaryOptions fold;
  fold.kernels = fold.api = fold.memory = fold.idle = false;
  fold.literal_ranges = options.literal_ranges;
  fold.combined = true;
  absl::StatusOr<std::vector<TraceSummary>> summaries = SummarizeTraceFiles({&model}, {""}, fold);
  if (!summaries.ok()) return summaries.status();
  Side side;
  const DeviceSummary& all = summaries->back().devices.front();
  for (const NamedDurations& k : all.kernels) {
    side.kernels[k.name] = k.time;
    side.kernel_ns += k.time.total_ns;
  }
  for (const MemoryOperationSummary& m : all.memory) {
    side.memory[m.operation] = m.time;
    side.memory_ns += m.time.total_ns;
  }
  for (const NvtxRangeSummary& g : summaries->back().nvtx_ranges) {
    RangeWork& r = side.ranges[g.domain.empty() ? g.path : absl::StrCat(g.domain, ":", g.path)];
    r.count += g.cpu.count;
    r.gpu_ns += g.gpu_time_ns;
    r.host_ns += g.cpu.total_ns;
  }
  for (const DeviceSummary& d : summaries->front().devices) {
    if (d.has_busy) side.gpu_busy_ns += d.busy.busy_ns;
  }
  side.span_ns = model.span.duration_ns();
  return side;
}

// Fills the comparison and verdict of a row whose counts and figures are set.
void Judge(const DiffOptions& options, DiffRow* row) {
  row->delta_ns = row->new_ns - row->base_ns;
  row->delta_fraction = row->base_ns > 0 ? row->delta_ns / row->base_ns : 0;
  row->impact_ns = row->per_instance ? row->delta_ns * static_cast<double>(row->new_count)
                                     : static_cast<double>(row->new_total_ns) -
                                           static_cast<double>(row->base_total_ns);
  if (row->base_count == 0 && row->new_count > 0) {
    row->verdict = DiffVerdict::kAdded;
  } else if (row->new_count == 0 && row->base_count > 0) {
    row->verdict = DiffVerdict::kRemoved;
  } else if (std::fabs(row->impact_ns) > options.min_delta_ns &&
             std::fabs(row->delta_fraction) > options.threshold) {
    row->verdict = row->delta_ns > 0 ? DiffVerdict::kRegression : DiffVerdict::kImprovement;
  }
}

DiffRow TotalRow(std::string name, uint64_t base, uint64_t next, const DiffOptions& options) {
  DiffRow row;
  row.section = DiffSection::kTotal;
  row.name = std::move(name);
  row.base_count = row.new_count = 1;
  row.base_total_ns = base;
  row.new_total_ns = next;
  row.base_ns = static_cast<double>(base);
  row.new_ns = static_cast<double>(next);
  Judge(options, &row);
  return row;
}

// A row per name found on either side; `figure(x, count)` gives the per-instance figure.
template <typename T, typename Count, typename Total, typename PerInstance>
void CompareNamed(DiffSection section, std::map<std::string, T>& base,
                  std::map<std::string, T>& next, Count count, Total total,
                  PerInstance per_instance, const DiffOptions& options,
                  std::vector<DiffRow>* rows) {
  std::map<std::string, std::pair<T*, T*>> names;
  for (auto& [name, value] : base) names[name].first = &value;
  for (auto& [name, value] : next) names[name].second = &value;
  for (auto& [name, sides] : names) {
    DiffRow row;
    row.section = section;
    row.name = name;
    row.base_count = sides.first ? count(*sides.first) : 0;
    row.new_count = sides.second ? count(*sides.second) : 0;
    row.base_total_ns = sides.first ? total(*sides.first) : 0;
    row.new_total_ns = sides.second ? total(*sides.second) : 0;
    row.per_instance =
        row.base_count >= options.min_instances && row.new_count >= options.min_instances;
    if (row.per_instance) {
      row.base_ns = per_instance(*sides.first);
      row.new_ns = per_instance(*sides.second);
    } else {
      row.base_ns = static_cast<double>(row.base_total_ns);
      row.new_ns = static_cast<double>(row.new_total_ns);
    }
    Judge(options, &row);
    rows->push_back(std::move(row));
  }
}

// Stall reasons compared per kernel: the top ones of either side.
constexpr size_t kStallReasonsCompared = 3;

// Achieved occupancy of a kernel found on either side (NaN where a side has no figure). Judged
// when both sides have it for at least min_instances launches: slower when it fell by more
// than `threshold` of the base figure and the kernel's own time change costs more than
// `min_delta_ns` (its impact); an occupancy drop that costs no time is shown, not judged.
DiffRow OccupancyRow(const std::string& name, const KernelEfficiency* b,
                     const KernelEfficiency* n, const DiffRow* kernel, const DiffOptions& options) {
  DiffRow row;
  row.section = DiffSection::kOccupancy;
  row.name = name;
  if (b != nullptr) {
    row.base_count = b->occupancy_launches;
    row.base_fraction = b->achieved;
    row.base_theoretical = b->theoretical;
  }
  if (n != nullptr) {
    row.new_count = n->occupancy_launches;
    row.new_fraction = n->achieved;
    row.new_theoretical = n->theoretical;
  }
  if (kernel != nullptr) {
    row.per_instance = kernel->per_instance;
    row.base_ns = kernel->base_ns;
    row.new_ns = kernel->new_ns;
    row.delta_ns = kernel->delta_ns;
    row.base_total_ns = kernel->base_total_ns;
    row.new_total_ns = kernel->new_total_ns;
    row.impact_ns = kernel->impact_ns;
  }
  if (!std::isfinite(row.base_fraction) || !std::isfinite(row.new_fraction)) {
    row.impact_ns = 0;  // n/a on a side: nothing to explain
    return row;
  }
  const bool judged = row.base_fraction > 0 && row.base_count >= options.min_instances &&
                      row.new_count >= options.min_instances;
  if (!judged) return row;
  row.delta_fraction = (row.new_fraction - row.base_fraction) / row.base_fraction;
  if (row.delta_fraction < -options.threshold && row.impact_ns > options.min_delta_ns) {
    row.verdict = DiffVerdict::kRegression;
  } else if (row.delta_fraction > options.threshold && row.impact_ns < -options.min_delta_ns) {
    row.verdict = DiffVerdict::kImprovement;
  }
  return row;
}

// Tail cost per launch, judged as kernel time is (median per launch or total, Judge) when both
// sides have launches with tail metrics; "n/a" on a side without. A change per launch shorter
// than `resolution_ns` (the PM sampling interval) is under what the curves resolve: a short
// kernel that shares a sample with a neighbour whose tail changed moves by that much.
DiffRow TailRow(const std::string& name, const KernelEfficiency* b, const KernelEfficiency* n,
                uint64_t resolution_ns, const DiffOptions& options) {
  DiffRow row;
  row.section = DiffSection::kTail;
  row.name = name;
  row.base_count = b ? b->tail.count : 0;
  row.new_count = n ? n->tail.count : 0;
  row.base_total_ns = b ? b->tail.total_ns : 0;
  row.new_total_ns = n ? n->tail.total_ns : 0;
  if (row.base_count == 0 || row.new_count == 0) {
    row.base_ns = row.base_count ? b->tail.median_ns : std::nan("");
    row.new_ns = row.new_count ? n->tail.median_ns : std::nan("");
    return row;
  }
  row.per_instance =
      row.base_count >= options.min_instances && row.new_count >= options.min_instances;
  row.base_ns = row.per_instance ? b->tail.median_ns : static_cast<double>(row.base_total_ns);
  row.new_ns = row.per_instance ? n->tail.median_ns : static_cast<double>(row.new_total_ns);
  Judge(options, &row);
  const double launches = row.per_instance ? 1.0 : static_cast<double>(row.new_count);
  if (std::fabs(row.new_ns - row.base_ns) < static_cast<double>(resolution_ns) * launches) {
    row.verdict = DiffVerdict::kUnchanged;
  }
  return row;
}

double StallShareOf(const KernelEfficiency* k, const std::string& state) {
  if (k == nullptr || k->stall_samples == 0) return std::nan("");
  for (const StallShare& s : k->stalls) {
    if (s.state == state) return s.fraction;
  }
  return 0;
}

// A row per warp state among the top kStallReasonsCompared of either side: its share of the
// kernel's samples on each side. Shown, not judged: a stall mix has no time of its own.
void AddStallRows(const std::string& name, const KernelEfficiency* b, const KernelEfficiency* n,
                  std::vector<DiffRow>* rows) {
  std::vector<std::string> states;
  for (const KernelEfficiency* k : {b, n}) {
    if (k == nullptr) continue;
    for (size_t i = 0; i < k->stalls.size() && i < kStallReasonsCompared; ++i) {
      if (std::find(states.begin(), states.end(), k->stalls[i].state) == states.end()) {
        states.push_back(k->stalls[i].state);
      }
    }
  }
  for (const std::string& state : states) {
    DiffRow row;
    row.section = DiffSection::kStalls;
    row.name = name;
    row.figure = state;
    row.base_count = b ? b->stall_samples : 0;
    row.new_count = n ? n->stall_samples : 0;
    row.base_fraction = StallShareOf(b, state);
    row.new_fraction = StallShareOf(n, state);
    if (row.base_fraction > 0 && std::isfinite(row.new_fraction)) {
      row.delta_fraction = (row.new_fraction - row.base_fraction) / row.base_fraction;
    }
    rows->push_back(std::move(row));
  }
}

std::string MissingSamplesNote(const std::string& what, const std::string& label,
                               const std::string& kind, const std::string& flag) {
  return absl::StrCat(what, ": n/a for ", label, ", which has no ", kind,
                      " samples; record both runs with `warpscope record ", flag, "`");
}

// Occupancy, tail and stall rows, and notes on the figures a trace lacks.
absl::Status AddEfficiencyRows(const TraceModel& base, const TraceModel& next,
                               const DiffOptions& options, DiffReport* report) {
  absl::StatusOr<TraceEfficiency> base_efficiency = CollectEfficiencyOf(base);
  if (!base_efficiency.ok()) return base_efficiency.status();
  absl::StatusOr<TraceEfficiency> new_efficiency = CollectEfficiencyOf(next);
  if (!new_efficiency.ok()) return new_efficiency.status();
  const TraceEfficiency& b = *base_efficiency;
  const TraceEfficiency& n = *new_efficiency;
  std::map<std::string, const DiffRow*> kernel_rows;
  for (const DiffRow& row : report->rows) {
    if (row.section == DiffSection::kKernel) kernel_rows[row.name] = &row;
  }
  std::set<std::string> names;
  for (const auto& [name, k] : b.kernels) names.insert(name);
  for (const auto& [name, k] : n.kernels) names.insert(name);
  const bool pm = b.has_pm_samples || n.has_pm_samples;
  const bool pc = b.has_pc_samples || n.has_pc_samples;
  std::vector<DiffRow> rows;
  for (const std::string& name : names) {
    const auto bi = b.kernels.find(name), ni = n.kernels.find(name);
    const KernelEfficiency* bk = bi == b.kernels.end() ? nullptr : &bi->second;
    const KernelEfficiency* nk = ni == n.kernels.end() ? nullptr : &ni->second;
    const auto kernel = kernel_rows.find(name);
    const DiffRow* kernel_row = kernel == kernel_rows.end() ? nullptr : kernel->second;
    if (pm && ((bk && !std::isnan(bk->achieved)) || (nk && !std::isnan(nk->achieved)))) {
      rows.push_back(OccupancyRow(name, bk, nk, kernel_row, options));
    }
    if (pm && ((bk && bk->tail.count) || (nk && nk->tail.count))) {
      rows.push_back(
          TailRow(name, bk, nk, std::max(b.pm_interval_ns, n.pm_interval_ns), options));
    }
    if (pc) AddStallRows(name, bk, nk, &rows);
  }
  for (DiffRow& row : rows) report->rows.push_back(std::move(row));
  for (const auto& [side, label] :
       {std::pair(&b, report->base_label), std::pair(&n, report->new_label)}) {
    if (pm && !side->has_pm_samples) {
      report->notes.push_back(
          MissingSamplesNote("occupancy and tail", label, "PM", "--pm-sampling"));
    }
    if (pc && !side->has_pc_samples) {
      report->notes.push_back(MissingSamplesNote("stalls", label, "PC", "--pc-sampling"));
    }
  }
  return absl::OkStatus();
}

std::string SignedDuration(double ns) {
  return absl::StrCat(ns < 0 ? "-" : "+", FormatDuration(std::fabs(ns)));
}

bool ComparesFraction(const DiffRow& row) {
  return row.section == DiffSection::kOccupancy || row.section == DiffSection::kStalls;
}

std::string ChangeText(const DiffRow& row) {
  if (ComparesFraction(row)) {
    if (!(row.base_fraction > 0) || !std::isfinite(row.new_fraction)) return "";
  } else if (std::isnan(row.base_ns) || std::isnan(row.new_ns)) {
    return "";
  } else if (row.base_ns <= 0) {
    return row.new_ns > 0 ? "new" : "";
  }
  return absl::StrFormat("%+.1f%%", row.delta_fraction * 100);
}

std::string ComparedName(const DiffRow& row) {
  if (row.section == DiffSection::kOccupancy) return "achieved (theoretical)";
  if (row.section == DiffSection::kStalls) return row.figure;
  if (!row.per_instance) return "total";
  return row.section == DiffSection::kNvtx || row.section == DiffSection::kNvtxHost ? "mean"
                                                                                    : "median";
}

std::string Percent(double fraction) {
  return std::isnan(fraction) ? "n/a" : absl::StrFormat("%.1f%%", fraction * 100);
}

// A row's compared figure on one side, as the table shows it.
std::string FigureText(const DiffRow& row, double ns, double fraction, double theoretical) {
  switch (row.section) {
    case DiffSection::kOccupancy:
      return absl::StrCat(Percent(fraction), " (", Percent(theoretical), ")");
    case DiffSection::kStalls:
      return Percent(fraction);
    default:
      return std::isnan(ns) ? "n/a" : FormatDuration(ns);
  }
}

// A number for CSV and JSON; empty (null) when the figure is n/a.
Cell NumberCell(double value, int digits) {
  return std::isnan(value) ? Cell() : Cell(value, digits);
}

}  // namespace

std::string_view DiffSectionName(DiffSection section) {
  switch (section) {
    case DiffSection::kTotal:
      return "total";
    case DiffSection::kKernel:
      return "kernel";
    case DiffSection::kNvtx:
      return "nvtx";
    case DiffSection::kNvtxHost:
      return "nvtx-host";
    case DiffSection::kMemory:
      return "memory";
    case DiffSection::kOccupancy:
      return "occupancy";
    case DiffSection::kTail:
      return "tail";
    case DiffSection::kStalls:
      return "stalls";
  }
  return "";
}

std::string_view DiffVerdictName(DiffVerdict verdict) {
  switch (verdict) {
    case DiffVerdict::kUnchanged:
      return "";
    case DiffVerdict::kRegression:
      return "slower";
    case DiffVerdict::kImprovement:
      return "faster";
    case DiffVerdict::kAdded:
      return "new";
    case DiffVerdict::kRemoved:
      return "gone";
  }
  return "";
}

absl::StatusOr<double> ParseRelativeThreshold(std::string_view text) {
  absl::string_view t = absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  const bool percent = absl::ConsumeSuffix(&t, "%");
  t = absl::StripAsciiWhitespace(t);
  double value = 0;
  if (!absl::SimpleAtod(t, &value) || !std::isfinite(value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", std::string(text), "' is not a relative threshold: give a percentage (5%) or a fraction (0.05)"));
  }
  return percent ? value / 100 : value;
}

absl::StatusOr<double> ParseDurationNs(std::string_view text) {
  const absl::string_view t =
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  static constexpr std::pair<absl::string_view, double> kUnits[] = {
      {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (const auto& [unit, scale] : kUnits) {
    absl::string_view number = t;
    if (!absl::ConsumeSuffix(&number, unit)) continue;
    double value = 0;
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(number), &value) && std::isfinite(value) &&
        value >= 0) {
      return value * scale;
    }
    break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "'", std::string(text), "' is not a duration: give a number and a unit, e.g. 20us, 1.5ms, 500ns, 2s"));
}

absl::StatusOr<DiffReport> BuildDiffReportOfFiles(const TraceModel& base, const TraceModel& next,
                                                  std::string base_label, std::string new_label,
                                                  const DiffOptions& options) {
  DiffReport report;
  report.base_label = std::move(base_label);
  report.new_label = std::move(new_label);
  report.options = options;
  absl::StatusOr<Side> base_side = Collect(base, options);
  if (!base_side.ok()) return base_side.status();
  absl::StatusOr<Side> new_side = Collect(next, options);
  if (!new_side.ok()) return new_side.status();
  Side& b = *base_side;
  Side& n = *new_side;
  report.totals = {TotalRow("GPU busy time", b.gpu_busy_ns, n.gpu_busy_ns, options),
                   TotalRow("kernel time", b.kernel_ns, n.kernel_ns, options),
                   TotalRow("memory time", b.memory_ns, n.memory_ns, options),
                   TotalRow("wall span", b.span_ns, n.span_ns, options)};
  const auto count = [](const DurationStats& d) { return d.count; };
  const auto total = [](const DurationStats& d) { return d.total_ns; };
  const auto median = [](const DurationStats& d) { return d.median_ns; };
  CompareNamed(DiffSection::kKernel, b.kernels, n.kernels, count, total, median, options,
               &report.rows);
  CompareNamed(DiffSection::kMemory, b.memory, n.memory, count, total, median, options,
               &report.rows);
  CompareNamed(
      DiffSection::kNvtx, b.ranges, n.ranges, [](const RangeWork& r) { return r.count; },
      [](const RangeWork& r) { return r.gpu_ns; },
      [](const RangeWork& r) {
        return r.count ? static_cast<double>(r.gpu_ns) / static_cast<double>(r.count) : 0.0;
      },
      options, &report.rows);
  CompareNamed(
      DiffSection::kNvtxHost, b.ranges, n.ranges, [](const RangeWork& r) { return r.count; },
      [](const RangeWork& r) { return r.host_ns; },
      [](const RangeWork& r) {
        return r.count ? static_cast<double>(r.host_ns) / static_cast<double>(r.count) : 0.0;
      },
      options, &report.rows);
  if (absl::Status s = AddEfficiencyRows(base, next, options, &report); !s.ok()) return s;
  std::stable_sort(report.rows.begin(), report.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::fabs(x.impact_ns) > std::fabs(y.impact_ns);
  });
  for (const std::vector<DiffRow>* rows : {&report.totals, &report.rows}) {
    for (const DiffRow& row : *rows) {
      report.regressions += row.verdict == DiffVerdict::kRegression;
      report.improvements += row.verdict == DiffVerdict::kImprovement;
    }
  }
  if (options.top > 0 && report.rows.size() > options.top) report.rows.resize(options.top);
  return report;
}

TraceModelOptions DiffLoadOptions() {
  TraceModelOptions load;
  load.keep_pc_sample_records = false;  // a trace with samples is loaded again whole
  load.keep_events = EventKindBit(EventKind::kNvtxRange);
  return load;
}

DiffReport BuildDiffReport(const TraceModel& base, const TraceModel& next,
                           std::string base_label, std::string new_label,
                           const DiffOptions& options) {
  // Models with every table are folded from their tables: nothing is read, nothing can fail.
  return *BuildDiffReportOfFiles(base, next, std::move(base_label), std::move(new_label),
                                 options);
}

namespace {

// The rows for people: counts "3 -> 4", figures and changes as durations, short names.
Table PeopleTable(const DiffReport& report) {
  using K = CellKind;
  Table table({{"section", false, K::kString},
               {"name", false, K::kString},
               {"count", true, K::kString},
               {"compared", false, K::kString},
               {"base", true, K::kString},
               {"new", true, K::kString},
               {"change", true, K::kString},
               {"impact", true, K::kString},
               {"verdict", false, K::kString}});
  for (const std::vector<DiffRow>* rows : {&report.totals, &report.rows}) {
    for (const DiffRow& row : *rows) {
      const bool stalls = row.section == DiffSection::kStalls;
      table.AddRow(
          {std::string(DiffSectionName(row.section)), report.names.Show(row.name, true),
           row.section == DiffSection::kTotal ? std::string()
                                              : absl::StrCat(row.base_count, " -> ", row.new_count),
           ComparedName(row), FigureText(row, row.base_ns, row.base_fraction, row.base_theoretical),
           FigureText(row, row.new_ns, row.new_fraction, row.new_theoretical), ChangeText(row),
           stalls ? std::string() : SignedDuration(row.impact_ns),
           std::string(DiffVerdictName(row.verdict))});
    }
  }
  return table;
}

// The text form: the two traces, the rows for people and a count of the verdicts.
void AddDiffText(const DiffReport& report, Report& out) {
  TextBlock block;
  block.before = {"base: " + report.base_label, "new:  " + report.new_label, ""};
  block.table = PeopleTable(report);
  block.after = {
      "",
      absl::StrFormat("%d regression(s), %d improvement(s): changes above %.1f%% "
                      "and %s of impact; per instance (median) for rows with >= %d "
                      "instances on both sides",
                      report.regressions, report.improvements, report.options.threshold * 100,
                      FormatDuration(report.options.min_delta_ns), report.options.min_instances)};
  out.text_blocks.push_back(std::move(block));
}

}  // namespace

Report DiffReportTables(const DiffReport& report) {
  using K = CellKind;
  Table table({{"section", false, K::kString},          {"name", false, K::kString},
               {"base_count", true, K::kInt},           {"new_count", true, K::kInt},
               {"compared", false, K::kString},         {"base_ns", true, K::kReal},
               {"new_ns", true, K::kReal},              {"delta_ns", true, K::kReal},
               {"change_pct", true, K::kReal},          {"impact_ns", true, K::kReal},
               {"base_total_ns", true, K::kInt},        {"new_total_ns", true, K::kInt},
               {"base_fraction", true, K::kReal},       {"new_fraction", true, K::kReal},
               {"base_theoretical", true, K::kReal},    {"new_theoretical", true, K::kReal},
               {"verdict", false, K::kString}});
  for (const std::vector<DiffRow>* rows : {&report.totals, &report.rows}) {
    for (const DiffRow& row : *rows) {
      const bool stalls = row.section == DiffSection::kStalls;
      std::vector<Cell> cells = {std::string(DiffSectionName(row.section)),
                                 report.names.Show(row.name, false), row.base_count,
                                 row.new_count, ComparedName(row)};
      if (stalls) {
        cells.insert(cells.end(), 3, Cell());
      } else {
        cells.push_back(NumberCell(row.base_ns, 1));
        cells.push_back(NumberCell(row.new_ns, 1));
        cells.push_back(NumberCell(row.new_ns - row.base_ns, 1));
      }
      const std::string change = ChangeText(row);
      cells.push_back(change.empty() || change == "new" ? Cell() : Cell(row.delta_fraction * 100));
      cells.push_back(Cell(row.impact_ns, 1));
      cells.push_back(row.base_total_ns);
      cells.push_back(row.new_total_ns);
      cells.push_back(NumberCell(row.base_fraction, 4));
      cells.push_back(NumberCell(row.new_fraction, 4));
      cells.push_back(NumberCell(row.base_theoretical, 4));
      cells.push_back(NumberCell(row.new_theoretical, 4));
      cells.push_back(std::string(DiffVerdictName(row.verdict)));
      table.AddRow(std::move(cells));
    }
  }
  Report out;
  out.scalars = {{"base", report.base_label},
                 {"new", report.new_label},
                 {"regressions", report.regressions},
                 {"improvements", report.improvements},
                 {"threshold", Cell(report.options.threshold, 4)},
                 {"min_delta_ns", Cell(report.options.min_delta_ns, 1)},
                 {"min_instances", report.options.min_instances}};
  out.tables.emplace_back("rows", std::move(table));
  out.notes = report.notes;
  AddDiffText(report, out);
  return out;
}

}  // namespace warpscope
