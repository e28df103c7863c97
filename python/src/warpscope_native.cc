// The `warpscope_native` Python extension: the C++ reader and analyses for the warpscope
// package (python/warpscope/native.py wraps it; docs/python.md).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "analyzers/analyses/occupancy_report.h"
#include "analyzers/analyses/pm_attribution.h"
#include "analyzers/analyses/summary.h"
#include "analyzers/analyses/tail_report.h"
#include "analyzers/model/trace_columns.h"
#include "analyzers/model/trace_model.h"
#include "python/src/native_frames.h"

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

// The columnar decoder (TraceColumns); a trace with raw PM samples goes through TraceModel,
// which evaluates them.
nb::dict ReadFrames(const std::string& path) {
  absl::StatusOr<TraceColumns> columns = [&] {
    nb::gil_scoped_release release;
    return TraceColumns::Decode(path);
  }();
  if (!columns.ok()) throw nb::value_error(std::string(columns.status().message()).c_str());
  if (columns->needs_model) return Frames(LoadModel(path));
  return Frames(std::move(*columns));
}

// The same through TraceModel (what the columnar decoder is measured and tested against).
nb::dict ReadFramesViaModel(const std::string& path) { return Frames(LoadModel(path)); }

// The figures of `warpscope summary` over one trace or several, as the CLI's CSV.
std::string SummaryCsv(const std::vector<std::string>& paths, const std::string& reports) {
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
  nb::gil_scoped_release release;
  return RenderSummary(SummarizeTraces(pointers, paths, options), OutputFormat::kCsv, options);
}

std::string OccupancyCsv(const std::string& path, const std::string& kernel_regex) {
  const TraceModel model = LoadModel(path);
  OccupancyReportOptions options;
  options.kernel_regex = kernel_regex;
  nb::gil_scoped_release release;
  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(PmInputsOf(model), options);
  if (!report.ok()) {
    nb::gil_scoped_acquire acquire;
    throw nb::value_error(std::string(report.status().message()).c_str());
  }
  return RenderOccupancyReport(*report, OutputFormat::kCsv);
}

std::string TailCsv(const std::string& path, const std::string& kernel_regex, bool instances) {
  const TraceModel model = LoadModel(path);
  TailReportOptions options;
  options.kernel_regex = kernel_regex;
  options.instances = instances;
  const PmInputs in = PmInputsOf(model);
  nb::gil_scoped_release release;
  absl::StatusOr<TailReport> report = BuildTailReportFiltered(in, options);
  if (!report.ok()) {
    nb::gil_scoped_acquire acquire;
    throw nb::value_error(std::string(report.status().message()).c_str());
  }
  return RenderTailReport(*report, in, options, OutputFormat::kCsv);
}

}  // namespace
}  // namespace warpscope::native

NB_MODULE(warpscope_native, m) {
  m.doc() = "warpscope's C++ trace reader and analyses (use them through warpscope)";
  m.def("read_frames", &warpscope::native::ReadFrames, nb::arg("path"),
        "Reads a trace with the C++ reader; the columns of every frame.");
  m.def("read_frames_via_model", &warpscope::native::ReadFramesViaModel, nb::arg("path"),
        "read_frames through the C++ trace model (slower; for comparisons).");
  m.def("summary_csv", &warpscope::native::SummaryCsv, nb::arg("paths"),
        nb::arg("reports") = "", "`warpscope summary --format csv` over the traces.");
  m.def("occupancy_csv", &warpscope::native::OccupancyCsv, nb::arg("path"),
        nb::arg("kernel_regex") = "", "`warpscope occupancy --format csv` of one trace.");
  m.def("tail_csv", &warpscope::native::TailCsv, nb::arg("path"),
        nb::arg("kernel_regex") = "", nb::arg("instances") = false,
        "`warpscope tail --format csv` of one trace.");
}
