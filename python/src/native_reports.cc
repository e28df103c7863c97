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

nb::dict Findings(const AdviseReport& report) {
  ColumnLists c;
  int rank = 0;
  for (const AdviseFinding& f : report.findings) {
    c.Add("rank", ++rank).Add("rule", f.rule).Add("severity", AdviseSeverityName(f.severity));
    c.Add("cost_ns", f.cost_ns).Add("cost_percent", 100 * f.cost_fraction);
    c.Add("cost_max_ns", f.cost_max_ns);
    c.Add("occurrences", f.occurrences).Add("device", f.device_id);
    c.Add("nvtx_path", f.nvtx_path).Add("kernel", f.kernel).Add("api_call", f.api_call);
    c.Add("stream", f.stream).Add("os_tid", f.os_tid).Add("thread_name", f.thread_name);
    c.Add("title", f.title).Add("evidence", f.evidence).Add("fix", f.fix);
    c.Add("worst_begin_ns", f.worst_begin_ns).Add("worst_end_ns", f.worst_end_ns);
    c.Add("job_rank", f.job_rank).Add("one_time", f.one_time);
  }
  return c.Finish();
}

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
  nb::dict out;
  nb::dict head;
  head["trace"] = Utf8(report.label);
  head["headline"] = Utf8(report.headline);
  head["wall_ns"] = report.wall_ns;
  head["gpu_span_ns"] = report.gpu_span_ns;
  head["gpu_busy_ns"] = report.gpu_busy_ns;
  head["gpu_busy_percent"] = 100 * report.busy_fraction;
  head["gpu_idle_ns"] = report.gpu_idle_ns;
  head["idle_attributed_ns"] = report.idle_attributed_ns;
  head["steps"] = report.steps;
  head["warmup_steps"] = report.warmup_steps;
  head["step_rule"] = Utf8(report.step_rule);
  out["summary"] = head;
  out["findings"] = Findings(report);
  ColumnLists devices;
  for (const AdviseDeviceBusy& d : report.devices) {
    devices.Add("device", d.device_id).Add("begin_ns", d.begin_ns).Add("end_ns", d.end_ns);
    devices.Add("busy_ns", d.busy_ns);
  }
  out["devices"] = devices.Finish();
  nb::list notes;
  for (const std::string& note : report.notes) notes.append(Utf8(note));
  out["notes"] = notes;
  return out;
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
  if (const auto* i = std::get_if<int64_t>(&cell.value)) return nb::int_(*i);
  if (const auto* d = std::get_if<double>(&cell.value)) return nb::float_(*d);
  return nb::none();
}

const char* CellType(const Cell& cell) {
  if (std::holds_alternative<std::string>(cell.value)) return "str";
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
      const char* type = nullptr;
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
