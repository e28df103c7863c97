// Builds and renders the tail report (see tail.h and docs/tail.md).
#include "analyzers/analyses/tail.h"

#include <cmath>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analyzers/measures/kernel_name_filter.h"
#include "analyzers/measures/active_warps_svg.h"
#include "analyzers/model/trace_limits.h"

namespace warpscope {
namespace {

// Text tables show durations for people; CSV and JSON carry plain nanoseconds.
Cell Duration(double ns, bool text) {
  return text ? Cell(FormatDuration(ns)) : Cell(static_cast<int64_t>(std::llround(ns)));
}

// Steady and peak in text tables, with "*" when they rest on samples shared with other
// kernels (a footnote explains it); plain numbers in CSV/JSON, where a field says so.
Cell Level(double warps, bool text, bool from_shared) {
  if (text && from_shared) return Cell(absl::StrCat(std::llround(warps), "*"));
  return Cell(std::round(warps), 0);
}

// The limit the curve was capped at; empty when none is known.
Cell Limit(double warps) { return warps > 0 ? Cell(std::round(warps), 0) : Cell(); }

Table SummaryTable(const TailReport& report, const KernelNames& names, bool text) {
  const CellKind time = text ? CellKind::kString : CellKind::kInt;  // "1.20 ms" or ns
  Table t({{"order", true, CellKind::kInt},
           {"kernel", false, CellKind::kString},
           {"launches", true, CellKind::kInt},
           {"with_curve", true, CellKind::kInt},
           {"covered_time_pct", true, CellKind::kReal},
           {text ? "total_time" : "total_ns", true, time},
           {text ? "tail_cost" : "tail_cost_ns", true, time},
           {"tail_cost_pct", true, CellKind::kReal},
           {"tail_pct", true, CellKind::kReal},
           {"tail_low_pct", true, CellKind::kReal},
           {"tail_high_pct", true, CellKind::kReal},
           {"below_50_pct", true, CellKind::kReal},
           {"below_25_pct", true, CellKind::kReal},
           {"steady_warps", true, CellKind::kReal},
           {"peak_warps", true, CellKind::kReal},
           {"limit_warps", true, CellKind::kReal},
           {"shared_samples", true, CellKind::kInt},
           {"above_limit", true, CellKind::kInt},
           {"levels_from_shared", true, CellKind::kInt},
           {"verdict", false, CellKind::kString}});
  int rank = 0;
  for (const KernelTailSummary& s : report.summaries) {
    const bool has = s.launches_with_curve > 0;
    const bool shared_levels = s.launches_levels_from_shared > 0;
    // Low coverage qualifies the verdict, and a missing one: no tail seen is not no tail.
    std::string verdict = s.verdict;
    if (!s.coverage_note.empty()) {
      verdict = verdict.empty() ? s.coverage_note : absl::StrCat(verdict, "; ", s.coverage_note);
    }
    if (text) verdict = verdict.empty() ? (has ? "-" : "n/a") : absl::StrCat("[", rank + 1, "]");
    t.AddRow({++rank, names.Show(s.name, text), s.launches, s.launches_with_curve,
              PercentCell(s.covered_fraction()), Duration(s.total_ns, text),
              has ? Duration(s.total_tail_cost_ns, text) : Cell(),
              has ? PercentCell(s.tail_cost_fraction) : Cell(),
              has ? PercentCell(s.tail_fraction) : Cell(),
              has ? PercentCell(s.tail_low) : Cell(), has ? PercentCell(s.tail_high) : Cell(),
              has ? PercentCell(s.below_50) : Cell(), has ? PercentCell(s.below_25) : Cell(),
              has ? Level(s.steady, text, shared_levels) : Cell(),
              has ? Level(s.peak, text, shared_levels) : Cell(), Limit(s.limit_warps),
              has ? Cell(s.shared_samples) : Cell(), has ? Cell(s.above_limit) : Cell(),
              has ? Cell(s.launches_levels_from_shared) : Cell(), verdict});
  }
  return t;
}

Table InstanceTable(const TailReport& report, const KernelNames& names, bool text) {
  const CellKind time = text ? CellKind::kString : CellKind::kInt;  // "1.20 ms" or ns
  Table t({{"kernel", false, CellKind::kString},
           {text ? "start_us" : "start_ns", true, text ? CellKind::kReal : CellKind::kInt},
           {text ? "duration" : "duration_ns", true, time},
           {"samples", true, CellKind::kInt},
           {"shared_samples", true, CellKind::kInt},
           {"steady_warps", true, CellKind::kReal},
           {"peak_warps", true, CellKind::kReal},
           {"mean_warps", true, CellKind::kReal},
           {"limit_warps", true, CellKind::kReal},
           {"above_limit", true, CellKind::kInt},
           {"tail_pct", true, CellKind::kReal},
           {"tail_low_pct", true, CellKind::kReal},
           {"tail_high_pct", true, CellKind::kReal},
           {"below_50_pct", true, CellKind::kReal},
           {"below_25_pct", true, CellKind::kReal},
           {text ? "drain" : "drain_ns", true, time},
           {text ? "tail_cost" : "tail_cost_ns", true, time},
           {text ? "tail" : "verdict", false, CellKind::kString},
           {"note", false, CellKind::kString}});
  for (const ActiveWarpCurve& c : report.curves) {
    const bool has = c.has_tail_metrics;
    const bool any = !c.segments.empty();
    Cell verdict = c.verdict;
    if (text) verdict = c.verdict.empty() ? "-" : "material";
    t.AddRow({names.Show(report.summaries[c.summary].name, text),
              text ? Cell(c.start_ns / 1e3, 3) : Cell(c.start_ns), Duration(c.duration_ns, text),
              c.samples, c.shared_samples,
              has ? Level(c.steady, text, c.levels_from_shared) : Cell(),
              any ? Level(c.peak, text, c.levels_from_shared) : Cell(),
              any ? Cell(std::round(c.mean), 0) : Cell(), Limit(c.limit_warps), c.above_limit,
              has ? PercentCell(c.tail_fraction) : Cell(),
              has ? PercentCell(c.tail_low) : Cell(), has ? PercentCell(c.tail_high) : Cell(),
              has ? PercentCell(c.below_50) : Cell(), has ? PercentCell(c.below_25) : Cell(),
              has ? Duration(c.drain_ns, text) : Cell(),
              has ? Duration(c.tail_cost_ns, text) : Cell(), verdict, c.note});
  }
  return t;
}

// With --instances, each launch's resampled curve: a row per point, its launch's row number in
// "instances" (from 0) and the mean active warps of its bin.
Table CurvesTable(const TailReport& report) {
  Table t({{"instance", true, CellKind::kInt},
           {"point", true, CellKind::kInt},
           {"time_fraction", true, CellKind::kReal},
           {"warps", true, CellKind::kReal}});
  for (size_t i = 0; i < report.curves.size(); ++i) {
    const std::vector<double>& points = report.curves[i].points;
    for (size_t p = 0; p < points.size(); ++p) {
      // Each point is the mean of an equal bin of normalised time: its middle.
      const double middle = (static_cast<double>(p) + 0.5) / static_cast<double>(points.size());
      t.AddRow({i, p, Cell(middle, 4), Cell(points[p], 1)});
    }
  }
  return t;
}

// The verdicts by rank, then why kernels have no tail metrics (the first few of them).
std::vector<std::string> VerdictNotes(const TailReport& report, const KernelNames& names) {
  std::vector<std::string> notes;
  int rank = 0;
  for (const KernelTailSummary& s : report.summaries) {
    ++rank;
    if (!s.verdict.empty()) {
      notes.push_back(absl::StrCat("[", rank, "] ", names.Show(s.name, true), ": ", s.verdict));
    }
    if (!s.too_few.empty()) {
      notes.push_back(absl::StrCat("[", rank, "] ", names.Show(s.name, true), ": ", s.too_few));
    }
    if (!s.coverage_note.empty()) {
      notes.push_back(
          absl::StrCat("[", rank, "] ", names.Show(s.name, true), ": ", s.coverage_note));
    }
  }
  // Notes say why a kernel has no tail metrics; a PyTorch trace has a hundred such kernels,
  // so the text table shows the first few (CSV and JSON carry every one).
  constexpr int kMaxNotes = 12;
  int shown = 0, hidden = 0;
  rank = 0;
  for (const KernelTailSummary& s : report.summaries) {
    ++rank;
    if (s.note.empty()) continue;
    if (shown == kMaxNotes) {
      ++hidden;
      continue;
    }
    ++shown;
    notes.push_back(absl::StrCat("(", rank, ") ", names.Show(s.name, true), ": ", s.note));
  }
  if (hidden > 0) {
    notes.push_back(absl::StrCat("... and ", hidden,
                                 " more kernels without tail metrics (each launch's reason: "
                                 "--instances)"));
  }
  return notes;
}

// The text form: the per-name table, verdicts and footnotes below it, then (with instances) the
// per-launch table.
void AddTailText(const TailReport& report, bool instances, const KernelNames& names,
                 Report& out) {
  if (!report.problem.empty()) out.text = {"warpscope: " + report.problem, ""};
  if (report.summaries.empty()) {
    out.text.push_back("warpscope: no kernels match");
    out.text_blocks.emplace_back();  // no table in the text form
    return;
  }
  TextBlock kernels;
  kernels.table = SummaryTable(report, names, true);
  std::vector<std::string> notes = VerdictNotes(report, names);
  if (!notes.empty()) kernels.after.emplace_back();
  kernels.after.insert(kernels.after.end(), notes.begin(), notes.end());
  bool shared_levels = false;
  for (const KernelTailSummary& s : report.summaries) {
    if (s.launches_levels_from_shared > 0) shared_levels = true;
  }
  for (const ActiveWarpCurve& c : report.curves) {
    if (instances && c.levels_from_shared && !c.segments.empty()) shared_levels = true;
  }
  if (shared_levels) {
    kernels.after.insert(kernels.after.end(),
                         {"", "* steady/peak of a launch without PM samples of its own: taken from "
                              "samples shared with other kernels, so they include those kernels' "
                              "warps"});
  }
  out.text_blocks.push_back(std::move(kernels));
  if (instances) {
    TextBlock launches;
    launches.before = {""};
    launches.table = InstanceTable(report, names, true);
    out.text_blocks.push_back(std::move(launches));
  }
}

}  // namespace

absl::StatusOr<TailReport> BuildTailReportFiltered(const PmSources& in,
                                                   const TailReportOptions& options) {
  if (options.tail.points < 2 || options.tail.points > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--points ", options.tail.points, " is out of range: use 2..10000"));
  }
  absl::StatusOr<KernelNameFilter> filter = KernelNameFilter::Create(options.kernel_regex);
  if (!filter.ok()) return filter.status();
  std::function<bool(std::string_view)> select;
  if (!filter->accepts_all()) select = [&](std::string_view name) { return filter->Matches(name); };
  TailReportBuilder builder(options.tail, options.instances, in.devices, select);
  PmSweepTotals totals;
  absl::Status swept = SweepPmSamples(
      in, [&](const KernelEvent& kernel) { return builder.AddLaunch(kernel); },
      [&](const SweptKernel& k, const SweptSamples& s) {
        if (k.group == TailReportBuilder::kNotSelected) return;
        KernelEvent kernel;
        kernel.start_ns = k.start_ns;
        kernel.duration_ns = k.duration_ns;
        kernel.device_id = k.device_id;
        builder.AddCurve(k.group, BuildActiveWarpCurve(k.index, kernel, s.overlaps, s.samples,
                                                       s.attribution, builder.LimitOf(k.group),
                                                       options.tail));
      },
      &totals);
  if (!swept.ok()) return swept;
  TailReport report = builder.Finish(MissingSamplesProblem(
      in.samples_unavailable, totals.used_samples > 0, totals.samples.has_gpu_warps));
  KeepTopKernels(options.top, report);
  return report;
}

absl::StatusOr<TailReport> BuildTailReportFiltered(const PmInputs& in,
                                                   const TailReportOptions& options) {
  return BuildTailReportFiltered(PmSourcesOf(in), options);
}

void KeepTopKernels(size_t top, TailReport& report) {
  if (top == 0 || report.summaries.size() <= top) return;
  report.summaries.resize(top);
  std::vector<ActiveWarpCurve> curves;
  for (size_t c = 0; c < report.curves.size(); ++c) {
    if (report.curves[c].summary >= top) continue;
    KernelTailSummary& s = report.summaries[report.curves[c].summary];
    if (s.launches_with_curve > 0 && s.worst_instance == c) {
      s.worst_instance = static_cast<uint32_t>(curves.size());
    }
    curves.push_back(std::move(report.curves[c]));
  }
  report.curves = std::move(curves);
}

Report TailReportTables(const TailReport& report, bool instances, const KernelNames& names) {
  Report out;
  out.scalars.emplace_back("problem", report.problem);
  out.tables.emplace_back("kernels", SummaryTable(report, names, false));
  if (instances) {
    out.tables.emplace_back("instances", InstanceTable(report, names, false));
    out.tables.emplace_back("curves", CurvesTable(report));
  }
  AddTailText(report, instances, names, out);
  return out;
}

const ActiveWarpCurve* CurveToDraw(const TailReport& report) {
  for (const KernelTailSummary& s : report.summaries) {
    if (s.launches_with_curve > 0) return &report.curves[s.worst_instance];
  }
  for (const ActiveWarpCurve& c : report.curves) {
    if (!c.segments.empty()) return &c;
  }
  return nullptr;
}

std::string TailSvg(const ActiveWarpCurve& curve, const TailReport& report,
                    std::span<const DeviceInfo> devices, const KernelNames& names) {
  double capacity = 0;
  for (const DeviceInfo& d : devices) {
    if (d.id == curve.device_id && DeviceLimitsProblem(d).empty()) {
      capacity = static_cast<double>(d.sm_count) * d.max_warps_per_sm;
    }
  }
  return RenderActiveWarpSvg(curve, names.Show(report.summaries[curve.summary].name, false),
                             capacity);
}

}  // namespace warpscope
