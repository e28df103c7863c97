// Builds and renders the comparison of two traces (diff.h, docs/diff.md).
#include "analyzers/analyses/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "analyzers/analyses/nvtx_projection.h"
#include "analyzers/analyses/summary.h"

namespace warpscope {
namespace {

// The instances of one NVTX range (all threads) and the GPU time of the work they launched.
struct RangeWork {
  uint64_t count = 0;
  uint64_t gpu_ns = 0;
};

// What one trace contributes to the comparison.
struct Side {
  std::map<std::string, DurationStats> kernels;  // by name; medians as `summary` computes them
  std::map<std::string, DurationStats> memory;
  std::map<std::string, RangeWork> ranges;
  uint64_t gpu_busy_ns = 0, kernel_ns = 0, memory_ns = 0, span_ns = 0;
};

std::map<std::string, DurationStats> StatsByName(
    std::map<std::string, std::vector<uint64_t>>& durations) {
  std::map<std::string, DurationStats> out;
  for (auto& [name, ns] : durations) out[name] = DurationStats::Of(ns);
  return out;
}

Side Collect(const TraceModel& model) {
  Side side;
  std::map<std::string, std::vector<uint64_t>> kernels, memory;
  for (const KernelEvent& k : model.kernels) {
    kernels[KernelDisplayName(k)].push_back(k.duration_ns);
    side.kernel_ns += k.duration_ns;
  }
  for (const MemcpyEvent& c : model.memcpys) {
    memory[MemcpyOperationName(c.copy_kind)].push_back(c.duration_ns);
    side.memory_ns += c.duration_ns;
  }
  for (const MemsetEvent& s : model.memsets) {
    memory[std::string(kMemsetOperationName)].push_back(s.duration_ns);
    side.memory_ns += s.duration_ns;
  }
  side.kernels = StatsByName(kernels);
  side.memory = StatsByName(memory);
  for (const NvtxRangeGroup& g : ProjectNvtxRanges(model).groups) {
    RangeWork& r = side.ranges[g.domain.empty() ? g.path : absl::StrCat(g.domain, ":", g.path)];
    r.count += g.cpu_durations_ns.size();
    r.gpu_ns += g.gpu_time_ns;
  }
  SummaryOptions busy_only;
  busy_only.kernels = busy_only.api = busy_only.memory = busy_only.nvtx = false;
  for (const DeviceSummary& d : SummarizeTrace(model, "", busy_only).devices) {
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

std::string SignedDuration(double ns) {
  return absl::StrCat(ns < 0 ? "-" : "+", FormatDuration(std::fabs(ns)));
}

std::string ChangeText(const DiffRow& row) {
  if (row.base_ns <= 0) return row.new_ns > 0 ? "new" : "";
  return absl::StrFormat("%+.1f%%", row.delta_fraction * 100);
}

std::string_view ComparedName(const DiffRow& row) {
  if (!row.per_instance) return "total";
  return row.section == DiffSection::kNvtx ? "mean" : "median";
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
    case DiffSection::kMemory:
      return "memory";
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

DiffReport BuildDiffReport(const TraceModel& base, const TraceModel& next,
                           std::string base_label, std::string new_label,
                           const DiffOptions& options) {
  DiffReport report;
  report.base_label = std::move(base_label);
  report.new_label = std::move(new_label);
  report.options = options;
  Side b = Collect(base), n = Collect(next);
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

std::string RenderDiffReport(const DiffReport& report, OutputFormat format) {
  const bool text = format == OutputFormat::kTable;
  std::vector<Table::Column> columns;
  if (text) {
    columns = {{"section"}, {"name"},         {"count", true},  {"compared"},
               {"base", true}, {"new", true}, {"change", true}, {"impact", true},
               {"verdict"}};
  } else {
    columns = {{"section"},         {"name"},          {"base_count", true}, {"new_count", true},
               {"compared"},        {"base_ns", true}, {"new_ns", true},     {"delta_ns", true},
               {"change_pct", true}, {"impact_ns", true}, {"base_total_ns", true},
               {"new_total_ns", true}, {"verdict"}};
  }
  Table table(columns);
  for (const std::vector<DiffRow>* rows : {&report.totals, &report.rows}) {
    for (const DiffRow& row : *rows) {
      std::vector<Cell> cells;
      cells.emplace_back(std::string(DiffSectionName(row.section)));
      cells.emplace_back(text ? ShortKernelName(row.name, true) : row.name);
      if (text) {
        cells.emplace_back(row.section == DiffSection::kTotal
                               ? std::string()
                               : absl::StrCat(row.base_count, " -> ", row.new_count));
        cells.emplace_back(std::string(ComparedName(row)));
        cells.emplace_back(FormatDuration(row.base_ns));
        cells.emplace_back(FormatDuration(row.new_ns));
        cells.emplace_back(ChangeText(row));
        cells.emplace_back(SignedDuration(row.impact_ns));
      } else {
        cells.emplace_back(row.base_count);
        cells.emplace_back(row.new_count);
        cells.emplace_back(std::string(ComparedName(row)));
        cells.emplace_back(row.base_ns, 1);
        cells.emplace_back(row.new_ns, 1);
        cells.emplace_back(row.delta_ns, 1);
        if (row.base_ns > 0) {
          cells.emplace_back(row.delta_fraction * 100, 2);
        } else {
          cells.emplace_back();
        }
        cells.emplace_back(row.impact_ns, 1);
        cells.emplace_back(row.base_total_ns);
        cells.emplace_back(row.new_total_ns);
      }
      cells.emplace_back(std::string(DiffVerdictName(row.verdict)));
      table.AddRow(std::move(cells));
    }
  }
  if (!text) return table.Render(format);
  std::string out = absl::StrCat("base: ", report.base_label, "\nnew:  ", report.new_label,
                                 "\n\n", table.RenderText());
  absl::StrAppendFormat(&out,
                        "\n%d regression(s), %d improvement(s): changes above %.1f%% and %s "
                        "of impact; per instance (median) for rows with >= %d instances on "
                        "both sides\n",
                        report.regressions, report.improvements, report.options.threshold * 100,
                        FormatDuration(report.options.min_delta_ns), report.options.min_instances);
  return out;
}

}  // namespace warpscope
