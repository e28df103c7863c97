// ReportScope: what a caller renders of a report (report.h), known before the analysis runs,
// so that an analysis can leave out the rows of a table no one reads (job's tables of a row
// per step and rank).
#ifndef WARPSCOPE_ANALYZERS_RENDER_REPORT_SCOPE_H_
#define WARPSCOPE_ANALYZERS_RENDER_REPORT_SCOPE_H_

#include <string>
#include <string_view>

namespace warpscope {

// Every table (CSV and JSON without --table, Python's DataFrames: the default), the text
// form's (Report::text_tables), or the one --table names.
struct ReportScope {
  bool text = false;  // the text form
  std::string only;   // --table NAME; "" = every table of the form
  // Whether table `name` is rendered; `in_text`: the text form shows it.
  bool Renders(std::string_view name, bool in_text) const {
    if (!only.empty()) return only == name;
    return !text || in_text;
  }
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_RENDER_REPORT_SCOPE_H_
