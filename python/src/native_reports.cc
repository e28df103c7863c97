// Reports for Python: any analysis' Report (scalars and typed tables) as columns, one Python
// list per column with its type, which python/warpscope/native.py's report_frames turns into
// DataFrames (docs/python.md).
#include "python/src/native_reports.h"

#include <nanobind/stl/string.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warpscope::native {

namespace nb = nanobind;

namespace {

nb::object CellValue(const Cell& cell, CellKind kind) {
  if (const auto* s = std::get_if<std::string>(&cell.value)) return Utf8(*s);
  if (const auto* b = std::get_if<bool>(&cell.value)) return nb::bool_(*b);
  if (const auto* i = std::get_if<int64_t>(&cell.value)) {
    return kind == CellKind::kUint64 ? nb::int_(static_cast<uint64_t>(*i)) : nb::int_(*i);
  }
  if (const auto* d = std::get_if<double>(&cell.value)) return nb::float_(*d);
  return nb::none();
}

// The column's declared kind, as report_frames (native.py) names it.
const char* KindName(CellKind kind) {
  switch (kind) {
    case CellKind::kString: return "str";
    case CellKind::kInt: return "int";
    case CellKind::kUint64: return "uint64";
    case CellKind::kReal: return "float";
    case CellKind::kBool: return "bool";
  }
  return "str";
}

}  // namespace

nb::dict ReportColumns(const Report& report) {
  nb::dict out, scalars;
  for (const auto& [name, value] : report.scalars) {
    scalars[nb::str(name.c_str())] = CellValue(value, KindOfCell(value));
  }
  out["scalars"] = scalars;
  for (const auto& [name, table] : report.tables) {
    nb::dict columns, types;
    for (size_t c = 0; c < table.columns().size(); ++c) {
      nb::list values;
      for (const std::vector<Cell>& row : table.rows()) {
        values.append(CellValue(row[c], table.columns()[c].kind));
      }
      const nb::str key(table.columns()[c].name.c_str());
      columns[key] = values;
      types[key] = nb::str(KindName(table.columns()[c].kind));
    }
    nb::dict t;
    t["columns"] = columns;
    t["types"] = types;
    out[nb::str(name.c_str())] = t;
  }
  return out;
}

}  // namespace warpscope::native
