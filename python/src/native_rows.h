// The list of analyses for Python (native_rows.cc): any row run by name, and the rows; the
// exports.
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
// `warpscope export --format FORMAT -o OUTPUT TRACES` for chrome, perfetto and kineto, with
// the export's options (analyzers/analyses/export_run.h); the paths written.
std::vector<std::string> Export(const std::string& format, const std::string& output,
                                const std::vector<std::string>& traces,
                                const std::map<std::string, std::string>& options);
// Each row: {"name", "summary", "input", "options": [{"name", "kind", "default", "help",
// "required"}]};
// "input" is one of one, one_or_more, pair, job, trace_or_job (analysis.h, AnalysisInput).
nanobind::list Rows();
// The options of `warpscope export` besides --format and -o, as the rows' options.
nanobind::list ExportOptionRows();

}  // namespace warpscope::native

#endif  // WARPSCOPE_PYTHON_SRC_NATIVE_ROWS_H_
