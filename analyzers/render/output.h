// Output renderers shared by every analysis command: a Table that prints as an aligned text
// table, CSV (RFC 4180) or JSON (an array of objects with typed values), and a small
// streaming JsonWriter for nested reports.
#ifndef WARPSCOPE_ANALYZERS_RENDER_OUTPUT_H_
#define WARPSCOPE_ANALYZERS_RENDER_OUTPUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"

namespace warpscope {

enum class OutputFormat { kTable, kCsv, kJson };

// Parses "table" | "text" | "csv" | "json".
absl::StatusOr<OutputFormat> ParseOutputFormat(std::string_view name);

// One cell: empty (null in JSON), text, integer, real number shown with `precision` digits
// after the point in tables and CSV (JSON keeps full precision), or true/false (Cell::Bool).
struct Cell {
  std::variant<std::monostate, std::string, int64_t, double, bool> value;
  int precision = 2;

  Cell() = default;
  Cell(std::string v) : value(std::move(v)) {}           // NOLINT: implicit by design
  Cell(const char* v) : value(std::string(v)) {}         // NOLINT
  Cell(int64_t v) : value(v) {}                          // NOLINT
  Cell(int v) : value(static_cast<int64_t>(v)) {}        // NOLINT
  Cell(uint64_t v) : value(static_cast<int64_t>(v)) {}   // NOLINT
  Cell(uint32_t v) : value(static_cast<int64_t>(v)) {}   // NOLINT
  Cell(double v, int digits = 2) : value(v), precision(digits) {}  // NOLINT
  static Cell Bool(bool v) {
    Cell c;
    c.value = v;
    return c;
  }
};

class JsonWriter;

// What a column holds, declared with the column: readers need a type before they see a row
// (Python's DataFrames of an empty table), and the CSV and JSON writers write each cell as its
// column's kind. kUint64: whole numbers that use all 64 bits (checksums, addresses), kept in
// the cell's int64 as their bit pattern and written unsigned.
enum class CellKind { kString, kInt, kUint64, kReal, kBool };

// The kind a cell's value is (an empty cell: kString); for values that are their own
// declaration, such as a report's scalars.
CellKind KindOfCell(const Cell& cell);

class Table {
 public:
  struct Column {
    // Every column says what it holds: there is no default kind.
    Column(std::string name_, bool align_right_, CellKind kind_)
        : name(std::move(name_)), align_right(align_right_), kind(kind_) {}
    std::string name;        // header in tables, key in JSON and CSV
    bool align_right = false;
    CellKind kind;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void AddRow(std::vector<Cell> row);  // row.size() must equal the column count
  size_t num_rows() const { return rows_.size(); }
  const std::vector<Column>& columns() const { return columns_; }
  const std::vector<std::vector<Cell>>& rows() const { return rows_; }

  std::string Render(OutputFormat format) const;
  std::string RenderText() const;
  std::string RenderCsv() const;
  std::string RenderJson() const;  // [{"col": value, ...}, ...]
  void WriteJson(JsonWriter& json) const;  // the same array, as the writer's next value

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

// Formats a cell of a column of `kind` as text (tables and CSV).
std::string CellText(const Cell& cell, CellKind kind);

// A fraction as a percent cell: one decimal in tables, rounded to 0.01 in CSV/JSON so goldens
// stay stable; NaN is an empty cell.
Cell PercentCell(double fraction);

// Kernel names in text tables (`text`), cut to 80 columns with "...": C++ template names
// run to hundreds. CSV and JSON keep the whole name.
std::string ShortKernelName(std::string_view name, bool text);

// The last component of a path ("/home/me/train.py" -> "train.py"); `path` when it has no '/'.
std::string PathBaseName(std::string_view path);

// Columns `text` (UTF-8) takes on a terminal: one per code point, two for East Asian wide and
// fullwidth characters, none for combining marks. Bytes that are not UTF-8 count one each.
size_t DisplayWidth(std::string_view text);
// `text` cut on a character boundary to at most `max_width` columns, ending in "..." when cut.
std::string TruncateToWidth(std::string_view text, size_t max_width);

// Human-readable duration from ns: "812 ns", "3.41 us", "12.0 ms", "4.20 s".
std::string FormatDuration(double ns);
// Human-readable size: "512 B", "1.50 KiB", "3.2 MiB", "1.1 GiB".
std::string FormatBytes(double bytes);

// Escapes a string for a JSON string literal (without the quotes).
std::string JsonEscape(std::string_view s);

// How a JsonWriter spaces its output. kSpaced writes `"key": value, "next": ...`, as Python's
// json.dumps and PyTorch's profiler do: some readers of those files search the text for
// `"key": value` rather than parse it.
enum class JsonSpacing { kCompact, kSpaced };

// Streaming JSON builder: commas and nesting are handled; keys only inside objects.
class JsonWriter {
 public:
  explicit JsonWriter(JsonSpacing spacing = JsonSpacing::kCompact) : spacing_(spacing) {}
  // The next member or element starts on a new line (one event per line keeps large files
  // readable line by line).
  JsonWriter& LineBreak() {
    line_break_ = true;
    return *this;
  }
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value);  // NaN and infinities become null
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  JsonWriter& Raw(std::string_view json);  // an already-encoded value
  const std::string& str() const { return out_; }
  // The text written since the last call, moved out; what follows continues it (a writer that
  // streams a large document hands it on in pieces).
  std::string TakeText() { return std::exchange(out_, std::string()); }

 private:
  void BeforeValue();
  std::string out_;
  std::vector<bool> first_in_scope_;
  bool after_key_ = false;
  bool line_break_ = false;
  JsonSpacing spacing_;
};

// Writes a cell of a column of `kind` as a JSON value of that kind (null when empty): a kReal
// column's whole numbers as numbers, a kUint64 column's unsigned, a kString column's numbers as
// their text.
void WriteJsonCell(JsonWriter& json, const Cell& cell, CellKind kind);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_RENDER_OUTPUT_H_
