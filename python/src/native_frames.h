// Columns of a TraceModel for Python (native_frames.cc): one dict of numpy arrays per frame.
#ifndef WARPSCOPE_PYTHON_SRC_NATIVE_FRAMES_H_
#define WARPSCOPE_PYTHON_SRC_NATIVE_FRAMES_H_

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "analyzers/model/trace_model.h"

namespace warpscope::native {

// {"frames": {name: {column: array | ("category", codes, values) | ("enum", values, enum
// name) | ("bool", uint8 array)}}, "pm_metric_names": [...], "import_counters": {...},
// "stats": {...}, "stats_severity": {...}, "stats_final", "truncated", "truncation_offset",
// "complete"}.
nanobind::dict Frames(const TraceModel& model);

}  // namespace warpscope::native

#endif  // WARPSCOPE_PYTHON_SRC_NATIVE_FRAMES_H_
