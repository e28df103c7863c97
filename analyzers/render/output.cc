// Table, CSV and JSON renderers shared by the analysis commands (see output.h).
#include "analyzers/render/output.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/settings/setting_error.h"

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

namespace {

// Decodes the UTF-8 sequence at s[*i] and moves *i past it; a byte that does not start a
// valid sequence is returned as itself (Latin-1), one byte long.
char32_t NextCodePoint(std::string_view s, size_t* i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(*i);
  size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3
                                                            : (lead >> 3) == 0x1E ? 4 : 0;
  if (length <= 1 || *i + length > s.size()) {
    ++*i;
    return lead;
  }
  char32_t cp = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(*i + k) & 0xC0) != 0x80) {
      ++*i;
      return lead;
    }
    cp = (cp << 6) | (byte(*i + k) & 0x3F);
  }
  *i += length;
  return cp;
}

// Columns a code point takes on a terminal, as wcwidth() has it for the common cases:
// combining marks and zero-width characters 0, East Asian wide and fullwidth characters (CJK,
// Hangul, kana, fullwidth forms, emoji) 2, everything else 1.
int CodePointWidth(char32_t cp) {
  if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x200B && cp <= 0x200F) || cp == 0xFEFF ||
      (cp >= 0xFE00 && cp <= 0xFE0F)) {
    return 0;
  }
  static constexpr std::pair<char32_t, char32_t> kWide[] = {
      {0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},
      {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
      {0xFE30, 0xFE4F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x1F300, 0x1F64F},
      {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD}};
  for (const auto& [first, last] : kWide) {
    if (cp >= first && cp <= last) return 2;
  }
  return 1;
}

}  // namespace

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) width += CodePointWidth(NextCodePoint(text, &i));
  return width;
}

std::string TruncateToWidth(std::string_view text, size_t max_width) {
  if (DisplayWidth(text) <= max_width) return std::string(text);
  constexpr std::string_view kEllipsis = "...";
  const size_t budget = max_width > kEllipsis.size() ? max_width - kEllipsis.size() : 0;
  size_t width = 0, end = 0;
  for (size_t i = 0; i < text.size();) {
    const int w = CodePointWidth(NextCodePoint(text, &i));
    if (width + w > budget) break;
    width += w;
    end = i;
  }
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

std::string PathBaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string ShortKernelName(std::string_view name, bool text) {
  constexpr size_t kMax = 80;
  if (!text) return std::string(name);
  return TruncateToWidth(name, kMax);
}

CellKind KindOfCell(const Cell& cell) {
  if (std::holds_alternative<int64_t>(cell.value)) return CellKind::kInt;
  if (std::holds_alternative<double>(cell.value)) return CellKind::kReal;
  if (std::holds_alternative<bool>(cell.value)) return CellKind::kBool;
  return CellKind::kString;
}

std::string CellText(const Cell& cell, CellKind kind) {
  if (const auto* s = std::get_if<std::string>(&cell.value)) return *s;
  if (const auto* b = std::get_if<bool>(&cell.value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&cell.value)) {
    return kind == CellKind::kUint64 ? absl::StrCat(static_cast<uint64_t>(*i)) : absl::StrCat(*i);
  }
  if (const auto* d = std::get_if<double>(&cell.value)) {
    if (std::isnan(*d)) return "";
    return absl::StrFormat("%.*f", cell.precision, *d);
  }
  return "";
}

namespace {

// A number cell's value as a double; nullopt for text, true/false and empty cells.
std::optional<double> NumberOf(const Cell& cell) {
  if (const auto* i = std::get_if<int64_t>(&cell.value)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&cell.value)) return *d;
  return std::nullopt;
}

}  // namespace

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
  // Widths in terminal columns, not bytes: names may hold any UTF-8.
  for (size_t c = 0; c < columns_.size(); ++c) width[c] = DisplayWidth(columns_[c].name);
  std::vector<std::vector<std::string>> text(rows_.size());
  for (size_t r = 0; r < rows_.size(); ++r) {
    for (size_t c = 0; c < columns_.size(); ++c) {
      text[r].push_back(CellText(rows_[r][c], columns_[c].kind));
      width[c] = std::max(width[c], DisplayWidth(text[r].back()));
    }
  }
  std::string out;
  auto append_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const size_t pad = width[c] - std::min(width[c], DisplayWidth(cells[c]));
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
        out += CsvField(CellText(row[c], columns_[c].kind));
      }
    }
    out += '\n';
  }
  return out;
}

std::string Table::RenderJson() const {
  JsonWriter json;
  WriteJson(json);
  return json.str() + "\n";
}

void Table::WriteJson(JsonWriter& json) const {
  json.BeginArray();
  for (const auto& row : rows_) {
    json.BeginObject();
    for (size_t c = 0; c < row.size(); ++c) {
      json.Key(columns_[c].name);
      WriteJsonCell(json, row[c], columns_[c].kind);
    }
    json.EndObject();
  }
  json.EndArray();
}

void WriteJsonCell(JsonWriter& json, const Cell& cell, CellKind kind) {
  if (std::holds_alternative<std::monostate>(cell.value)) {
    json.Null();
    return;
  }
  const std::optional<double> number = NumberOf(cell);
  switch (kind) {
    case CellKind::kString:
      if (number && std::isnan(*number)) {
        json.Null();
      } else {
        json.String(CellText(cell, kind));
      }
      return;
    case CellKind::kReal:  // whole numbers stay exact, past 2^53 too
    case CellKind::kInt:
    case CellKind::kUint64:
      if (const auto* i = std::get_if<int64_t>(&cell.value)) {
        if (kind == CellKind::kUint64) {
          json.Uint(static_cast<uint64_t>(*i));
        } else {
          json.Int(*i);
        }
        return;
      }
      break;
    case CellKind::kBool:
      break;
  }
  // A cell that is not of its column's kind (a whole-number column's NaN, a bool column's
  // text) keeps its own value: nothing is lost, and the kinds test (tests/cli) finds it.
  if (const auto* s = std::get_if<std::string>(&cell.value)) {
    json.String(*s);
  } else if (const auto* i = std::get_if<int64_t>(&cell.value)) {
    json.Int(*i);
  } else if (const auto* d = std::get_if<double>(&cell.value)) {
    json.Double(*d);
  } else if (const auto* b = std::get_if<bool>(&cell.value)) {
    json.Bool(*b);
  }
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

namespace {

// Appends `s` to `out` escaped as the inside of a JSON string; text with nothing to escape (most
// names) is appended in one piece, with no string in between.
void AppendJsonEscaped(std::string& out, std::string_view s) {
  size_t clean = 0;
  while (clean < s.size()) {
    const unsigned char ch = static_cast<unsigned char>(s[clean]);
    if (ch < 0x20 || ch == '"' || ch == '\\') break;
    ++clean;
  }
  out.append(s.data(), clean);
  if (clean < s.size()) out += JsonEscape(s.substr(clean));
}

}  // namespace

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
    const bool first = first_in_scope_.back();
    if (!first) out_ += ',';
    if (line_break_) {
      out_ += '\n';
    } else if (!first && spacing_ == JsonSpacing::kSpaced) {
      out_ += ' ';
    }
    first_in_scope_.back() = false;
  }
  line_break_ = false;
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
  out_ += '"';
  AppendJsonEscaped(out_, key);
  out_ += spacing_ == JsonSpacing::kSpaced ? "\": " : "\":";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  out_ += '"';
  AppendJsonEscaped(out_, value);
  out_ += '"';
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
