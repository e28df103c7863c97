// The `warpscope_native` Python extension: the C++ reader and the list of analyses (any row
// run by name, native_rows.cc) for the warpscope package (python/warpscope/native.py wraps
// it; docs/python.md).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "analyzers/model/trace_columns.h"
#include "analyzers/model/trace_model.h"
#include "python/src/native_frames.h"
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

}  // namespace
}  // namespace warpscope::native

NB_MODULE(warpscope_native, m) {
  m.doc() = "warpscope's C++ trace reader and analyses (use them through warpscope)";
  m.def("read_frames", &warpscope::native::ReadFrames, nb::arg("path"),
        "Reads a trace with the C++ reader; the columns of every frame.");
  m.def("run_row", &warpscope::native::RunRow, nb::arg("name"), nb::arg("traces"),
        nb::arg("options"), "Any analysis of the list by name, as its Report's columns.");
  m.def("export", &warpscope::native::Export, nb::arg("format"), nb::arg("output"),
        nb::arg("traces"), nb::arg("options"),
        "`warpscope export` in chrome, perfetto or kineto; the paths written.");
  m.def("export_options", &warpscope::native::ExportOptionRows,
        "The options of `warpscope export` besides --format and -o.");
  m.def("rows", &warpscope::native::Rows, "The list of analyses: names, summaries, options.");
}
