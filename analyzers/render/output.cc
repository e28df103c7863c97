// Table, CSV and JSON renderers shared by the analysis commands (see output.h).
#include "analyzers/render/output.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/common/setting_error.h"

namespace warpscope {

absl::StatusOr<OutputFormat> ParseOutputFormat(std::string_view name) {
  if (name == "table" || name == "text") return OutputFormat::kTable;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "json") return OutputFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown output format ", QuoteValue(name), ": use table, csv or json"));
}

Cell PercentCell(double fraction) {
  if (std::isnan(fraction)) return Cell();
  return Cell(std::round(fraction * 10000.0) / 100.0, 1);
}

std::string ShortKernelName(std::string_view name, bool text) {
  constexpr size_t kMax = 80;
  if (!text || name.size() <= kMax) return std::string(name);
  return std::string(name.substr(0, kMax - 3)) + "...";
}

std::string CellText(const Cell& cell) {
  if (const auto* s = std::get_if<std::string>(&cell.value)) return *s;
  if (const auto* i = std::get_if<int64_t>(&cell.value)) return absl::StrCat(*i);
  if (const auto* d = std::get_if<double>(&cell.value)) {
    if (std::isnan(*d)) return "";
    return absl::StrFormat("%.*f", cell.precision, *d);
  }
  return "";
}

void Table::AddRow(std::vector<Cell> row) {
  row.resize(columns_.size());
  rows_.push_back(std::move(row));
}

std::string Table::Render(OutputFormat format) const {
  switch (format) {
    case OutputFormat::kCsv:
      return RenderCsv();
    case OutputFormat::kJson:
      return RenderJson();
    case OutputFormat::kTable:
      break;
  }
  return RenderText();
}

std::string Table::RenderText() const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].name.size();
  std::vector<std::vector<std::string>> text(rows_.size());
  for (size_t r = 0; r < rows_.size(); ++r) {
    for (size_t c = 0; c < columns_.size(); ++c) {
      text[r].push_back(CellText(rows_[r][c]));
      width[c] = std::max(width[c], text[r].back().size());
    }
  }
  std::string out;
  auto append_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const size_t pad = width[c] - std::min(width[c], cells[c].size());
      if (columns_[c].align_right) line.append(pad, ' ');
      line += cells[c];
      if (!columns_[c].align_right && !last) line.append(pad, ' ');
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  std::vector<std::string> header;
  for (const Column& col : columns_) header.push_back(col.name);
  append_line(header);
  std::vector<std::string> rule;
  for (size_t c = 0; c < columns_.size(); ++c) rule.push_back(std::string(width[c], '-'));
  append_line(rule);
  for (const auto& row : text) append_line(row);
  return out;
}

namespace {
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
  return out;
}
}  // namespace

std::string Table::RenderCsv() const {
  std::string out;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (c) out += ',';
    out += CsvField(columns_[c].name);
  }
  out += '\n';
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c) out += ',';
      // CSV keeps full precision for reals: scripts should not inherit table rounding.
      if (const auto* d = std::get_if<double>(&row[c].value)) {
        if (!std::isnan(*d)) out += absl::StrFormat("%.9g", *d);
      } else {
        out += CsvField(CellText(row[c]));
      }
    }
    out += '\n';
  }
  return out;
}

std::string Table::RenderJson() const {
  JsonWriter json;
  json.BeginArray();
  for (const auto& row : rows_) {
    json.BeginObject();
    for (size_t c = 0; c < row.size(); ++c) {
      json.Key(columns_[c].name);
      const Cell& cell = row[c];
      if (const auto* s = std::get_if<std::string>(&cell.value)) {
        json.String(*s);
      } else if (const auto* i = std::get_if<int64_t>(&cell.value)) {
        json.Int(*i);
      } else if (const auto* d = std::get_if<double>(&cell.value)) {
        json.Double(*d);
      } else {
        json.Null();
      }
    }
    json.EndObject();
  }
  json.EndArray();
  return json.str() + "\n";
}

std::string FormatDuration(double ns) {
  const double a = std::fabs(ns);
  if (a < 1e3) return absl::StrFormat("%.0f ns", ns);
  if (a < 1e6) return absl::StrFormat("%.2f us", ns / 1e3);
  if (a < 1e9) return absl::StrFormat("%.2f ms", ns / 1e6);
  return absl::StrFormat("%.2f s", ns / 1e9);
}

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrFormat("%.0f B", bytes) : absl::StrFormat("%.2f %s", bytes, units[u]);
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20) {
          out += absl::StrFormat("\\u%04x", ch);
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out;
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_in_scope_.empty()) {
    if (!first_in_scope_.back()) out_ += ',';
    first_in_scope_.back() = false;
  }
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_ += '{';
  first_in_scope_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  out_ += '}';
  first_in_scope_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_ += '[';
  first_in_scope_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  out_ += ']';
  first_in_scope_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  absl::StrAppend(&out_, "\"", JsonEscape(key), "\":");
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  absl::StrAppend(&out_, "\"", JsonEscape(value), "\"");
  return *this;
}
JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
  return *this;
}
JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
  return *this;
}
JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  if (std::isfinite(value)) {
    // The shortest text that reads back as the same double: 84.21, not 84.209999999999994.
    // Whole numbers stay plain (100000, not 1e+05).
    char buffer[64];
    const std::to_chars_result r =
        value == std::trunc(value) && std::fabs(value) < 1e15
            ? std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed)
            : std::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, r.ptr);
  } else {
    out_ += "null";
  }
  return *this;
}
JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}
JsonWriter& JsonWriter::Raw(std::string_view json) {
  BeforeValue();
  out_ += json;
  return *this;
}

}  // namespace warpscope
