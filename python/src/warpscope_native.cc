// The `warpscope_native` Python extension: the C++ reader and the list of analyses (any row
// run by name, native_rows.cc) for the warpscope package (python/warpscope/native.py wraps
// it; docs/python.md).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <utility>
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

// ReadFrames in chunks (TraceColumns::DecodeInChunks): `on_chunk` gets the event frames and
// the pm_samples, pc_samples and pc_sample_batches frames of each chunk of about `chunk_rows`
// rows, as ReadFrames gives them, and the metric names of pm_samples' columns; the result is
// ReadFrames' with those frames of no rows, but where the trace has raw PM samples
// (`pm_samples_in_chunks` false): then its pm_samples frame holds them all, evaluated, and
// those of the chunks are not the trace's. An exception raised by `on_chunk` stops the reading
// and propagates.
nb::dict ReadFrameChunks(const std::string& path, size_t chunk_rows, nb::callable on_chunk) {
  std::optional<nb::python_error> failed;
  uint64_t unknown_reasons = 0;  // PC stall reasons without a name, in the chunks
  absl::StatusOr<TraceColumns> columns = [&] {
    nb::gil_scoped_release release;
    return TraceColumns::DecodeInChunks(
        path, chunk_rows, [&](std::vector<FrameColumns>& frames, const SampleTables& samples) {
          nb::gil_scoped_acquire acquire;
          try {
            nb::dict chunk = EventFrames(frames);
            nb::list metric_names;
            SampleFramesOfChunk(samples, chunk, &metric_names, &unknown_reasons);
            on_chunk(chunk, metric_names);
          } catch (nb::python_error& e) {
            failed.emplace(std::move(e));
            return false;
          }
          return true;
        });
  }();
  if (failed.has_value()) throw std::move(*failed);
  if (!columns.ok()) throw nb::value_error(std::string(columns.status().message()).c_str());
  if (!columns->needs_model) {
    nb::dict result = Frames(std::move(*columns), nullptr, unknown_reasons);
    result["pm_samples_in_chunks"] = true;
    return result;
  }
  // The model's PM samples (evaluated) and counters (PC stall reasons without a name among
  // them, of the whole trace), but not its PC samples: the chunks had them.
  nb::dict rest;
  nb::list no_names;
  uint64_t rest_unknown = 0;
  SampleFramesOfChunk(columns->samples, rest, &no_names, &rest_unknown);
  const TraceModel model = LoadModel(path);
  nb::dict result = Frames(std::move(*columns), &model);
  nb::dict frames = result["frames"];
  frames["pc_samples"] = rest["pc_samples"];
  frames["pc_sample_batches"] = rest["pc_sample_batches"];
  result["pm_samples_in_chunks"] = false;
  return result;
}

}  // namespace
}  // namespace warpscope::native

NB_MODULE(warpscope_native, m) {
  m.doc() = "warpscope's C++ trace reader and analyses (use them through warpscope)";
  m.def("read_frames", &warpscope::native::ReadFrames, nb::arg("path"),
        "Reads a trace with the C++ reader; the columns of every frame.");
  m.def("read_frame_chunks", &warpscope::native::ReadFrameChunks, nb::arg("path"),
        nb::arg("chunk_rows"), nb::arg("on_chunk"),
        "Reads a trace with the C++ reader, the event frames handed to on_chunk a chunk of "
        "rows at a time; the small frames and counters.");
  m.def("run_row", &warpscope::native::RunRow, nb::arg("name"), nb::arg("traces"),
        nb::arg("options"), "Any analysis of the list by name, as its Report's columns.");
  m.def("export", &warpscope::native::Export, nb::arg("format"), nb::arg("output"),
        nb::arg("traces"), nb::arg("options"),
        "`warpscope export` in chrome, perfetto or kineto; the paths written.");
  m.def("export_options", &warpscope::native::ExportOptionRows,
        "The options of `warpscope export` besides --format and -o.");
  m.def("rows", &warpscope::native::Rows, "The list of analyses: names, summaries, options.");
}
