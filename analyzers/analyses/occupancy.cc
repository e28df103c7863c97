// Builds and renders the occupancy report (see occupancy.h and docs/occupancy.md).
#include "analyzers/analyses/occupancy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <string_view>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/measures/kernel_name_filter.h"
#include "analyzers/measures/sampling_coverage.h"
#include "analyzers/model/trace_limits.h"

namespace warpscope {
namespace {

std::string Dims(uint32_t x, uint32_t y, uint32_t z) {
  if (y <= 1 && z <= 1) return absl::StrCat(x);
  return absl::StrCat(x, "x", y, "x", z);
}

// The last device described with `id` (a later description wins), or null.
const DeviceInfo* DeviceById(std::span<const DeviceInfo> devices, uint32_t id) {
  const DeviceInfo* device = nullptr;
  for (const DeviceInfo& d : devices) {
    if (d.id == id) device = &d;
  }
  return device;
}

// A row's sums over the launches that have an achieved figure.
struct RowAccumulator {
  double weight = 0, weighted = 0, shared_ns = 0, sampled_ns = 0;
  double unseen_ns = 0;   // time of the launches with a figure that no own sample covers
  double covered_ns = 0;  // time of the launches with a figure inside any PM sample
  // Per elapsed cycle; elapsed_all: every launch with a figure has one.
  double elapsed_weight = 0, elapsed_weighted = 0;
  bool elapsed_all = true;
  // AchievedOccupancy's sums over samples of their own and its most cycles outside them (NaN
  // once a launch lacks them).
  double seen_occupied = 0, seen_active = 0, seen_elapsed = 0;
  double unseen_active_max = 0, unseen_elapsed = 0;
  // The launch without a figure whose reason the row gives: the longest, the last of equals.
  uint64_t longest_without = 0, longest_without_index = 0;
  ResidentWarpLimit limit;

