// Report: what an analysis returns, in one shape: a few named scalars, named typed tables and
// lines of prose for people. One renderer makes text, CSV and JSON of any report, and the
// Python extension hands its tables to pandas column by column (python/src).
#ifndef WARPSCOPE_ANALYZERS_RENDER_REPORT_H_
#define WARPSCOPE_ANALYZERS_RENDER_REPORT_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/render/output.h"

namespace warpscope {

// A part of a report's text form that a plain table cannot say: lines before it (a heading,
// a verdict), a table for people (durations as "1.20 ms", short names, footnote marks) and
// lines after it (what the columns mean, footnotes). Lines are written as given, each ending
// in a newline ("" is a blank line).
struct TextBlock {
  std::vector<std::string> before;
  std::optional<Table> table;
  std::vector<std::string> after;
};

struct Report {
  std::vector<std::pair<std::string, Cell>> scalars;  // e.g. {"ranks", 4}
  std::vector<std::pair<std::string, Table>> tables;  // in the order people read them
  // Prose for the text form, before the tables (a verdict, evidence); not in CSV or JSON,
  // where the scalars and tables carry the same figures.
  std::vector<std::string> text;
  // Footnotes: what limits the figures (samples lost, ranges cut by capture windows). The
  // text form ends with them; for CSV and JSON, which stay machine-readable, the CLI gives
  // them on stderr.
  std::vector<std::string> notes;
  // The tables the text form shows (the long ones stay for CSV, JSON and --table); empty: all.
  std::vector<std::string> text_tables;
  // When given, the text form is `text`, these blocks and the notes, in place of the tables
  // (which CSV, JSON, --table and Python keep): for analyses whose people's view differs
  // from the machines' (durations, marks, footnotes).
  std::vector<TextBlock> text_blocks;

  const Table* FindTable(std::string_view name) const;
  const Cell* FindScalar(std::string_view name) const;
};

// Text: the prose, then each table under its name (or the text blocks), then the notes
// ("note: ..."). CSV: the
// scalars (as table "scalars") and each table, each after a "# report: NAME" line; a report
// of one block is plain CSV. JSON: {"scalars": {...}, "NAME": [rows], ...}.
// `only`: render just that table (CSV and text: without the marker); an unknown name is an
// InvalidArgument error listing the tables.
absl::StatusOr<std::string> RenderReport(const Report& report, OutputFormat format,
                                         std::string_view only = "");

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_RENDER_REPORT_H_
