// The import counters: what reading a trace met that did not stop it (truncation, references
// it could not resolve, descriptions that do not add up, values no GPU has), counted per trace
// in TraceModel::import_counters and TraceColumns::import_counters and shown by `warpscope
// info` under "import problems". One row each, in the shape of the stats table
// (proto/writer/stats_table.h): name, severity, one-line meaning. docs/format.md lists the same
// rows (import_counters_test keeps the two equal); the Python package names each of them
// (warpscope/native.py; test_stats.py checks that none is left out).
#ifndef WARPSCOPE_ANALYZERS_MODEL_IMPORT_COUNTERS_H_
#define WARPSCOPE_ANALYZERS_MODEL_IMPORT_COUNTERS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "proto/writer/stats_table.h"

namespace warpscope {
namespace import_counters {

using stats::kDataLoss;
using stats::kError;
using stats::kInfo;

inline constexpr StatDef kReaderTruncatedBytes{
    "reader.truncated_bytes", kDataLoss,
    "bytes of an incomplete last packet (the file was cut mid-write)"};
inline constexpr StatDef kReaderMissingEndOfTrace{
    "reader.missing_end_of_trace", kDataLoss,
    "no end-of-trace marker: the process was killed or writing stopped early"};
inline constexpr StatDef kReaderPacketsAfterEndOfTrace{
    "reader.packets_after_end_of_trace", kError, "whole packets after the end-of-trace marker"};
inline constexpr StatDef kReaderUndefinedStringRefs{
    "reader.undefined_string_refs", kError,
    "references to interned strings not defined before use (named <unknown:ID>)"};
inline constexpr StatDef kReaderUndefinedLaunchConfigRefs{
    "reader.undefined_launch_config_refs", kError,
    "kernels whose launch configuration was not defined before use"};
inline constexpr StatDef kReaderUndefinedThreadRefs{"reader.undefined_thread_refs", kError,
                                                    "references to threads not defined before use"};
inline constexpr StatDef kReaderUndefinedStackRefs{
    "reader.undefined_stack_refs", kError,
    "API calls whose call stack was not defined before use (their call site reads \"no stack\")"};
inline constexpr StatDef kReaderUndefinedStackFrameRefs{
    "reader.undefined_stack_frame_refs", kError,
    "frames of call stacks that were not defined before the stack (left out of the stack)"};
inline constexpr StatDef kReaderRedefinedIds{
    "reader.redefined_ids", kError,
    "interned ids defined again with a different value (the last definition wins)"};
inline constexpr StatDef kReaderUnknownPackets{
    "reader.unknown_packets", kInfo,
    "packets of a kind this warpscope does not know (newer format minor), skipped"};
inline constexpr StatDef kReaderPacketsWithUnknownFields{
    "reader.packets_with_unknown_fields", kInfo,
    "packets with fields this warpscope does not know (newer format minor), ignored"};
inline constexpr StatDef kReaderExtraHeaders{"reader.extra_headers", kError,
                                             "header packets after the first, ignored"};
inline constexpr StatDef kReaderInvalidUtf8Strings{
    "reader.invalid_utf8_strings", kInfo,
    "strings that were not valid UTF-8; each bad byte reads as '?'"};
inline constexpr StatDef kReaderNewerFormatMinor{
    "reader.newer_format_minor", kInfo,
    "the file's format minor is newer than this warpscope's; new data skipped"};
inline constexpr StatDef kModelRedefinedPmMetricSets{
    "model.redefined_pm_metric_sets", kError,
    "PM metric sets defined again with other metrics (samples use the one in force)"};
inline constexpr StatDef kModelRedefinedDevices{
    "model.redefined_devices", kError,
    "devices described again differently (the first description is kept)"};
inline constexpr StatDef kModelRedefinedContexts{
    "model.redefined_contexts", kError,
    "contexts described again differently (the first description is kept)"};
inline constexpr StatDef kModelPmSamplesWithoutMetricSet{
    "model.pm_samples_without_metric_set", kError,
    "PM samples whose metric set was not defined before them"};
inline constexpr StatDef kModelPmSampleValueCountMismatch{
    "model.pm_sample_value_count_mismatch", kError,
    "PM samples whose value count differs from their metric set's metric count"};
inline constexpr StatDef kModelPcStallReasonsLengthMismatch{
    "model.pc_stall_reasons_length_mismatch", kError,
    "PcStallReasons packets with more indices than names or the reverse (the extra ones are "
    "ignored)"};
inline constexpr StatDef kModelUndefinedPcStallReasonRefs{
    "model.undefined_pc_stall_reason_refs", kError,
    "PC samples whose stall reason index their device's PcStallReasons does not name (named "
    "<unknown:INDEX>; counted by the Python frames)"};
inline constexpr StatDef kModelOrphanPcSampleContinuations{
    "model.orphan_pc_sample_continuations", kError,
    "PC sample continuation packets with no batch of the same device and context before them (kept "
    "as batches of their own)"};
inline constexpr StatDef kModelIncompleteCubins{
    "model.incomplete_cubins", kDataLoss,
    "cubins of which some parts are missing (PCs in them cannot be mapped to SASS)"};
inline constexpr StatDef kModelUnmatchedCaptureWindowEnds{
    "model.unmatched_capture_window_ends", kError,
    "capture-window end edges without a matching begin"};
inline constexpr StatDef kModelPmRawSamplesEvaluated{
    "model.pm_raw_samples_evaluated", kInfo,
    "raw PM samples (counter data images) evaluated with CUPTI's host API at load"};
inline constexpr StatDef kModelPmRawSamplesNotEvaluated{"model.pm_raw_samples_not_evaluated",
                                                        kError, "raw PM samples left unevaluated"};
inline constexpr StatDef kModelPmRawSampleEvaluationErrors{
    "model.pm_raw_sample_evaluation_errors", kError,
    "raw PM samples CUPTI could not evaluate (corrupt image or sample index)"};
inline constexpr StatDef kModelPmRawRecordsMalformed{
    "model.pm_raw_records_malformed", kError,
    "raw PM sample records without a metric set (with a chip name) before them or with arrays of "
    "different lengths"};
inline constexpr StatDef kModelPmRawSamplesSuperseded{
    "model.pm_raw_samples_superseded", kInfo,
    "raw PM samples of metric sets that also have values evaluated by the process (those are "
    "used)"};
inline constexpr StatDef kModelEventsWithOverflowingEnd{
    "model.events_with_overflowing_end", kError,
    "events whose end overflows the 64-bit time range"};
inline constexpr StatDef kModelDevicesOutOfRange{
    "model.devices_out_of_range", kError,
    "devices with a limit far beyond any GPU's (listed under devices); occupancy is not "
    "computed for their kernels"};
inline constexpr StatDef kModelLaunchConfigsOutOfRange{
    "model.launch_configs_out_of_range", kError,
    "launch configurations with a value far beyond CUDA's limits; occupancy is not computed for "
    "their kernels"};
inline constexpr StatDef kModelPmSamplesOutOfRange{
    "model.pm_samples_out_of_range", kError,
    "PM samples whose end overflows the 64-bit time range or with a value that is not a finite "
    "number; the analyses skip them"};

}  // namespace import_counters

// Every import counter, in the order docs/format.md lists them.
std::span<const StatDef* const> AllImportCounters();

// Appends `counter` with `value` to `out`, unless the value is 0. `meaning`, when not empty,
// says more than the row's meaning for this trace (why raw PM samples were not evaluated).
void AppendImportCounter(const StatDef& counter, uint64_t value, std::vector<StatCounter>* out,
                         std::string meaning = {});

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_IMPORT_COUNTERS_H_