  void Add(const AchievedOccupancy& ach, uint64_t duration_ns) {
    const double ns = static_cast<double>(duration_ns);
    weight += ach.weight;
    weighted += ach.weight * ach.achieved;
    if (std::isnan(ach.achieved_elapsed)) {
      elapsed_all = false;
    } else {
      elapsed_weight += ach.elapsed_weight;
      elapsed_weighted += ach.elapsed_weight * ach.achieved_elapsed;
    }
    shared_ns += ach.shared_time_fraction * ns;
    sampled_ns += ns;
    covered_ns += ach.coverage * ns;
    unseen_ns += std::clamp(ach.unseen_ns, 0.0, ns);
    seen_occupied += ach.seen_occupied;
    seen_active += ach.seen_active_cycles;
    seen_elapsed += ach.seen_elapsed_cycles;
    unseen_active_max += ach.unseen_active_cycles_max;
    unseen_elapsed += ach.unseen_elapsed_cycles;
  }
};

struct Bounds {
  double low = kNaN, high = kNaN;
};

// Where a ratio of warps to cycles can lie when `seen_cycles` of them were measured with
// `seen_occupied` (warps / max warps per SM, summed over cycles) and up to `unseen_cycles` more,
// not measured, held between no warps and `ceiling` each: the fewest warps in the most cycles
// give the low end, the most warps in the most cycles the high end (or none, if the measured
// part is above the ceiling). Held to contain `figure`.
Bounds RatioBounds(double seen_occupied, double seen_cycles, double unseen_cycles, double ceiling,
                   double figure) {
  const double total = seen_cycles + unseen_cycles;
  const double unseen = total > 0 ? unseen_cycles / total : 1;
  const double seen = seen_cycles > 0 ? seen_occupied / seen_cycles : 0;
  Bounds b;
  b.low = std::min(seen * (1 - unseen), figure);
  b.high = std::max({seen, seen * (1 - unseen) + ceiling * unseen, figure});
  return b;
}

// The same with the unseen part's share of the time standing for its share of the cycles.
Bounds TimeShareBounds(double figure, double unseen, double ceiling) {
  return {figure * (1 - unseen), figure * (1 - unseen) + ceiling * unseen};
}

// The achieved figure of a row from its launches, and what qualifies it.
void FinishAchieved(const RowAccumulator& a, OccupancyRow& row) {
  if (!(a.weight > 0)) return;  // no launch with an achieved figure
  row.achieved = a.weighted / a.weight;
  row.shared_time_fraction = a.sampled_ns > 0 ? a.shared_ns / a.sampled_ns : 0;
  const double unseen = a.sampled_ns > 0 ? std::clamp(a.unseen_ns / a.sampled_ns, 0.0, 1.0) : 1;
  const double ceiling = std::max(row.theoretical ? row.theoretical->occupancy : 1.0, row.achieved);
  Bounds b;
  if (!row.time_weighted && !std::isnan(a.unseen_active_max)) {
    b = RatioBounds(a.seen_occupied, a.seen_active, a.unseen_active_max, ceiling, row.achieved);
    const double total = a.seen_active + a.unseen_active_max;
    row.unseen_share = total > 0 ? a.unseen_active_max / total : 1;
  } else {
    b = TimeShareBounds(row.achieved, unseen, ceiling);
    row.unseen_share = unseen;
    row.unseen_by_time = true;
  }
  row.achieved_low = b.low;
  row.achieved_high = b.high;
  if (a.elapsed_all && a.elapsed_weight > 0) {
    row.achieved_elapsed = a.elapsed_weighted / a.elapsed_weight;
    const double elapsed_ceiling = std::max(ceiling, row.achieved_elapsed);
    const Bounds e = !std::isnan(a.seen_elapsed) && !std::isnan(a.unseen_elapsed)
                         ? RatioBounds(a.seen_occupied, a.seen_elapsed, a.unseen_elapsed,
                                       elapsed_ceiling, row.achieved_elapsed)
                         : TimeShareBounds(row.achieved_elapsed, unseen, elapsed_ceiling);
    row.achieved_elapsed_low = e.low;
    row.achieved_elapsed_high = e.high;
  }
  if (row.achieved_high - row.achieved_low > kMaxAchievedWidth) {
    // Each launch's edges fall in samples shared with its neighbours: samples a twentieth of
    // a launch keep the unseen part near a tenth.
    const double launch_ns = a.sampled_ns / std::max<uint32_t>(row.achieved_launches, 1);
    const std::string cycles =
        row.unseen_by_time
            ? ""
            : absl::StrFormat(" (up to %.0f%% of its active SM cycles)", 100 * row.unseen_share);
    row.too_few = absl::StrFormat(
        "%.0f%% of its time%s has no PM sample of its own: achieved lies between %.1f%% and "
        "%.1f%%; record with --pm-interval %s or shorter (a launch runs %s)",
        100 * unseen, cycles, 100 * row.achieved_low, 100 * row.achieved_high,
        FormatDuration(std::max(1000.0, launch_ns / 20)), FormatDuration(launch_ns));
  }
  if (row.achieved_launches < row.launches) {
    row.achieved_reason = absl::StrCat("from ", row.achieved_launches, " of ", row.launches,
                                       " launches; others: ", row.achieved_reason);
  } else {
    row.achieved_reason.clear();
  }
  std::vector<std::string> caveats;
  if (row.launches_from_shared > 0) {
    caveats.push_back(absl::StrCat(
        row.launches_from_shared, " of ", row.achieved_launches,
        " launches had no PM sample of their own, only samples shared with other kernels: "
        "the achieved figure includes those kernels"));
  } else if (row.shared_time_fraction > 0.1) {
    caveats.push_back(absl::StrFormat(
        "%.0f%% of its sampled time is in samples shared with other kernels, left out of "
        "the achieved figure",
        row.shared_time_fraction * 100));
  }
  if (row.above_limit > 0) {
    caveats.push_back(absl::StrFormat(
        "%u PM sample%s above the %.0f warps per SM %s (another kernel ran in %s), capped to "
        "it",
        row.above_limit, row.above_limit == 1 ? "" : "s", a.limit.per_sm,
        a.limit.theoretical ? "its theoretical occupancy allows" : "an SM holds",
        row.above_limit == 1 ? "it" : "them"));
  }
  if (row.time_weighted) {
    caveats.push_back(absl::StrCat(
        "the PM metric set lacks ", kMetricSmCyclesActive,
        ": samples are weighted by time, not by active cycles, so a long tail (few SMs "
        "busy) reads lower than Nsight Compute's figure"));
  }
  for (const std::string& c : caveats) {
    if (!row.achieved_reason.empty()) absl::StrAppend(&row.achieved_reason, "; ");
    absl::StrAppend(&row.achieved_reason, c);
  }
}

// The theoretical occupancy of a row's launch configuration on its device, or why there is none.
void FillTheoretical(std::span<const DeviceInfo> devices, OccupancyRow& row) {
  const DeviceInfo* device = DeviceById(devices, row.device_id);
  if (!row.launch_known) {
    row.theoretical_error = "launch configuration not in the trace";
  } else if (device == nullptr) {
    row.theoretical_error = absl::StrCat("device ", row.device_id, " not described in the trace");
  } else {
    auto t = ComputeTheoreticalOccupancy(*device, row.launch);
    if (t.ok()) {
      row.theoretical = *t;
      row.advice = AdviseOccupancy(*device, row.launch, *t);
    } else {
      row.theoretical_error = std::string(t.status().message());
    }
  }
}

// Text leaves out the elapsed figure's bounds and the unseen share (CSV, JSON and Python keep
// them) so that the table fits a terminal.
std::vector<Table::Column> OccupancyColumns(bool text) {
  // Typed for machines (Python's frames take the kinds); text has human cells.
  using K = CellKind;
  const K num = text ? K::kString : K::kInt, real = text ? K::kString : K::kReal;
  std::vector<Table::Column> columns = {{"kernel", false, K::kString},
                                        {"device", true, K::kInt},
                                        {"grid", true, K::kString},
                                        {"block", true, K::kString},
                                        {"regs", true, K::kInt},
                                        {"smem_per_block", true, num},
                                        {"launches", true, K::kInt},
                                        {text ? "total_time" : "total_ns", true, num},
                                        {"theoretical_pct", true, real},
                                        {"blocks_per_sm", true, K::kInt},
                                        {"limiter", false, K::kString},
                                        {"achieved_pct", true, real},
                                        {"achieved_low_pct", true, K::kReal},
                                        {"achieved_high_pct", true, K::kReal},
                                        {"achieved_elapsed_pct", true, K::kReal}};
  if (!text) {
    columns.insert(columns.end(), {{"achieved_elapsed_low_pct", true, K::kReal},
                                   {"achieved_elapsed_high_pct", true, K::kReal},
                                   {"unseen_pct", true, K::kReal}});
  }
  columns.insert(columns.end(), {{"gap_pts", true, K::kReal},
                                 {"covered_launches", true, K::kInt},
                                 {"covered_time_pct", true, K::kReal},
                                 {"samples", true, K::kInt},
                                 {"shared_samples", true, K::kInt},
                                 {"shared_pct", true, K::kReal},
                                 {"above_limit", true, K::kInt}});
  if (!text) {
    columns.insert(columns.end(), {{"launches_from_shared", true, K::kInt},
                                   {"note", false, K::kString},
                                   {"advice", false, K::kString}});
  } else {
    columns.push_back({"see", false, K::kString});
  }
  return columns;
}

void AppendLaunchCells(const OccupancyRow& row, bool text, std::vector<Cell>& cells) {
  cells.emplace_back(row.device_id);
  if (row.launch_known) {
    cells.emplace_back(Dims(row.launch.grid_x, row.launch.grid_y, row.launch.grid_z));
    cells.emplace_back(Dims(row.launch.block_x, row.launch.block_y, row.launch.block_z));
    cells.emplace_back(row.launch.registers_per_thread);
    cells.emplace_back(text ? Cell(FormatBytes(row.launch.shared_memory_per_block()))
                            : Cell(row.launch.shared_memory_per_block()));
  } else {
    for (int i = 0; i < 4; ++i) cells.emplace_back();
  }
}

// The figure per elapsed cycle beside the one per active cycle; for machines also its bounds
// and the unseen share behind both.
void AppendElapsedCells(const OccupancyRow& row, bool text, std::vector<Cell>& cells) {
  const bool known = !std::isnan(row.achieved_elapsed);
  cells.emplace_back(known ? PercentCell(row.achieved_elapsed) : Cell());
  if (text) return;
  cells.emplace_back(known ? PercentCell(row.achieved_elapsed_low) : Cell());
  cells.emplace_back(known ? PercentCell(row.achieved_elapsed_high) : Cell());
  cells.emplace_back(PercentCell(row.unseen_share));
}

// Launches, time, theoretical and achieved occupancy, and the samples behind them.
void AppendFigureCells(const OccupancyRow& row, bool text, std::vector<Cell>& cells) {
  cells.emplace_back(row.launches);
  cells.emplace_back(text ? Cell(FormatDuration(row.total_ns)) : Cell(row.total_ns));
  if (row.theoretical) {
    cells.emplace_back(PercentCell(row.theoretical->occupancy));
    cells.emplace_back(row.theoretical->blocks_per_sm);
    cells.emplace_back(LimiterNames(row.theoretical->limiters & ~kLimitBarriers));
  } else {
    cells.emplace_back(text ? Cell("n/a") : Cell());
    cells.emplace_back();
    cells.emplace_back();
  }
  if (std::isnan(row.achieved)) {
    cells.emplace_back(text ? Cell("n/a") : Cell());
    for (int i = text ? 4 : 7; i > 0; --i) cells.emplace_back();
  } else {
    // "*": the figure rests on samples shared with other kernels (a footnote says so).
    if (text && row.launches_from_shared > 0) {
      cells.emplace_back(absl::StrFormat("%.1f*", std::round(row.achieved * 1000.0) / 10.0));
    } else {
      cells.emplace_back(PercentCell(row.achieved));
    }
    cells.emplace_back(PercentCell(row.achieved_low));
    cells.emplace_back(PercentCell(row.achieved_high));
    AppendElapsedCells(row, text, cells);
    cells.emplace_back(row.theoretical ? PercentCell(row.theoretical->occupancy - row.achieved)
                                       : Cell());
  }
  cells.emplace_back(row.achieved_launches);
  cells.emplace_back(PercentCell(row.covered_time_fraction));
  cells.emplace_back(row.samples);
  cells.emplace_back(row.shared_samples);
  cells.emplace_back(std::isnan(row.achieved) ? Cell() : PercentCell(row.shared_time_fraction));
  cells.emplace_back(std::isnan(row.achieved) ? Cell() : Cell(row.above_limit));
  if (!text) {
    cells.emplace_back(std::isnan(row.achieved) ? Cell() : Cell(row.launches_from_shared));
  }
}

// In text, references to footnotes (added to `footnotes`); otherwise the notes and advice.
void AppendNoteCells(const OccupancyRow& row, bool text, std::vector<std::string>& footnotes,
                     std::vector<Cell>& cells) {
  std::vector<std::string> notes;
  if (!row.theoretical_error.empty()) notes.push_back(row.theoretical_error);
  if (!row.coverage_note.empty()) notes.push_back(row.coverage_note);
  if (!row.achieved_reason.empty()) notes.push_back(row.achieved_reason);
  if (!row.too_few.empty()) notes.push_back(row.too_few);
  std::vector<std::string> advice;
  for (const OccupancyAdvice& a : row.advice) advice.push_back(a.text);
  if (text) {
    std::vector<std::string> refs;
    for (const std::string& n : notes) {
      footnotes.push_back(n);
      refs.push_back(absl::StrCat("[", footnotes.size(), "]"));
    }
    for (const std::string& n : advice) {
      footnotes.push_back(n);
      refs.push_back(absl::StrCat("[", footnotes.size(), "]"));
    }
    cells.emplace_back(absl::StrJoin(refs, ""));
  } else {
    cells.emplace_back(absl::StrJoin(notes, " | "));
    cells.emplace_back(absl::StrJoin(advice, " | "));
  }
}

// The rows as the launches come in the trace's order: one group per row (name, launch
// configuration, device) over all launches, a row for those the filter selects. A sample that
// only launches of one row touch measured that row alone, and counts for it in full.
class RowsByLaunch {
 public:
  RowsByLaunch(KernelNameFilter& filter, std::span<const DeviceInfo> devices,
               OccupancyReport& report, std::vector<RowAccumulator>& acc)
      : filter_(filter), devices_(devices), report_(report), acc_(acc) {}

