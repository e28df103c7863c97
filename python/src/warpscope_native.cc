// The `warpscope_native` Python extension: the C++ reader and analyses for the warpscope
// package (python/warpscope/native.py wraps it; docs/python.md).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/measures/kernel_name_filter.h"
#include "analyzers/analyses/occupancy.h"
#include "analyzers/measures/pm_attribution.h"
#include "analyzers/analyses/summary.h"
#include "analyzers/analyses/tail.h"
#include "analyzers/model/trace_columns.h"
#include "analyzers/model/trace_model.h"
#include "python/src/native_frames.h"
#include "python/src/native_reports.h"
#include "python/src/native_rows.h"

namespace nb = nanobind;

namespace warpscope::native {
namespace {

// Loading and analysing run without the GIL; a failed load raises ValueError with the
// reader's message (Python turns it into TraceError).
TraceModel LoadModel(const std::string& path) {
  absl::StatusOr<TraceModel> model = [&] {
    nb::gil_scoped_release release;
    return TraceModel::Load(path);
  }();
  if (!model.ok()) throw nb::value_error(std::string(model.status().message()).c_str());
  return std::move(*model);
}

// The columnar decoder (TraceColumns); a trace with raw PM samples takes its small tables
// from TraceModel, which evaluates them.
nb::dict ReadFrames(const std::string& path) {
  absl::StatusOr<TraceColumns> columns = [&] {
    nb::gil_scoped_release release;
    return TraceColumns::Decode(path);
  }();
  if (!columns.ok()) throw nb::value_error(std::string(columns.status().message()).c_str());
  if (!columns->needs_model) return Frames(std::move(*columns), nullptr);
  const TraceModel model = LoadModel(path);
  return Frames(std::move(*columns), &model);
}

// The tables of `warpscope summary` over one trace or several, as typed columns.
nb::dict SummaryTables(const std::vector<std::string>& paths, const std::string& reports) {
  SummaryOptions options;
  if (!reports.empty()) {
    if (absl::Status s = ParseSummaryReports(reports, &options); !s.ok()) {
      throw nb::value_error(std::string(s.message()).c_str());
    }
  }
  std::vector<TraceModel> models;
  std::vector<const TraceModel*> pointers;
  models.reserve(paths.size());
  for (const std::string& p : paths) models.push_back(LoadModel(p));
  for (const TraceModel& m : models) pointers.push_back(&m);
  Report report;
  {
    nb::gil_scoped_release release;
    report = SummaryReport(SummarizeTraces(pointers, paths, options), options);
  }
  return ReportColumns(report);
}

// `warpscope occupancy` of one trace, as typed columns (table "occupancy").
nb::dict OccupancyTables(const std::string& path, const std::string& kernel_regex) {
  const TraceModel model = LoadModel(path);
  OccupancyReportOptions options;
  options.kernel_regex = kernel_regex;
  absl::StatusOr<OccupancyReport> report;
  {
    nb::gil_scoped_release release;
    report = BuildOccupancyReport(PmInputsOf(model), options);
  }
  if (!report.ok()) throw nb::value_error(std::string(report.status().message()).c_str());
  return ReportColumns(OccupancyReportTables(*report));
}

// `warpscope tail` of one trace, as typed columns (tables "kernels" and "instances").
nb::dict TailTables(const std::string& path, const std::string& kernel_regex, bool instances) {
  const TraceModel model = LoadModel(path);
  TailReportOptions options;
  options.kernel_regex = kernel_regex;
  options.instances = instances;
  const PmInputs in = PmInputsOf(model);
  absl::StatusOr<TailReport> report;
  {
    nb::gil_scoped_release release;
    report = BuildTailReportFiltered(in, options);
  }
  if (!report.ok()) throw nb::value_error(std::string(report.status().message()).c_str());
  return ReportColumns(TailReportTables(*report, in, instances));
}

// `warpscope advise` of one trace: its AdviseReport as columns. `device` < 0: all devices.
nb::dict Advise(const std::string& path, int64_t device, int64_t top, bool literal_ranges,
                const std::string& step) {
  AdviseOptions options;
  options.literal_ranges = literal_ranges;
  options.step = step;
  if (device > UINT32_MAX) throw nb::value_error("warpscope: device must be a device id");
  if (device >= 0) options.device = static_cast<uint32_t>(device);
  options.top = static_cast<size_t>(std::clamp<int64_t>(top, 0, 1 << 20));
  const TraceModel model = LoadModel(path);
  return AdviseTables(model, path, options);
}

// `warpscope stalls` over the traces, every reason (or PC) of every kernel, without source
// lines. Traces without PC samples give empty tables with the same columns.
nb::dict Stalls(const std::vector<std::string>& paths, const std::string& kernel_regex,
                bool by_pc) {
  if (absl::StatusOr<KernelNameFilter> f = KernelNameFilter::Create(kernel_regex); !f.ok()) {
    throw nb::value_error(absl::StrCat("warpscope: ", f.status().message()).c_str());
  }
  std::vector<TraceModel> models;
  std::vector<const TraceModel*> pointers;
  models.reserve(paths.size());
  for (const std::string& p : paths) models.push_back(LoadModel(p));
  for (const TraceModel& m : models) pointers.push_back(&m);
  StallReportOptions options;
  options.kernel_regex = kernel_regex;
  options.top = 0;
  options.view = by_pc ? StallView::kPc : StallView::kKernel;
  options.locator = nullptr;
  absl::StatusOr<StallReport> report = [&] {
    nb::gil_scoped_release release;
    return BuildStallReport(pointers, paths, options);
  }();
  if (!report.ok() && report.status().code() == absl::StatusCode::kFailedPrecondition) {
    return StallTables(StallReport{}, by_pc);  // no PC samples
  }
  if (!report.ok()) throw nb::value_error(std::string(report.status().message()).c_str());
  return StallTables(*report, by_pc);
}

// `warpscope job` over every rank's trace (or folders of them), as ReportColumns.
nb::dict Job(const std::vector<std::string>& paths, const std::string& step, int64_t threads) {
  JobOptions options;
  options.step = step;
  options.threads = static_cast<size_t>(std::clamp<int64_t>(threads, 0, 256));
  absl::StatusOr<JobView> view = [&] {
    nb::gil_scoped_release release;
    return BuildJobView(paths, options);
  }();
  if (!view.ok()) throw nb::value_error(absl::StrCat("warpscope: ", view.status().message()).c_str());
  return ReportColumns(JobReport(*view));
}

}  // namespace
}  // namespace warpscope::native

