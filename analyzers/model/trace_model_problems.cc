// The import problems (TraceModel::import_counters): what the reader met and what did not add
// up in the sample tables (import_problems.h, shared with the columnar decoder), and what only
// TraceModel::Load counts: raw PM samples, overflowing ends, values no GPU has.
#include <cstdint>
#include <string>
#include <vector>

#include "analyzers/model/import_problems.h"
#include "analyzers/model/trace_limits.h"
#include "analyzers/model/trace_model_builder.h"

namespace warpscope {

// What the reader met: truncation, references it could not resolve, what it does not know.
void AppendReaderProblems(const TraceReader& reader, const TruncationInfo& t,
                          std::vector<StatCounter>* out) {
  const ReaderCounters& rc = reader.counters();
  const v1::Header& h = reader.header();
  const auto Count = [out](const char* name, uint64_t value, v1::Severity severity,
                           const char* meaning) {
    if (value != 0) out->push_back({name, value, severity, meaning});
  };
  using v1::SEVERITY_DATA_LOSS;
  using v1::SEVERITY_ERROR;
  using v1::SEVERITY_INFO;
  Count("reader.truncated_bytes", t.partial_packet ? t.bytes_lost : 0, SEVERITY_DATA_LOSS,
        "bytes of an incomplete last packet (the file was cut mid-write)");
  Count("reader.missing_end_of_trace", t.saw_end_of_trace ? 0 : 1, SEVERITY_DATA_LOSS,
        "no end-of-trace marker: the process was killed or writing stopped early");
  Count("reader.packets_after_end_of_trace", t.packets_after_end, SEVERITY_ERROR,
        "whole packets after the end-of-trace marker");
  Count("reader.undefined_string_refs", rc.undefined_string_refs, SEVERITY_ERROR,
        "references to interned strings not defined before use (named <unknown:ID>)");
  Count("reader.undefined_launch_config_refs", rc.undefined_launch_config_refs, SEVERITY_ERROR,
        "kernels whose launch configuration was not defined before use");
  Count("reader.undefined_thread_refs", rc.undefined_thread_refs, SEVERITY_ERROR,
        "references to threads not defined before use");
  Count("reader.redefined_ids", rc.redefined_ids, SEVERITY_ERROR,
        "interned ids defined again with a different value (the last definition wins)");
  Count("reader.unknown_packets", rc.unknown_packets, SEVERITY_INFO,
        "packets of a kind this warpscope does not know (newer format minor), skipped");
  Count("reader.packets_with_unknown_fields", rc.packets_with_unknown_fields, SEVERITY_INFO,
        "packets with fields this warpscope does not know (newer format minor), ignored");
  Count("reader.extra_headers", rc.extra_headers, SEVERITY_ERROR,
        "header packets after the first, ignored");
  Count("reader.invalid_utf8_strings", rc.invalid_utf8_strings, SEVERITY_INFO,
        "strings that were not valid UTF-8; each bad byte reads as '?'");
  Count("reader.newer_format_minor",
        h.format_major() == kReaderFormatMajor && h.format_minor() > kReaderFormatMinor ? 1 : 0,
        SEVERITY_INFO, "the file's format minor is newer than this warpscope's; new data skipped");
}

// What did not add up while descriptions and samples became tables.
void AppendSampleProblems(const SampleTableProblems& s, std::vector<StatCounter>* out) {
  using v1::SEVERITY_DATA_LOSS;
  using v1::SEVERITY_ERROR;
  const auto Count = [out](const char* name, uint64_t value, v1::Severity severity,
                           const char* meaning) {
    if (value != 0) out->push_back({name, value, severity, meaning});
  };
  Count("model.redefined_pm_metric_sets", s.redefined_metric_sets, SEVERITY_ERROR,
        "PM metric sets defined again with other metrics (samples use the one in force)");
  Count("model.redefined_devices", s.redefined_devices, SEVERITY_ERROR,
        "devices described again differently (the first description is kept)");
  Count("model.redefined_contexts", s.redefined_contexts, SEVERITY_ERROR,
        "contexts described again differently (the first description is kept)");
  Count("model.pm_samples_without_metric_set", s.pm_samples_without_set, SEVERITY_ERROR,
        "PM samples whose metric set was not defined before them");
  Count("model.pm_sample_value_count_mismatch", s.pm_sample_value_mismatches, SEVERITY_ERROR,
        "PM samples whose value count differs from their metric set's metric count");
  Count("model.pc_stall_reasons_length_mismatch", s.pc_stall_reason_length_mismatches,
        SEVERITY_ERROR,
        "PcStallReasons packets with more indices than names or the reverse (the extra ones "
        "are ignored)");
  Count("model.orphan_pc_sample_continuations", s.orphan_pc_continuations, SEVERITY_ERROR,
        "PC sample continuation packets with no batch of the same device and context before "
        "them (kept as batches of their own)");
  Count("model.incomplete_cubins", s.incomplete_cubins, SEVERITY_DATA_LOSS,
        "cubins of which some parts are missing (PCs in them cannot be mapped to SASS)");
  Count("model.unmatched_capture_window_ends", s.unmatched_capture_window_ends, SEVERITY_ERROR,
        "capture-window end edges without a matching begin");
}

// What did not add up while packets became tables (the sample tables' problems first).
void TraceModelBuilder::CountModelProblems() {
  const TraceModel& m = model_;
  AppendSampleProblems(samples_.Problems(), &model_.import_counters);
  using v1::SEVERITY_ERROR;
  using v1::SEVERITY_INFO;
  const PmCounterDataImporter::Counts& raw = pm_counter_data_.counts();
  Count("model.pm_raw_samples_evaluated", raw.evaluated, SEVERITY_INFO,
        "raw PM samples (counter data images) evaluated with CUPTI's host API at load");
  Count("model.pm_raw_samples_not_evaluated", raw.not_evaluated, SEVERITY_ERROR,
        m.pm_samples_unavailable.empty() ? std::string("raw PM samples left unevaluated")
                                         : m.pm_samples_unavailable);
  Count("model.pm_raw_sample_evaluation_errors", raw.evaluation_errors, SEVERITY_ERROR,
        "raw PM samples CUPTI could not evaluate (corrupt image or sample index)");
  Count("model.pm_raw_records_malformed", raw.malformed_records, SEVERITY_ERROR,
        "raw PM sample records without a metric set (with a chip name) before them or with "
        "arrays of different lengths");
  Count("model.pm_raw_samples_superseded", raw.superseded, SEVERITY_INFO,
        "raw PM samples of metric sets that also have values evaluated by the process "
        "(those are used)");
  Count("model.events_with_overflowing_end", overflowing_end_events_, SEVERITY_ERROR,
        "events whose end overflows the 64-bit time range");
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
  using v1::SEVERITY_ERROR;
  Count("model.devices_out_of_range", devices_out_of_range, SEVERITY_ERROR,
        "devices with a limit far beyond any GPU's (listed under devices); occupancy is not "
        "computed for their kernels");
  Count("model.launch_configs_out_of_range", launches_out_of_range, SEVERITY_ERROR,
        "launch configurations with a value far beyond CUDA's limits; occupancy is not computed "
        "for their kernels");
  Count("model.pm_samples_out_of_range", samples_out_of_range, SEVERITY_ERROR,
        "PM samples whose end overflows the 64-bit time range or with a value that is not a "
        "finite number; the analyses skip them");
}

}  // namespace warpscope
