// Frames(TraceColumns&&, model): the columnar decoder's columns handed to numpy. Each column's
// vector moves into the array that owns it (no copy); string columns carry their sorted
// categories, enums their values.
#include "python/src/native_frames.h"

namespace warpscope::native {
namespace {

namespace nb = nanobind;

nb::object Column(ColumnData& c) {
  if (!c.stored) {  // all zeros: numpy's zeroed allocation, pages the kernel fills on touch
    const char* dtype = c.type == ColumnData::Type::kBool   ? "bool"
                        : c.type == ColumnData::Type::kEnum ? "int32"
                                                            : "int64";
    nb::object zeros = nb::make_tuple("zeros", c.zeros, dtype);
    if (c.type == ColumnData::Type::kEnum) return nb::make_tuple("enum", zeros, c.enum_name);
    return zeros;
  }
  switch (c.type) {
    case ColumnData::Type::kBool:
      return nb::make_tuple("bool", Array(std::move(c.bools)));
    case ColumnData::Type::kString: {
      nb::list categories;
      for (std::string_view s : c.categories) categories.append(Utf8(s));
      return nb::make_tuple("category", Array(std::move(c.codes)), categories);
    }
    case ColumnData::Type::kEnum:
      return nb::make_tuple("enum", Array(std::move(c.codes)), c.enum_name);
    case ColumnData::Type::kInt64:
      break;
  }
  return Array(std::move(c.ints));
}

}  // namespace

nb::dict EventFrames(std::vector<FrameColumns>& event_frames) {
  nb::dict frames;
  for (FrameColumns& frame : event_frames) {
    nb::dict out;
    for (ColumnData& c : frame.columns) out[c.name.c_str()] = Column(c);
    frames[frame.name.c_str()] = out;
  }
  return frames;
}

nb::dict Frames(TraceColumns&& columns, const TraceModel* model, uint64_t unknown_reasons) {
  nb::dict frames = EventFrames(columns.frames);
  nb::list metric_names;
  if (model != nullptr) {
    AddSampleFrames(*model, frames, &metric_names, &unknown_reasons);
    return FramesResult(frames, metric_names, model->import_counters, unknown_reasons,
                        model->stats, model->stats_final, model->truncation,
                        model->end_of_trace.has_value());
  }
  AddSampleFrames(columns.samples, frames, &metric_names, &unknown_reasons);
  return FramesResult(frames, metric_names, columns.import_counters, unknown_reasons, columns.stats,
                      columns.stats_final, columns.truncation, columns.complete);
}

}  // namespace warpscope::native
