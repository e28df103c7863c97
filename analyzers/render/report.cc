// Rendering of a Report (see report.h).
#include "analyzers/render/report.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace warpscope {
namespace {

Table ScalarTable(const Report& report) {
  std::vector<Table::Column> columns;
  std::vector<Cell> row;
  for (const auto& [name, value] : report.scalars) {
    columns.push_back({name, false, KindOfCell(value)});
    row.push_back(value);
  }
  Table t(std::move(columns));
  t.AddRow(std::move(row));
  return t;
}

// The text form: the prose, the tables under their names (or the text blocks), the notes.
std::string RenderText(const Report& report) {
  std::string out;
  for (const std::string& line : report.text) absl::StrAppend(&out, line, "\n");
  for (const TextBlock& block : report.text_blocks) {
    for (const std::string& line : block.before) absl::StrAppend(&out, line, "\n");
    if (block.table) out += block.table->RenderText();
    for (const std::string& line : block.after) absl::StrAppend(&out, line, "\n");
  }
  for (const auto& [name, table] : report.tables) {
    const bool shown = report.text_blocks.empty() &&
                       (report.text_tables.empty() ||
                        std::find(report.text_tables.begin(), report.text_tables.end(), name) !=
                            report.text_tables.end());
    if (table.num_rows() == 0 || !shown) continue;
    absl::StrAppend(&out, out.empty() ? "" : "\n", "-- ", name, " --\n", table.RenderText());
  }
  for (const std::string& note : report.notes) absl::StrAppend(&out, "\nnote: ", note, "\n");
  return out;
}

}  // namespace

const Table* Report::FindTable(std::string_view name) const {
  for (const auto& [n, t] : tables) {
    if (n == name) return &t;
  }
  return nullptr;
}

const Cell* Report::FindScalar(std::string_view name) const {
  for (const auto& [n, c] : scalars) {
    if (n == name) return &c;
  }
  return nullptr;
}

absl::StatusOr<std::string> RenderReport(const Report& report, OutputFormat format,
                                         std::string_view only) {
  if (!only.empty()) {
    const Table* t = only == "scalars" ? nullptr : report.FindTable(only);
    Table scalars = ScalarTable(report);
    if (only == "scalars") t = &scalars;
    if (t == nullptr) {
      std::vector<std::string> names = {"scalars"};
      for (const auto& [n, table] : report.tables) names.push_back(n);
      return absl::InvalidArgumentError(absl::StrCat("no table named '", std::string(only),
                                                     "'; this report has ",
                                                     absl::StrJoin(names, ", ")));
    }
    return t->Render(format);
  }
  std::string out;
  switch (format) {
    case OutputFormat::kTable:
      return RenderText(report);
    case OutputFormat::kCsv: {
      // One block stays plain CSV; several are each marked, so that they can be split.
      const Table scalars = ScalarTable(report);
      std::vector<std::pair<std::string, const Table*>> blocks;
      if (!report.scalars.empty()) blocks.emplace_back("scalars", &scalars);
      for (const auto& [name, table] : report.tables) blocks.emplace_back(name, &table);
      if (blocks.size() == 1) return blocks.front().second->RenderCsv();
      for (const auto& [name, table] : blocks) {
        absl::StrAppend(&out, out.empty() ? "" : "\n", "# report: ", name, "\n",
                        table->RenderCsv());
      }
      return out;
    }
    case OutputFormat::kJson: {
      JsonWriter json;
      json.BeginObject().Key("scalars").BeginObject();
      for (const auto& [name, value] : report.scalars)
        WriteJsonCell(json.Key(name), value, KindOfCell(value));
      json.EndObject();
      for (const auto& [name, table] : report.tables) {
        table.WriteJson(json.Key(name));
      }
      json.EndObject();
      return json.str() + "\n";
    }
  }
  return out;
}

}  // namespace warpscope
