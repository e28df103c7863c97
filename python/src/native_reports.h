// A Report as columns for Python (native_reports.cc).
#ifndef WARPSCOPE_PYTHON_SRC_NATIVE_REPORTS_H_
#define WARPSCOPE_PYTHON_SRC_NATIVE_REPORTS_H_

#include <string>

#include "analyzers/render/report.h"
#include "python/src/native_frames.h"

namespace warpscope::native {

// Any Report as columns: {"scalars": {name: value}, TABLE: {"columns": {column: list},
// "types": {column: "int" | "uint64" | "float" | "str" | "bool"}}, ...}; empty cells are None. The one way a
// report reaches pandas (python/warpscope/native.py, report_frames).
nanobind::dict ReportColumns(const Report& report);

}  // namespace warpscope::native

#endif  // WARPSCOPE_PYTHON_SRC_NATIVE_REPORTS_H_
