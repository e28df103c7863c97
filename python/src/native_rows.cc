// Any row of the list of analyses (analyzers/analyses/analysis.h), run from Python by its
// name: the traces as the CLI takes them (files, folders, globs) and the options as its flags
// (name without dashes -> value text; a switch: "true"). The row's Report as typed columns,
// the tables `--table NAME` renders. What each row is, for the package to make its functions.
#include "python/src/native_rows.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/slice.h"
#include "analyzers/model/trace_paths.h"
#include "python/src/native_reports.h"

namespace warpscope::native {
namespace {

namespace nb = nanobind;

[[noreturn]] void Refuse(const absl::Status& status) {
  throw nb::value_error(absl::StrCat("warpscope: ", status.message()).c_str());
}

const char* KindName(OptionKind kind) {
  switch (kind) {
    case OptionKind::kSwitch: return "switch";
    case OptionKind::kText: return "text";
    case OptionKind::kCount: return "count";
    case OptionKind::kInteger: return "integer";
    case OptionKind::kDevice: return "device";
    case OptionKind::kOutputFile: return "file";
  }
  return "text";
}

// The options given, each a known option of the row, checked as the CLI checks its flags.
OptionValues CheckedValues(const AnalysisRow& row, std::map<std::string, std::string> given) {
  for (const auto& [name, value] : given) {
    bool known = false;
    for (const AnalysisOption& o : row.options) known = known || o.name == name;
    if (!known) {
      std::vector<std::string> names;
      for (const AnalysisOption& o : row.options) names.push_back(o.name);
      Refuse(absl::InvalidArgumentError(absl::StrCat(row.name, " has no option ", name,
                                                     "; its options: ",
                                                     absl::StrJoin(names, ", "))));
    }
  }
  OptionValues values(&row.options, std::move(given));
  if (absl::Status s = CheckRowOptions(row, values); !s.ok()) Refuse(s);
  return values;
}

}  // namespace

nb::dict RunRow(const std::string& name, const std::vector<std::string>& traces,
                const std::map<std::string, std::string>& options) {
  const AnalysisRow* row = FindAnalysis(name);
  if (row == nullptr) Refuse(absl::InvalidArgumentError("no analysis named " + name));
  const OptionValues values = CheckedValues(*row, options);
  AnalysisInputs in;
  in.given = traces;
  absl::StatusOr<std::vector<std::string>> paths = ExpandTracePaths(traces);
  if (!paths.ok()) Refuse(paths.status());
  in.paths = std::move(*paths);
  if (absl::Status s = CheckTraceCount(*row, in); !s.ok()) Refuse(s);
  const absl::StatusOr<SliceRequest> slice = SliceOfRun(*row, in, values);
  if (!slice.ok()) Refuse(slice.status());
  const bool loaded = LoadsTraces(*row, in);
  std::vector<TraceModel> models;
  absl::StatusOr<AnalysisResult> result;
  {
    nb::gil_scoped_release release;
    const TraceModelOptions load = row->load_options ? row->load_options(values)
                                                     : TraceModelOptions();
    absl::Status failed;
    if (loaded) {
      models.reserve(in.paths.size());
      for (const std::string& p : in.paths) {
        absl::StatusOr<TraceModel> model = LoadSlicedTrace(p, load, *slice);
        if (!model.ok()) {
          failed = model.status();
          break;
        }
        models.push_back(std::move(*model));
      }
      for (const TraceModel& m : models) in.traces.push_back(&m);
    }
    result = failed.ok() ? row->run(in, values) : absl::StatusOr<AnalysisResult>(failed);
  }
  if (!result.ok()) Refuse(result.status());
  return ReportColumns(result->report);
}

nb::list Rows() {
  nb::list rows;
  for (const AnalysisRow& row : AnalysisRows()) {
    nb::list options;
    for (const AnalysisOption& o : row.options) {
      nb::dict option;
      option["name"] = o.name;
      option["kind"] = KindName(o.kind);
      option["default"] = o.default_value;
      option["help"] = o.help;
      option["required"] = o.required;
      options.append(option);
    }
    nb::dict r;
    r["name"] = row.name;
    r["summary"] = row.summary;
    r["options"] = options;
    rows.append(r);
  }
  return rows;
}

}  // namespace warpscope::native