  uint32_t GroupOf(const KernelEvent& kernel) {
    const uint64_t launch_id = kernel.launch ? kernel.launch->id : 0;
    auto it = groups_.find(KeyView{kernel.name, launch_id, kernel.device_id});
    if (it == groups_.end()) {
      const auto group = static_cast<uint32_t>(groups_.size());
      it = groups_.emplace(Key{std::string(kernel.name), launch_id, kernel.device_id}, group).first;
      row_of_group_.push_back(filter_.Matches(std::get<0>(it->first)) ? AddRow(kernel) : -1);
    }
    const int64_t row = row_of_group_[it->second];
    if (row >= 0) {
      ++report_.kernels_matched;
      ++report_.rows[row].launches;
      report_.rows[row].total_ns += kernel.duration_ns;
    }
    return it->second;
  }

  int64_t RowOf(uint32_t group) const { return row_of_group_[group]; }

 private:
  using Key = std::tuple<std::string, uint64_t, uint32_t>;
  using KeyView = std::tuple<std::string_view, uint64_t, uint32_t>;
  // Keys and lookups compared alike as views, so that a lookup does not copy the name (a
  // tuple of string_view and one of string do not compare with each other in every library).
  struct KeyLess {
    using is_transparent = void;
    static KeyView View(const Key& k) { return {std::get<0>(k), std::get<1>(k), std::get<2>(k)}; }
    static const KeyView& View(const KeyView& v) { return v; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return View(a) < View(b); }
  };
  int64_t AddRow(const KernelEvent& kernel) {
    OccupancyRow row;
    row.name = std::string(kernel.name);
    row.device_id = kernel.device_id;
    if (kernel.launch) {
      row.launch = *kernel.launch;
      row.launch_known = true;
    }
    report_.rows.push_back(std::move(row));
    acc_.emplace_back().limit = ResidentWarpLimitOf(DeviceById(devices_, kernel.device_id),
                                                    kernel.launch);
    return static_cast<int64_t>(report_.rows.size()) - 1;
  }

