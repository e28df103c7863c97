// Renders the stall report (see stalls.h and docs/cli.md#stalls): per kernel, per PC or
// per source line as a table, CSV or JSON, the notes under it, and the SVG of warp states.
#include "analyzers/analyses/stalls.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/render/report.h"
#include "analyzers/render/svg.h"

namespace warpscope {
namespace {

// "pc_kernels.cu:41", or with the whole path.
std::string LineText(const SourceLocation& source, bool base_name) {
  return absl::StrCat(base_name ? PathBaseName(source.path) : source.path, ":", source.line);
}

// "1 PC", "3 PCs".
std::string Count(uint64_t n, absl::string_view noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

std::string PctText(double fraction) { return absl::StrFormat("%.1f%%", fraction * 100); }

// "long_scoreboard 64.0%, barrier 20.0%".
std::string ReasonList(const std::vector<StallShare>& reasons, size_t count) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < count && i < reasons.size(); ++i) {
    parts.push_back(absl::StrCat(reasons[i].state, " ", PctText(reasons[i].fraction)));
  }
  return absl::StrJoin(parts, ", ");
}

// "85.6% [84.0, 87.2]": a kernel share with its 95% interval.
std::string ShareWithInterval(const StallShare& r) {
  return absl::StrFormat("%.1f%% [%.1f, %.1f]", r.fraction * 100, r.low * 100, r.high * 100);
}

std::string HexPc(uint64_t pc) { return absl::StrFormat("0x%x", pc); }

// What a kernel's shares rest on: its launches, those PC sampling ran during, and the share of
// its time; empty where the traces have no launch of it.
void AppendCoverageCells(const StallKernelRow& row, std::vector<Cell>& cells) {
  const bool known = row.launches > 0;
  cells.emplace_back(known ? Cell(row.launches) : Cell());
  cells.emplace_back(known ? Cell(row.covered_launches) : Cell());
  cells.emplace_back(known ? PercentCell(row.covered_time_fraction) : Cell());
}

Cell CyclesCell(double cycles, bool text) {
  if (std::isnan(cycles)) return text ? Cell("n/a") : Cell();
  return Cell(cycles, 2);
}

}  // namespace

std::vector<std::string> StallReportNotes(const StallReport& report) {
  std::vector<std::string> notes;
  if (report.unknown_reason_samples > 0) {
    std::vector<std::string> names;
    for (uint32_t i : report.unknown_reasons) names.push_back(absl::StrCat("reason_", i));
    notes.push_back(absl::StrCat(report.unknown_reason_samples,
                                 " samples have a stall reason index the trace does not name (",
                                 absl::StrJoin(names, ", "), "); shown by index"));
  }
  if (report.dropped_samples > 0) {
    notes.push_back(absl::StrCat("CUPTI dropped ", report.dropped_samples,
                                 " samples (hardware buffer or decode could not keep up); "
                                 "shares are of the samples that arrived"));
  }
  if (report.buffer_full_batches > 0) {
    notes.push_back(absl::StrCat(report.buffer_full_batches,
                                 " reads found the hardware buffer full: raise "
                                 "WARPSCOPE_PC_BUFFER_MB or the period (docs/pc_sampling.md)"));
  }
  for (const std::string& label : report.traces_without_samples) {
    notes.push_back(absl::StrCat(label, " has no PC samples"));
  }
  for (const StallKernelRow& row : report.rows) {
    if (!row.too_few.empty()) {
      notes.push_back(absl::StrCat(report.names.Show(row.name, true), ": ", row.too_few));
    }
    if (!row.coverage_note.empty()) {
      notes.push_back(absl::StrCat(report.names.Show(row.name, true), ": ", row.coverage_note));
    }
  }
  if (report.source_mapped) {
    const SourceMapping& source = report.source;
    const bool listing = report.view != StallView::kKernel;
    if (source.failed > 0) {
      notes.push_back(absl::StrCat("no source line for ", Count(source.failed, "PC"), ": ",
                                   source.problem));
    }
    if (listing && source.without_line_info > 0) {
      notes.push_back(absl::StrCat(
          Count(source.without_line_info, "PC"),
          source.without_line_info == 1 ? " is" : " are",
          " in cubins without line information: build with nvcc -lineinfo to see source "
          "lines"));
    }
    if (listing && source.without_cubin > 0) {
      notes.push_back(absl::StrCat(
          Count(source.without_cubin, "PC"), source.without_cubin == 1 ? " has" : " have",
          " no cubin in the trace, so no source line (a cubin the writer dropped, or a trace "
          "without cubins)"));
    }
  }
  return notes;
}

