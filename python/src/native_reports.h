// The advise and stall reports as columns for Python (native_reports.cc).
#ifndef WARPSCOPE_PYTHON_SRC_NATIVE_REPORTS_H_
#define WARPSCOPE_PYTHON_SRC_NATIVE_REPORTS_H_

#include <string>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/render/report.h"
#include "analyzers/analyses/stalls.h"
#include "python/src/native_frames.h"

namespace warpscope::native {

// BuildAdviseReport's result (the GIL released while it runs) as ReportColumns of
// AdviseReportTables: the head figures as scalars, tables "findings", "devices", "notes".
nanobind::dict AdviseTables(const TraceModel& model, const std::string& label,
                            const AdviseOptions& options);

// The stall report as ReportColumns of StallReportTables: tables "kernels" and "reasons" or
// (by_pc) "pcs".
nanobind::dict StallTables(const StallReport& report, bool by_pc);

// Any Report as columns: {"scalars": {name: value}, TABLE: {"columns": {column: list},
// "types": {column: "int" | "uint64" | "float" | "str" | "bool"}}, ...}; empty cells are None. The one way a
// report reaches pandas (python/warpscope/native.py, report_frames).
nanobind::dict ReportColumns(const Report& report);

}  // namespace warpscope::native

#endif  // WARPSCOPE_PYTHON_SRC_NATIVE_REPORTS_H_