  KernelNameFilter& filter_;
  std::span<const DeviceInfo> devices_;
  OccupancyReport& report_;
  std::vector<RowAccumulator>& acc_;
  std::map<Key, uint32_t, KeyLess> groups_;
  std::vector<int64_t> row_of_group_;  // -1: the filter leaves the group out
};

// Adds one launch's achieved occupancy (from its samples) to its row.
void AddLaunch(const SweptKernel& k, const SweptSamples& s, std::span<const DeviceInfo> devices,
               OccupancyRow& row, RowAccumulator& a) {
  const DeviceInfo* device = DeviceById(devices, k.device_id);
  // A device whose limits are out of range has no achieved figure either (it divides by
  // max warps per SM); the theoretical column's note below says why.
  if (device != nullptr && !DeviceLimitsProblem(*device).empty()) return;
  const uint32_t max_warps = device && device->max_warps_per_sm ? device->max_warps_per_sm : 64;
  KernelEvent kernel;
  kernel.start_ns = k.start_ns;
  kernel.duration_ns = k.duration_ns;
  kernel.device_id = k.device_id;
  AchievedOccupancy ach = ComputeAchievedOccupancy(kernel, s.overlaps, s.samples, s.attribution,
                                                   max_warps, a.limit.per_sm);
  row.samples += ach.samples;
  row.shared_samples += ach.shared_samples;
  if (!std::isnan(ach.achieved)) {
    ++row.achieved_launches;
    row.above_limit += ach.above_limit;
    if (ach.from_shared_samples) ++row.launches_from_shared;
    if (ach.time_weighted) row.time_weighted = true;
    a.Add(ach, k.duration_ns);
  } else if (k.duration_ns > a.longest_without ||
             (k.duration_ns == a.longest_without && k.index >= a.longest_without_index)) {
    a.longest_without = k.duration_ns;
    a.longest_without_index = k.index;
    row.achieved_reason = ach.reason;
  }
}

}  // namespace

absl::StatusOr<OccupancyReport> BuildOccupancyReport(const PmInputs& in,
                                                     const OccupancyReportOptions& options) {
  return BuildOccupancyReport(PmSourcesOf(in), options);
}

absl::StatusOr<OccupancyReport> BuildOccupancyReport(const PmSources& in,
                                                     const OccupancyReportOptions& options) {
  absl::StatusOr<KernelNameFilter> filter = KernelNameFilter::Create(options.kernel_regex);
  if (!filter.ok()) return filter.status();
  OccupancyReport report;
  report.pm_samples_unavailable = std::string(in.samples_unavailable);
  std::vector<RowAccumulator> acc;
  RowsByLaunch rows(*filter, in.devices, report, acc);
  PmSweepTotals totals;
  absl::Status swept = SweepPmSamples(
      in, [&](const KernelEvent& kernel) { return rows.GroupOf(kernel); },
      [&](const SweptKernel& k, const SweptSamples& s) {
        const int64_t row = rows.RowOf(k.group);
        if (row >= 0) AddLaunch(k, s, in.devices, report.rows[row], acc[row]);
      },
      &totals);
  if (!swept.ok()) return swept;
  report.has_pm_samples = totals.used_samples > 0;

  for (size_t i = 0; i < report.rows.size(); ++i) {
    FillTheoretical(in.devices, report.rows[i]);  // the ceiling of the achieved bounds
    FinishAchieved(acc[i], report.rows[i]);
    OccupancyRow& row = report.rows[i];
    if (row.total_ns > 0) row.covered_time_fraction = acc[i].covered_ns / row.total_ns;
    if (!std::isnan(row.achieved)) {
      row.coverage_note =
          LowCoverageNote("PM", row.achieved_launches, row.launches, row.covered_time_fraction);
    }
  }
  std::stable_sort(
      report.rows.begin(), report.rows.end(),
      [](const OccupancyRow& a, const OccupancyRow& b) { return a.total_ns > b.total_ns; });
  if (options.top > 0 && report.rows.size() > static_cast<size_t>(options.top)) {
    report.rows.resize(options.top);
  }
  return report;
}

namespace {

// The report's rows as a table: for people (`text`: short names, durations, footnote marks
// into `footnotes`) or for machines (ns, notes and advice in cells).
Table RowsTable(const OccupancyReport& report, bool text, std::vector<std::string>& footnotes,
                bool& any_from_shared) {
  Table table(OccupancyColumns(text));
  for (const OccupancyRow& row : report.rows) {
    // Cells are built in place: moving one in makes GCC 12 warn falsely (-Wmaybe-uninitialized).
    std::vector<Cell> cells;
    cells.emplace_back(report.names.Show(row.name, text));
    AppendLaunchCells(row, text, cells);
    AppendFigureCells(row, text, cells);
    // AppendFigureCells marked the achieved figure "*": the footnote below explains it.
    if (text && row.launches_from_shared > 0 && !std::isnan(row.achieved)) any_from_shared = true;
    AppendNoteCells(row, text, footnotes, cells);
    table.AddRow(std::move(cells));
  }
  return table;
}

}  // namespace

namespace {

// What the text form says after its table: what the achieved figures need and mean, and the
// footnotes its cells point to.
std::vector<std::string> TextAfterTable(const OccupancyReport& report, bool any_from_shared,
                                        const std::vector<std::string>& footnotes) {
  std::vector<std::string> after;
  if (!report.has_pm_samples && !report.pm_samples_unavailable.empty()) {
    after = {"", absl::StrCat("achieved occupancy needs PM samples, and ",
                              report.pm_samples_unavailable)};
  } else if (!report.has_pm_samples) {
    after = {"",
             "achieved occupancy needs PM samples: record with `warpscope record --pm-sampling`"};
  }
  if (report.has_pm_samples) {
    after.insert(after.end(),
                 {"",
                  "achieved_pct: warps per active SM cycle (Nsight Compute's "
                  "sm__warps_active.avg.pct_of_peak_sustained_active); achieved_elapsed_pct: per "
                  "elapsed cycle,",
                  "idle SMs counted empty (..._elapsed); low/high: where achieved_pct lies "
                  "whatever the time without a PM sample of its own held"});
  }
  if (any_from_shared) {
    after.insert(after.end(), {"",
                               "* measured only on PM samples shared with other kernels: "
                               "includes their warps"});
  }
  if (!footnotes.empty()) after.emplace_back();
  for (size_t i = 0; i < footnotes.size(); ++i) {
    after.push_back(absl::StrCat("[", i + 1, "] ", footnotes[i]));
  }
  return after;
}

}  // namespace

Report OccupancyReportTables(const OccupancyReport& report) {
  std::vector<std::string> footnotes;
  bool any_from_shared = false;
  Report out;
  out.tables.emplace_back("occupancy", RowsTable(report, false, footnotes, any_from_shared));
  if (report.rows.empty()) {
    out.text = {"warpscope: no kernels match"};
    out.text_blocks.emplace_back();  // no table in the text form
    return out;
  }
  footnotes.clear();
  TextBlock block;
  block.table = RowsTable(report, true, footnotes, any_from_shared);
  block.after = TextAfterTable(report, any_from_shared, footnotes);
  out.text_blocks.push_back(std::move(block));
  return out;
}

}  // namespace warpscope
