// Frames for Python as columns, one dict of numpy arrays per frame: from a TraceModel
// (native_frames.cc) or from TraceColumns (native_columns.cc).
#ifndef WARPSCOPE_PYTHON_SRC_NATIVE_FRAMES_H_
#define WARPSCOPE_PYTHON_SRC_NATIVE_FRAMES_H_

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string_view>
#include <utility>
#include <vector>

#include "analyzers/model/trace_columns.h"
#include "analyzers/model/trace_model.h"

namespace warpscope::native {

// A 1-D numpy array that owns `values` (moved, not copied) through a capsule.
template <typename T, typename Allocator>
nanobind::object Array(std::vector<T, Allocator>&& values) {
  using Vector = std::vector<T, Allocator>;
  auto* owned = new Vector(std::move(values));
  nanobind::capsule owner(owned, [](void* p) noexcept { delete static_cast<Vector*>(p); });
  const size_t shape[1] = {owned->size()};
  return nanobind::cast(
      nanobind::ndarray<nanobind::numpy, T, nanobind::ndim<1>>(owned->data(), 1, shape, owner));
}

inline nanobind::str Utf8(std::string_view s) {
  // The C++ reader has already repaired invalid UTF-8 ("?"); "replace" keeps a stray byte
  // from turning into an exception all the same.
  return nanobind::steal<nanobind::str>(
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
}

// {"frames": {name: {column: array | ("category", codes, values) | ("enum", values, enum
// name) | ("bool", uint8 array)}}, "pm_metric_names": [...], "import_counters": {...},
// "stats": {...}, "stats_severity": {...}, "stats_final", "truncated", "truncation_offset",
// "complete"}.
// The event frames are the columnar decoder's (its columns move into the arrays); the rest
// comes from `model` where the trace needed one (TraceColumns::needs_model), else from the
// decoder too.
// `unknown_reasons` adds to the count of PC stall reasons without a name (those of chunks
// already handed out).
nanobind::dict Frames(TraceColumns&& columns, const TraceModel* model,
                      uint64_t unknown_reasons = 0);
// The event frames alone, as Frames gives them (their columns move into the arrays).
nanobind::dict EventFrames(std::vector<FrameColumns>& event_frames);

// The frames of the small tables (capture windows, PC and PM samples, devices, contexts,
// call stacks) of a TraceModel or a TraceColumns' SampleTables, which name them alike.
template <typename Tables>
void AddSampleFrames(const Tables& tables, nanobind::dict& frames, nanobind::list* metric_names,
                     uint64_t* unknown_reasons);

// The pm_samples, pc_samples and pc_sample_batches frames of `tables` alone, into `frames`, as
// AddSampleFrames makes them; the metric names of pm_samples' columns go to `metric_names`.
void SampleFramesOfChunk(const SampleTables& tables, nanobind::dict& frames,
                         nanobind::list* metric_names, uint64_t* unknown_reasons);

// The dict Frames returns, around its frames.
nanobind::dict FramesResult(nanobind::dict frames, nanobind::list metric_names,
                            const std::vector<StatCounter>& import_counters,
                            uint64_t unknown_reasons, const std::vector<StatCounter>& stats,
                            bool stats_final, const TruncationInfo& truncation, bool complete);

}  // namespace warpscope::native

#endif  // WARPSCOPE_PYTHON_SRC_NATIVE_FRAMES_H_
