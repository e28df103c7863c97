// The samples of a model loaded without them, read again from its file one at a time
// (ForEachPcRecords, ForEachPmSample in trace_model.h).
#include "analyzers/model/trace_model.h"

namespace warpscope {
namespace {

// A load of `model`'s file that keeps no events or samples of its own, each handed to a sink.
TraceModelOptions ReadAgainOptions(const TraceModel& model) {
  TraceModelOptions options;
  options.keep_events = 0;
  options.keep_pc_sample_records = false;
  options.keep_pm_samples = false;
  options.skip_other_events = true;
  options.slice = model.slice;
  return options;
}

}  // namespace

absl::Status ForEachPcRecords(const TraceModel& model,
                              const std::function<void(const PcSampleBatch&)>& visit) {
  if (model.kept_pc_sample_records) {
    for (const PcSampleBatch& batch : model.pc_sample_batches) visit(batch);
    return absl::OkStatus();
  }
  TraceModelOptions options = ReadAgainOptions(model);
  options.pc_records_sink = visit;
  return TraceModel::Load(model.source_name, options).status();
}

absl::Status ForEachPmSample(const TraceModel& model,
                             const std::function<void(const PmSample&)>& visit) {
  if (model.kept_pm_samples) {
    for (const PmSample& s : model.pm_samples) visit(s);
    return absl::OkStatus();
  }
  TraceModelOptions options = ReadAgainOptions(model);
  options.pm_samples_sink = visit;
  absl::StatusOr<TraceModel> again = TraceModel::Load(model.source_name, options);
  if (!again.ok()) return again.status();
  for (const PmSample& s : again->pm_samples) visit(s);  // raw, evaluated on load
  return absl::OkStatus();
}

}  // namespace warpscope
