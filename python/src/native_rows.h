// The list of analyses for Python (native_rows.cc): any row run by name, and the rows.
#ifndef WARPSCOPE_PYTHON_SRC_NATIVE_ROWS_H_
#define WARPSCOPE_PYTHON_SRC_NATIVE_ROWS_H_

#include <nanobind/nanobind.h>

#include <map>
#include <string>
#include <vector>

namespace warpscope::native {

// The row `name` on `traces` (files, folders, globs) with `options` (flag name -> value text):
// its Report as ReportColumns. ValueError "warpscope: ..." for a bad option, trace or count.
nanobind::dict RunRow(const std::string& name, const std::vector<std::string>& traces,
                      const std::map<std::string, std::string>& options);
// Each row: {"name", "summary", "options": [{"name", "kind", "default", "help", "required"}]}.
nanobind::list Rows();

}  // namespace warpscope::native

#endif  // WARPSCOPE_PYTHON_SRC_NATIVE_ROWS_H_
