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
#include "analyzers/analyses/export_run.h"
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

const char* InputName(AnalysisInput input) {
  switch (input) {
    case AnalysisInput::kOneTrace: return "one";
    case AnalysisInput::kOneOrMore: return "one_or_more";
    case AnalysisInput::kPair: return "pair";
    case AnalysisInput::kJob: return "job";
    case AnalysisInput::kTraceOrJob: return "trace_or_job";
  }
  return "one";
}

nb::list OptionRows(const std::vector<AnalysisOption>& options) {
  nb::list rows;
  for (const AnalysisOption& o : options) {
    nb::dict option;
    option["name"] = o.name;
    option["kind"] = KindName(o.kind);
    option["default"] = o.default_value;
    option["help"] = o.help;
    option["required"] = o.required;
    rows.append(option);
  }
  return rows;
}

// Refuses an option `command` does not have.
void CheckKnown(const std::string& command, const std::vector<AnalysisOption>& options,
                const std::map<std::string, std::string>& given) {
  for (const auto& [name, value] : given) {
    bool known = false;
    for (const AnalysisOption& o : options) known = known || o.name == name;
    if (!known) {
      std::vector<std::string> names;
      for (const AnalysisOption& o : options) names.push_back(o.name);
      Refuse(absl::InvalidArgumentError(absl::StrCat(command, " has no option ", name,
                                                     "; its options: ",
                                                     absl::StrJoin(names, ", "))));
    }
  }
}

// The options given, each a known option of the row, checked as the CLI checks its flags.
OptionValues CheckedValues(const AnalysisRow& row, std::map<std::string, std::string> given) {
  CheckKnown(row.name, row.options, given);
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
  // Its pictures and pages (--svg FILE, --html FILE), as the CLI writes them.
  for (const AnalysisFile& file : result->files) {
    if (absl::Status s = WriteAnalysisFile(file, values); !s.ok()) Refuse(s);
  }
  return ReportColumns(result->report);
}

std::vector<std::string> Export(const std::string& format, const std::string& output,
                                const std::vector<std::string>& traces,
                                const std::map<std::string, std::string>& options) {
  static const std::vector<AnalysisOption> export_options = ExportOptions();
  CheckKnown("export", export_options, options);
  absl::StatusOr<std::vector<std::string>> paths = ExpandTracePaths(traces);
  if (!paths.ok()) Refuse(paths.status());
  absl::StatusOr<ExportRequest> request =
      ExportRequestOf(format, output, *paths, OptionValues(&export_options, options));
  if (!request.ok()) Refuse(request.status());
  if (absl::Status s = PrepareExport(*request); !s.ok()) Refuse(s);
  absl::StatusOr<std::vector<std::string>> written;
  {
    nb::gil_scoped_release release;
    std::vector<TraceModel> models;
    std::vector<const TraceModel*> pointers;
    models.reserve(request->traces.size());
    absl::Status failed;
    for (const std::string& p : request->traces) {
      absl::StatusOr<TraceModel> model =
          LoadSlicedTrace(p, ExportLoadOptions(format), request->slice);
      if (!model.ok()) {
        failed = model.status();
        break;
      }
      models.push_back(std::move(*model));
    }
    for (const TraceModel& m : models) pointers.push_back(&m);
    written = failed.ok() ? WriteExport(*request, pointers)
                          : absl::StatusOr<std::vector<std::string>>(failed);
  }
  if (!written.ok()) Refuse(written.status());
  return *written;
}

nb::list Rows() {
  nb::list rows;
  for (const AnalysisRow& row : AnalysisRows()) {
    nb::dict r;
    r["name"] = row.name;
    r["summary"] = row.summary;
    r["input"] = InputName(row.input);
    r["options"] = OptionRows(row.options);
    rows.append(r);
  }
  return rows;
}

nb::list ExportOptionRows() { return OptionRows(ExportOptions()); }

}  // namespace warpscope::native
