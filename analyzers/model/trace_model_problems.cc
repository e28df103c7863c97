// The import problems (TraceModel::import_counters): what the reader met and what did not add
// up in the sample tables (import_problems.h, shared with the columnar decoder), and what only
// TraceModel::Load counts: raw PM samples, overflowing ends, values no GPU has.
#include <cstdint>
#include <string>
#include <vector>

#include "analyzers/model/import_counters.h"
#include "analyzers/model/import_problems.h"
#include "analyzers/model/trace_limits.h"
#include "analyzers/model/trace_model_builder.h"

namespace warpscope {

// What the reader met: truncation, references it could not resolve, what it does not know.
void AppendReaderProblems(const TraceReader& reader, const TruncationInfo& t,
                          std::vector<StatCounter>* out) {
  const ReaderCounters& rc = reader.counters();
  const v1::Header& h = reader.header();
  const auto Count = [out](const StatDef& counter, uint64_t value) {
    AppendImportCounter(counter, value, out);
  };
  Count(import_counters::kReaderTruncatedBytes, t.partial_packet ? t.bytes_lost : 0);
  Count(import_counters::kReaderMissingEndOfTrace, t.saw_end_of_trace ? 0 : 1);
  Count(import_counters::kReaderPacketsAfterEndOfTrace, t.packets_after_end);
  Count(import_counters::kReaderUndefinedStringRefs, rc.undefined_string_refs);
  Count(import_counters::kReaderUndefinedLaunchConfigRefs, rc.undefined_launch_config_refs);
  Count(import_counters::kReaderUndefinedThreadRefs, rc.undefined_thread_refs);
  Count(import_counters::kReaderUndefinedStackRefs, rc.undefined_stack_refs);
  Count(import_counters::kReaderUndefinedStackFrameRefs, rc.undefined_stack_frame_refs);
  Count(import_counters::kReaderRedefinedIds, rc.redefined_ids);
  Count(import_counters::kReaderUnknownPackets, rc.unknown_packets);
  Count(import_counters::kReaderPacketsWithUnknownFields, rc.packets_with_unknown_fields);
  Count(import_counters::kReaderExtraHeaders, rc.extra_headers);
  Count(import_counters::kReaderInvalidUtf8Strings, rc.invalid_utf8_strings);
  Count(import_counters::kReaderNewerFormatMinor,
        h.format_major() == kReaderFormatMajor && h.format_minor() > kReaderFormatMinor ? 1 : 0);
}

// What did not add up while descriptions and samples became tables.
void AppendSampleProblems(const SampleTableProblems& s, std::vector<StatCounter>* out) {
  const auto Count = [out](const StatDef& counter, uint64_t value) {
    AppendImportCounter(counter, value, out);
  };
  Count(import_counters::kModelRedefinedPmMetricSets, s.redefined_metric_sets);
  Count(import_counters::kModelRedefinedDevices, s.redefined_devices);
  Count(import_counters::kModelRedefinedContexts, s.redefined_contexts);
  Count(import_counters::kModelPmSamplesWithoutMetricSet, s.pm_samples_without_set);
  Count(import_counters::kModelPmSampleValueCountMismatch, s.pm_sample_value_mismatches);
  Count(import_counters::kModelPcStallReasonsLengthMismatch, s.pc_stall_reason_length_mismatches);
  Count(import_counters::kModelOrphanPcSampleContinuations, s.orphan_pc_continuations);
  Count(import_counters::kModelIncompleteCubins, s.incomplete_cubins);
  Count(import_counters::kModelUnmatchedCaptureWindowEnds, s.unmatched_capture_window_ends);
}

// What did not add up while packets became tables (the sample tables' problems first).
void TraceModelBuilder::CountModelProblems() {
  const TraceModel& m = model_;
  AppendSampleProblems(samples_.Problems(), &model_.import_counters);
  const PmCounterDataImporter::Counts& raw = pm_counter_data_.counts();
  Count(import_counters::kModelPmRawSamplesEvaluated, raw.evaluated);
  Count(import_counters::kModelPmRawSamplesNotEvaluated, raw.not_evaluated,
        m.pm_samples_unavailable);
  Count(import_counters::kModelPmRawSampleEvaluationErrors, raw.evaluation_errors);
  Count(import_counters::kModelPmRawRecordsMalformed, raw.malformed_records);
  Count(import_counters::kModelPmRawSamplesSuperseded, raw.superseded);
  Count(import_counters::kModelEventsWithOverflowingEnd, overflowing_end_events_);
}

void TraceModelBuilder::CountValuesOutOfRange() {
  const TraceModel& m = model_;
  // Values no GPU has (trace_limits.h): the analyses leave these out and say why.
  uint64_t devices_out_of_range = 0, launches_out_of_range = 0, samples_out_of_range = 0;
  for (const DeviceInfo& d : m.devices) devices_out_of_range += !DeviceLimitsProblem(d).empty();
  for (const LaunchConfig& l : *m.launch_configs_) {
    launches_out_of_range += !LaunchConfigProblem(l).empty();
  }
  for (const PmSample& s : m.pm_samples) samples_out_of_range += !PmSampleProblem(s).empty();
  Count(import_counters::kModelDevicesOutOfRange, devices_out_of_range);
  Count(import_counters::kModelLaunchConfigsOutOfRange, launches_out_of_range);
  Count(import_counters::kModelPmSamplesOutOfRange, samples_out_of_range);
}

}  // namespace warpscope