namespace {

bool AnyLines(const StallReport& report) {
  for (const StallKernelRow& row : report.rows) {
    if (!row.lines.empty()) return true;
  }
  return false;
}

// A row per hot PC of each kernel, for people (the report's "pcs" table has a row per PC and
// warp state).
Table PcTextTable(const StallReport& report) {
  const bool source = report.source_mapped && AnyLines(report);
  std::vector<Table::Column> columns = {{"kernel", false, CellKind::kString},
                                        {"pc", true, CellKind::kString},
                                        {"samples", true, CellKind::kInt},
                                        {"kernel_pct", true, CellKind::kReal},
                                        {"top_reasons", false, CellKind::kString}};
  if (source) columns.insert(columns.begin() + 2, {"source", false, CellKind::kString});
  Table table(columns);
  for (const StallKernelRow& row : report.rows) {
    for (size_t i = 0; i < StallRowsShown(row.pcs.size(), report.top); ++i) {
      const PcHotspot& pc = row.pcs[i];
      std::vector<Cell> cells;
      cells.emplace_back(report.names.Show(row.name, true));
      cells.emplace_back(HexPc(pc.pc_offset));
      if (source) {
        cells.emplace_back(pc.source.line > 0 ? LineText(pc.source, true) : std::string());
      }
      cells.emplace_back(pc.samples);
      cells.emplace_back(PercentCell(pc.fraction));
      cells.emplace_back(ReasonList(pc.reasons, 3));
      table.AddRow(std::move(cells));
    }
  }
  return table;
}

// A row per hot line of each kernel, and one for the samples at PCs without a line: for
// people (`text`: base names, "file:line") or, typed, for the report's "lines" table.
Table LinesTable(const StallReport& report, bool text) {
  using K = CellKind;
  std::vector<Table::Column> columns = {{"kernel", false, K::kString},
                                        {"line", false, K::kString},
                                        {"samples", true, K::kInt},
                                        {"kernel_pct", true, K::kReal},
                                        {"pcs", true, K::kInt},
                                        {"top_reasons", false, K::kString},
                                        {"code", false, K::kString}};
  if (!text) {
    columns[1] = {"file", false, K::kString};
    columns.insert(columns.begin() + 2, {"line", true, K::kInt});
  }
  Table table(columns);
  for (const StallKernelRow& row : report.rows) {
    for (size_t i = 0; i < StallRowsShown(row.lines.size(), report.top); ++i) {
      const LineHotspot& line = row.lines[i];
      std::vector<Cell> cells;
      cells.emplace_back(report.names.Show(row.name, text));
      if (text) {
        cells.emplace_back(LineText(line.source, true));
      } else {
        cells.emplace_back(line.source.path);
        cells.emplace_back(static_cast<uint64_t>(line.source.line));
      }
      cells.emplace_back(line.samples);
      cells.emplace_back(PercentCell(line.fraction));
      cells.emplace_back(line.pcs);
      cells.emplace_back(ReasonList(line.reasons, 3));
      cells.emplace_back(line.code);
      table.AddRow(std::move(cells));
    }
    if (row.unlocated_samples > 0) {
      std::vector<Cell> cells;
      cells.emplace_back(report.names.Show(row.name, text));
      cells.emplace_back(text ? "(no source line)" : "");
      if (!text) cells.emplace_back();
      cells.emplace_back(row.unlocated_samples);
      cells.emplace_back(PercentCell(row.samples > 0 ? static_cast<double>(row.unlocated_samples) /
                                                           static_cast<double>(row.samples)
                                                     : 0.0));
      uint64_t pcs = 0;
      for (const PcHotspot& pc : row.pcs) pcs += pc.source.line == 0 ? 1 : 0;
      cells.emplace_back(pcs);
      cells.emplace_back("");
      cells.emplace_back("");
      table.AddRow(std::move(cells));
    }
  }
  return table;
}

// A table of kernels, then each kernel's reasons with what they mean and what the interval
// after a share is.
TextBlock KernelTextBlock(const StallReport& report) {
  const bool lines = AnyLines(report);
  std::vector<Table::Column> columns = {{"kernel", false, CellKind::kString},
                                        {"samples", true, CellKind::kInt},
                                        {"pct", true, CellKind::kReal},
                                        {"cycles_per_issue", true, CellKind::kReal},
                                        {"not_issued_pct", true, CellKind::kReal},
                                        {"launches", true, CellKind::kInt},
                                        {"covered_launches", true, CellKind::kInt},
                                        {"covered_time_pct", true, CellKind::kReal},
                                        {"top_reasons", false, CellKind::kString}};
  if (lines) columns.push_back({"hottest_line", false, CellKind::kString});
  Table table(columns);
  for (const StallKernelRow& row : report.rows) {
    std::vector<Cell> cells;
    cells.emplace_back(report.names.Show(row.name, true));
    cells.emplace_back(row.samples);
    cells.emplace_back(PercentCell(row.fraction));
    cells.emplace_back(CyclesCell(row.cycles_per_issue, true));
    cells.emplace_back(row.samples > 0 ? PercentCell(static_cast<double>(row.not_issued) /
                                                 static_cast<double>(row.samples))
                                       : Cell());
    AppendCoverageCells(row, cells);
    cells.emplace_back(ReasonList(row.reasons, StallRowsShown(row.reasons.size(), report.top)));
    if (lines) {
      cells.emplace_back(row.lines.empty()
                             ? std::string()
                             : absl::StrCat(LineText(row.lines.front().source, true), " ",
                                            PctText(row.lines.front().fraction)));
    }
    table.AddRow(std::move(cells));
  }
  TextBlock block;
  block.table = std::move(table);
  for (const StallKernelRow& row : report.rows) {
    block.after.insert(block.after.end(), {"", report.names.Show(row.name, false)});
    for (size_t i = 0; i < StallRowsShown(row.reasons.size(), report.top); ++i) {
      const StallShare& r = row.reasons[i];
      std::string_view advice = StallReasonAdvice(r.state);
      block.after.push_back(absl::StrFormat(
          "  %-20s %-20s  %s", r.state, ShareWithInterval(r),
          advice.empty() ? "no description for this reason" : advice));
    }
  }
  // What the bracket means, where it is printed: it is easily read as the whole error.
  block.after.insert(block.after.end(),
                     {"", "note: [low, high] after a share is its 95% interval for sampling "
                          "error alone; PC sampling and Nsight Compute can also differ by how "
                          "they split a wait between states (mio_throttle and short_scoreboard: "
                          "8 points seen), which it does not cover (docs/stalls.md)"});
  return block;
}

// The text form: by kernel, PC or line; the notes follow it (Report::notes).
void AddStallText(const StallReport& report, Report& out) {
  if (report.rows.empty()) {
    out.text = {"warpscope: no kernels with PC samples match"};
    out.text_blocks.emplace_back();  // no table in the text form
    return;
  }
  TextBlock block;
  if (report.view == StallView::kPc) {
    block.table = PcTextTable(report);
  } else if (report.view == StallView::kLine) {
    block.table = LinesTable(report, true);
  } else {
    block = KernelTextBlock(report);
  }
  out.text_blocks.push_back(std::move(block));
}

}  // namespace