NB_MODULE(warpscope_native, m) {
  m.doc() = "warpscope's C++ trace reader and analyses (use them through warpscope)";
  m.def("read_frames", &warpscope::native::ReadFrames, nb::arg("path"),
        "Reads a trace with the C++ reader; the columns of every frame.");
  m.def("summary_tables", &warpscope::native::SummaryTables, nb::arg("paths"),
        nb::arg("reports") = "", "`warpscope summary` over the traces, as typed columns.");
  m.def("occupancy_tables", &warpscope::native::OccupancyTables, nb::arg("path"),
        nb::arg("kernel_regex") = "", "`warpscope occupancy` of one trace, as typed columns.");
  m.def("tail_tables", &warpscope::native::TailTables, nb::arg("path"),
        nb::arg("kernel_regex") = "", nb::arg("instances") = false,
        "`warpscope tail` of one trace, as typed columns.");
  m.def("advise_tables", &warpscope::native::Advise, nb::arg("path"), nb::arg("device") = -1,
        nb::arg("top") = 0, nb::arg("literal_ranges") = false, nb::arg("step") = "",
        "`warpscope advise` of one trace, as columns.");
  m.def("job_tables", &warpscope::native::Job, nb::arg("paths"), nb::arg("step") = "",
        nb::arg("threads") = 0, "`warpscope job` over the ranks' traces, as columns.");
  m.def("stall_tables", &warpscope::native::Stalls, nb::arg("paths"), nb::arg("kernel_regex") = "",
        nb::arg("by_pc") = false, "`warpscope stalls` over the traces, as columns.");
  m.def("run_row", &warpscope::native::RunRow, nb::arg("name"), nb::arg("traces"),
        nb::arg("options"), "Any analysis of the list by name, as its Report's columns.");
  m.def("export", &warpscope::native::Export, nb::arg("format"), nb::arg("output"),
        nb::arg("traces"), nb::arg("options"),
        "`warpscope export` in chrome, perfetto or kineto; the paths written.");
  m.def("export_options", &warpscope::native::ExportOptionRows,
        "The options of `warpscope export` besides --format and -o.");
  m.def("rows", &warpscope::native::Rows, "The list of analyses: names, summaries, options.");
}
