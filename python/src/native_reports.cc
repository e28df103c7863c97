// The advise and stall reports for Python: the analyses' own results (AdviseReport,
// StallReport) as columns, one Python list per column, which python/warpscope/native.py turns
// into DataFrames (docs/python.md).
#include "python/src/native_reports.h"

#include <nanobind/stl/string.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/stalls.h"

namespace warpscope::native {
namespace {

namespace nb = nanobind;

// Columns filled row by row: {name: list}.
class ColumnLists {
 public:
  template <typename T>
  ColumnLists& Add(const char* name, T value) {
    nb::object key = nb::str(name);
    if (!columns_.contains(key)) columns_[key] = nb::list();
    nb::borrow<nb::list>(columns_[key]).append(Value(std::move(value)));
    return *this;
  }
  nb::dict Finish() { return columns_; }

 private:
  template <typename T>
  static nb::object Value(T value) {
    if constexpr (std::is_convertible_v<T, std::string_view>) {
      return Utf8(std::string_view(value));
    } else {
      return nb::cast(value);
    }
  }
  nb::dict columns_;
};


// A stall share's percentage, as the CLI prints it.
double Percent(double fraction) { return 100 * fraction; }

}  // namespace

nb::dict AdviseTables(const TraceModel& model, const std::string& label,
                      const AdviseOptions& options) {
  AdviseReport report;
  {
    nb::gil_scoped_release release;
    report = BuildAdviseReport(model, label, options);
  }
  return ReportColumns(AdviseReportTables(report));
}

nb::dict StallTables(const StallReport& report, bool by_pc) {
  ColumnLists kernels, detail;
  for (const StallKernelRow& row : report.rows) {
    kernels.Add("kernel", row.name).Add("samples", row.samples);
    kernels.Add("pct", Percent(row.fraction)).Add("selected", row.selected);
    kernels.Add("not_issued", row.not_issued).Add("cycles_per_issue", row.cycles_per_issue);
    kernels.Add("sampling_instants", row.sampling_instants).Add("too_few", row.too_few);
    if (!by_pc) {
      for (const StallShare& s : row.reasons) {
        detail.Add("kernel", row.name).Add("reason", s.state).Add("samples", s.samples);
        detail.Add("pct", Percent(s.fraction)).Add("low_pct", Percent(s.low));
        detail.Add("high_pct", Percent(s.high));
      }
      continue;
    }
    for (const PcHotspot& pc : row.pcs) {
      for (const StallShare& s : pc.reasons) {
        detail.Add("kernel", row.name).Add("cubin_crc", pc.cubin_crc);
        detail.Add("pc_offset", pc.pc_offset).Add("pc_samples", pc.samples);
        detail.Add("kernel_pct", Percent(pc.fraction)).Add("reason", s.state);
        detail.Add("samples", s.samples).Add("pct", Percent(s.fraction));
      }
    }
  }
  nb::dict out;
  out["kernels"] = kernels.Finish();
  out[by_pc ? "pcs" : "reasons"] = detail.Finish();
  return out;
}

namespace {

nb::object CellValue(const Cell& cell) {
  if (const auto* s = std::get_if<std::string>(&cell.value)) return Utf8(*s);
  if (const auto* b = std::get_if<bool>(&cell.value)) return nb::bool_(*b);
  if (const auto* i = std::get_if<int64_t>(&cell.value)) return nb::int_(*i);
  if (const auto* d = std::get_if<double>(&cell.value)) return nb::float_(*d);
  return nb::none();
}

// The column's declared kind, else what its first non-empty cell holds.
const char* KindName(CellKind kind) {
  switch (kind) {
    case CellKind::kString: return "str";
    case CellKind::kInt: return "int";
    case CellKind::kReal: return "float";
    case CellKind::kBool: return "bool";
    case CellKind::kAuto: break;
  }
  return nullptr;
}

const char* CellType(const Cell& cell) {
  if (std::holds_alternative<std::string>(cell.value)) return "str";
  if (std::holds_alternative<bool>(cell.value)) return "bool";
  if (std::holds_alternative<int64_t>(cell.value)) return "int";
  if (std::holds_alternative<double>(cell.value)) return "float";
  return nullptr;
}

}  // namespace

nb::dict ReportColumns(const Report& report) {
  nb::dict out, scalars;
  for (const auto& [name, value] : report.scalars) scalars[nb::str(name.c_str())] = CellValue(value);
  out["scalars"] = scalars;
  for (const auto& [name, table] : report.tables) {
    nb::dict columns, types;
    for (size_t c = 0; c < table.columns().size(); ++c) {
      nb::list values;
      const char* type = KindName(table.columns()[c].kind);
      for (const std::vector<Cell>& row : table.rows()) {
        values.append(CellValue(row[c]));
        if (type == nullptr) type = CellType(row[c]);
      }
      const nb::str key(table.columns()[c].name.c_str());
      columns[key] = values;
      types[key] = nb::str(type != nullptr ? type : "str");
    }
    nb::dict t;
    t["columns"] = columns;
    t["types"] = types;
    out[nb::str(name.c_str())] = t;
  }
  return out;
}

}  // namespace warpscope::native