std::string RenderStallSvg(const StallReport& report) {
  // A colour per warp state (its place in KnownWarpStates), so a reason looks the same in every
  // bar; states the table does not know are grey.
  static constexpr std::string_view kColours[] = {"#d62728", "#1f77b4", "#ff7f0e", "#2ca02c",
                                                  "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                                  "#bcbd22", "#7f7f7f"};
  const auto colour = [](std::string_view state) -> std::string_view {
    static const std::vector<std::string_view> known = KnownWarpStates();
    for (size_t i = 0; i < known.size(); ++i) {
      if (known[i] == state) return kColours[i % std::size(kColours)];
    }
    return "#555555";
  };
  constexpr double kWidth = 880, kLeft = 16, kBarWidth = 848, kBarHeight = 26, kRowHeight = 64;
  const size_t shown_reasons = StallRowsShown(8, report.top);
  const double height = 48 + kRowHeight * static_cast<double>(report.rows.size()) + 16;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"24\" font-size=\"15\">Warp states of PC samples per kernel</text>\n",
      kWidth, height, kLeft);
  double y = 48;
  for (const StallKernelRow& row : report.rows) {
    absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\">%s (%d samples)</text>\n", kLeft,
                          y + 12, SvgEscape(report.names.Show(row.name, false)), row.samples);
    double x = kLeft;
    const double bar_y = y + 18;
    double rest = 1.0;
    for (size_t i = 0; i < StallRowsShown(row.reasons.size(), static_cast<int>(shown_reasons));
         ++i) {
      const StallShare& r = row.reasons[i];
      const double w = r.fraction * kBarWidth;
      rest -= r.fraction;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" "
                            "fill=\"%s\"><title>%s %s</title></rect>\n",
                            x, bar_y, w, kBarHeight, colour(r.state),
                            SvgEscape(r.state), PctText(r.fraction));
      if (w > 90) {
        absl::StrAppendFormat(&svg,
                              "<text x=\"%.1f\" y=\"%.0f\" fill=\"white\">%s %s</text>\n",
                              x + 4, bar_y + 17, SvgEscape(r.state), PctText(r.fraction));
      }
      x += w;
    }
    if (rest > 1e-9 && row.samples > 0) {
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" "
                            "fill=\"#bbbbbb\"><title>other %s</title></rect>\n",
                            x, bar_y, rest * kBarWidth, kBarHeight, PctText(rest));
    }
    y += kRowHeight;
  }
  svg += "</svg>\n";
  return svg;
}

Report StallReportTables(const StallReport& report, bool by_pc) {
  using K = CellKind;
  Table kernels({{"kernel", false, K::kString},
                 {"samples", true, K::kInt},
                 {"pct", true, K::kReal},
                 {"selected", true, K::kInt},
                 {"not_issued", true, K::kInt},
                 {"cycles_per_issue", true, K::kReal},
                 {"sampling_instants", true, K::kReal},
                 {"too_few", false, K::kString},
                 {"launches", true, K::kInt},
                 {"covered_launches", true, K::kInt},
                 {"covered_time_pct", true, K::kReal},
                 {"low_coverage", false, K::kString},
                 {"hottest_line", false, K::kString}});
  Table reasons({{"kernel", false, K::kString},
                 {"reason", false, K::kString},
                 {"samples", true, K::kInt},
                 {"pct", true, K::kReal},
                 {"low_pct", true, K::kReal},
                 {"high_pct", true, K::kReal}});
  Table pcs({{"kernel", false, K::kString},
             {"cubin_crc", true, K::kUint64},
             {"pc_offset", true, K::kInt},
             {"source", false, K::kString},
             {"pc_samples", true, K::kInt},
             {"kernel_pct", true, K::kReal},
             {"reason", false, K::kString},
             {"samples", true, K::kInt},
             {"pct", true, K::kReal}});
  for (const StallKernelRow& row : report.rows) {
    const std::string name = report.names.Show(row.name, false);
    const bool known = row.launches > 0;
    kernels.AddRow({name, row.samples, Cell(100 * row.fraction), row.selected, row.not_issued,
                    Cell(row.cycles_per_issue), Cell(row.sampling_instants), row.too_few,
                    known ? Cell(row.launches) : Cell(),
                    known ? Cell(row.covered_launches) : Cell(),
                    known ? Cell(100 * row.covered_time_fraction) : Cell(), row.coverage_note,
                    row.lines.empty() ? std::string()
                                      : LineText(row.lines.front().source, false)});
    for (size_t i = 0; i < StallRowsShown(row.reasons.size(), report.top); ++i) {
      const StallShare& s = row.reasons[i];
      reasons.AddRow({name, s.state, s.samples, Cell(100 * s.fraction), Cell(100 * s.low),
                      Cell(100 * s.high)});
    }
    for (size_t i = 0; i < StallRowsShown(row.pcs.size(), report.top); ++i) {
      const PcHotspot& pc = row.pcs[i];
      const std::string source = pc.source.line > 0 ? LineText(pc.source, false) : "";
      for (const StallShare& s : pc.reasons) {
        pcs.AddRow({name, pc.cubin_crc, pc.pc_offset, source, pc.samples,
                    Cell(100 * pc.fraction), s.state, s.samples, Cell(100 * s.fraction)});
      }
    }
  }
  Report out;
  out.scalars = {{"samples", report.samples},
                 {"dropped_samples", report.dropped_samples},
                 {"buffer_full_batches", report.buffer_full_batches},
                 {"unknown_reason_samples", report.unknown_reason_samples}};
  out.tables.emplace_back("kernels", std::move(kernels));
  if (by_pc) {
    out.tables.emplace_back("pcs", std::move(pcs));
  } else {
    out.tables.emplace_back("reasons", std::move(reasons));
  }
  if (report.view == StallView::kLine) out.tables.emplace_back("lines", LinesTable(report, false));
  out.notes = StallReportNotes(report);
  AddStallText(report, out);
  return out;
}

}  // namespace warpscope
