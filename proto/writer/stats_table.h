// The stats table: every counter the writer and the collectors put in Stats packets, with its
// severity and what it means. Call sites name a counter by its entry here and take the
// severity from it; `warpscope info` shows the meaning; docs/format.md lists the same rows (a
// test keeps the two equal).
#ifndef WARPSCOPE_PROTO_WRITER_STATS_TABLE_H_
#define WARPSCOPE_PROTO_WRITER_STATS_TABLE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "proto/writer/trace_records.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {

struct StatDef {
  // The counter's name; a name ending in ".<...>" stands for a family ("collector_errors.<
  // collector>"): the part before '<' is its prefix.
  std::string_view name;
  Severity severity;
  std::string_view meaning;  // One line.
};

namespace stats {

constexpr Severity kInfo = Severity::kInfo;
constexpr Severity kDataLoss = Severity::kDataLoss;
constexpr Severity kError = Severity::kError;

// ---- The trace writer (proto/writer). The first five are in every Stats packet, the others
// once they are non-zero. events_written (and per kind) and bytes_written describe the file
// they are in; the others count from Open.
// Every counter of events the writer dropped starts with this.
inline constexpr std::string_view kWriterDroppedPrefix = "writer.events_dropped.";
inline constexpr StatDef kWriterEventsWritten{
    "writer.events_written", kInfo,
    "packets other than Header, Stats and EndOfTrace (interned definitions count)"};
inline constexpr StatDef kWriterEventsWrittenKind{"writer.events_written.<packet field>", kInfo,
    "the same, per packet kind, e.g. writer.events_written.kernel"};
inline constexpr StatDef kWriterBytesWritten{
    "writer.bytes_written", kInfo, "in a Stats packet: bytes of the file before that packet"};
inline constexpr StatDef kWriterDroppedBufferFull{
    "writer.events_dropped.buffer_full", kDataLoss,
    "events dropped because the write buffers were full"};
inline constexpr StatDef kWriterDroppedWriteError{"writer.events_dropped.write_error", kDataLoss,
                                                  "events dropped after writing failed"};
inline constexpr StatDef kWriterBufferHighWater{
    "writer.buffer_high_water_bytes", kInfo,
    "most bytes encoded but not yet written, seen at chunk hand-over"};
inline constexpr StatDef kWriterDroppedTooLarge{
    "writer.events_dropped.too_large", kDataLoss,
    "packets larger than a chunk (one PC sample record, a huge string)"};
inline constexpr StatDef kWriterDroppedAfterClose{
    "writer.events_dropped.after_close", kDataLoss,
    "events after the writer closed (never in a file; visible in-process only)"};
inline constexpr StatDef kWriterTimestampsClamped{
    "writer.timestamps_clamped", kInfo,
    "an end before its start, or a time before time_base_ns: written as 0"};
inline constexpr StatDef kWriterInternFailed{
    "writer.intern_failed", kError,
    "interning could not remember a value (out of memory); it is re-emitted on next use"};
inline constexpr StatDef kWriterInternTableFull{
    "writer.intern_table_full", kInfo,
    "the intern tables reached their memory bound; new values are emitted on every use"};
inline constexpr StatDef kWriterPcBatchesSplit{
    "writer.pc_sample_batches_split", kInfo,
    "PC sample batches spread over several packets to fit a chunk"};
inline constexpr StatDef kWriterWriteErrors{"writer.write_errors", kError,
                                            "write(2)/close(2) failed; writing stopped"};
inline constexpr StatDef kWriterDefinitionsKeptBytes{
    "writer.definitions_kept_bytes", kInfo,
    "memory holding the definitions kept for next files and flight-recorder dumps"};
inline constexpr StatDef kWriterDefinitionsNotKept{
    "writer.definitions_not_kept", kDataLoss,
    "definitions past the bound on kept ones: files begun later may lack what they refer to"};
inline constexpr StatDef kWriterRingEvictedEvents{
    "writer.ring_evicted_events", kInfo,
    "flight recorder: events let go before their time to make room (the window held is shorter)"};
inline constexpr StatDef kWriterRingDumps{"writer.ring_dumps", kInfo,
                                          "flight recorder: dumps written"};
inline constexpr StatDef kWriterRingHeldHighWater{
    "writer.ring_held_high_water_bytes", kInfo,
    "flight recorder: most bytes of events held at once"};

// ---- The session (libinject).
inline constexpr StatDef kCollectorErrors{"collector_errors.<collector>", kError,
    "a collector (or the session) failed and disabled itself"};

// ---- Activity tracing (collectors/activity), CUPTI's buffers and NVTX ranges.
inline constexpr StatDef kActivityBuffers{"activity.buffers", kInfo,
    "activity buffers CUPTI handed back"};
inline constexpr StatDef kActivityRecords{"activity.records", kInfo,
    "activity records read from them"};
inline constexpr StatDef kActivityKernels{"activity.kernels", kInfo,
    "kernel records"};
inline constexpr StatDef kActivityMemcpys{"activity.memcpys", kInfo,
    "memcpy records"};
inline constexpr StatDef kActivityMemsets{"activity.memsets", kInfo,
    "memset records"};
inline constexpr StatDef kActivitySyncs{"activity.syncs", kInfo,
    "CUPTI synchronization records (kind sync where its callbacks were refused)"};
inline constexpr StatDef kActivityApiCalls{"activity.api_calls", kInfo,
    "runtime and driver API call records"};
inline constexpr StatDef kActivityApiCallsFiltered{"activity.api_calls_filtered", kInfo,
    "trivial API call records CUPTI recorded anyway and the API filter dropped (0 where CUPTI accepts leaving them out)"};
inline constexpr StatDef kActivityLaunchCallsLeftOut{"activity.launch_calls_left_out", kInfo,
    "runtime launch records CUPTI made although the launch log records launches, not written (0 where CUPTI accepts leaving them out)"};
inline constexpr StatDef kActivityInternalLaunches{"activity.internal_launches", kInfo,
    "kernel launches the driver made outside any API function (INTERNAL_LAUNCH_API records)"};
inline constexpr StatDef kActivityBuffersAllocated{"activity.buffers_allocated", kInfo,
    "activity buffers allocated for CUPTI"};
inline constexpr StatDef kActivityNvtxMarkers{"activity.nvtx_markers", kInfo,
    "NVTX marker records"};
inline constexpr StatDef kActivityKernelNamesDemangled{"activity.kernel_names_demangled", kInfo,
    "kernel names demangled"};
inline constexpr StatDef kActivityBufferHighWater{"activity.buffer_high_water_bytes", kInfo,
    "most bytes CUPTI filled in one activity buffer"};
inline constexpr StatDef kActivityUnknownKinds{"activity.unknown_kinds", kInfo,
    "activity records of a kind warpscope does not translate"};
inline constexpr StatDef kActivityBuffersLost{"activity.buffers_lost", kDataLoss,
    "activity buffers whose translation failed: their records are lost"};
inline constexpr StatDef kCuptiDroppedRecords{"cupti.dropped_records", kDataLoss,
    "records CUPTI dropped (no host buffer in time), added at each flush"};
inline constexpr StatDef kCuptiDroppedRecordsTotal{"cupti.dropped_records_total", kDataLoss,
    "the total of cupti.dropped_records over the run"};
inline constexpr StatDef kCuptiZeroTimestamps{"cupti.zero_timestamp_records", kDataLoss,
    "records without timestamps, written as 0: start == end == 0 (CUPTI ran out of device buffers) or ~0 (work that never ran: the process ended first)"};
inline constexpr StatDef kNvtxUnmatchedEnds{"nvtx.unmatched_ends", kInfo,
    "NVTX range ends without a start"};
inline constexpr StatDef kNvtxUnclosedRanges{"nvtx.unclosed_ranges", kInfo,
    "NVTX ranges still open at the end, not written"};

// ---- NCCL's calls (collectors/nccl).
inline constexpr StatDef kNcclCalls{"nccl.calls", kInfo,
    "NCCL API calls recorded from NCCL's NVTX ranges"};
inline constexpr StatDef kNcclPayloadUnreadable{"nccl.payload_unreadable", kInfo,
    "NCCL calls whose NVTX payload could not be read (unknown schema or size): recorded without communicator and bytes"};

// ---- Capture windows and the control channel (libinject/session_*.cc; docs/record.md).
inline constexpr StatDef kCaptureLimitedWindows{"capture.limited_windows", kInfo,
    "capture windows closed by --max-size or --max-duration (trigger limit)"};
inline constexpr StatDef kControlRefused{"control.refused", kInfo,
    "control commands refused: the peer was neither the process's user nor root"};

// ---- The launch log: CUDA calls logged in callbacks (collectors/api_calls; docs/record.md).
inline constexpr StatDef kApiCallsLogged{"api_calls.logged", kInfo,
    "CUDA calls logged on the program's threads: every kernel launch, every runtime API call but the trivial queries, and the calls whose stack was taken"};
inline constexpr StatDef kApiCallsLaunches{"api_calls.launches", kInfo,
    "launch calls written from the log (ApiCallEvent)"};
inline constexpr StatDef kApiCallsRuntime{"api_calls.runtime_calls", kInfo,
    "other calls written from the log (ApiCallEvent): runtime calls (kind runtime), synchronize calls of both APIs (kind sync)"};
inline constexpr StatDef kApiCallsDropped{"api_calls.dropped", kDataLoss,
    "calls lost: the log's memory bound was reached before warpscope's thread drained it"};
inline constexpr StatDef kApiCallsThreads{"api_calls.threads", kInfo,
    "threads that logged calls"};

// ---- Call stacks (collectors/stacks; docs/stacks.md).
inline constexpr StatDef kStacksCaptured{"stacks.captured", kInfo,
    "CUDA calls whose stack was looked for (syncs, copies, launches as selected)"};
inline constexpr StatDef kStacksNone{"stacks.none", kInfo,
    "of those, calls with no stack: a launch on a thread running no Python in a Python process (autograd's, NCCL's: one in 1024 takes its native stack), or a Python that cannot be read"};
inline constexpr StatDef kStacksDistinct{"stacks.distinct", kInfo,
    "distinct stacks written (CallStack)"};
inline constexpr StatDef kStacksFrames{"stacks.frames", kInfo,
    "distinct places written (StackFrame)"};
inline constexpr StatDef kStacksCodeObjects{"stacks.code_objects", kInfo,
    "Python code objects read for their file and function, each once"};
inline constexpr StatDef kStacksCaptureNs{"stacks.capture_ns", kInfo,
    "time the program's threads spent taking stacks, ns (the first 64 captures timed, then "
    "one in 64 for the rest)"};
inline constexpr StatDef kStacksNativeKnown{"stacks.native_known", kInfo,
    "native stacks found by walking the frame sizes learned to a stack seen before, with no full "
    "unwind"};

// ---- PC sampling (collectors/pc_sampling; docs/pc_sampling.md).
inline constexpr StatDef kPcBatches{"pc_sampling.batches", kInfo,
    "PC sample batches written"};
inline constexpr StatDef kPcRecords{"pc_sampling.pc_records", kInfo,
    "per-PC records in them"};
inline constexpr StatDef kPcSamples{"pc_sampling.samples", kInfo,
    "samples written (sum of per-PC samples)"};
inline constexpr StatDef kPcSamplesDropped{"pc_sampling.samples_dropped", kDataLoss,
    "samples CUPTI dropped (droppedSamples)"};
inline constexpr StatDef kPcHardwareBufferFull{"pc_sampling.hardware_buffer_full", kDataLoss,
    "times the hardware sample buffer was full"};
inline constexpr StatDef kPcBatchesDropped{"pc_sampling.batches_dropped", kDataLoss,
    "batches the writer could not take whole"};
inline constexpr StatDef kPcGetDataErrors{"pc_sampling.get_data_errors", kError,
    "GetData errors other than a full buffer; sampling goes on"};
inline constexpr StatDef kPcDrainCapped{"pc_sampling.drain_rounds_capped", kInfo,
    "drains stopped by their round limit with data left"};
inline constexpr StatDef kPcStartStopErrors{"pc_sampling.start_stop_errors", kError,
    "Start or Stop errors"};
inline constexpr StatDef kPcContextsSampled{"pc_sampling.contexts_sampled", kInfo,
    "contexts PC sampling ran on"};
inline constexpr StatDef kPcContextsRefused{"pc_sampling.contexts_refused_same_device", kDataLoss,
    "contexts not sampled: another context of the process samples their device"};
inline constexpr StatDef kPcDisabledPrivileges{
    "pc_sampling.disabled.insufficient_privileges", kError,
    "off for the process: profiling is restricted to admins"};
inline constexpr StatDef kPcDisabledUnsupported{"pc_sampling.disabled.unsupported", kError,
    "off for a context: the device or configuration has no PC sampling"};
inline constexpr StatDef kPcDisabledBusy{"pc_sampling.disabled.gpu_busy", kError,
    "off for a context: another process samples the GPU"};
inline constexpr StatDef kPcDisabledError{"pc_sampling.disabled.error", kError,
    "off for a context: another setup or Start error"};
inline constexpr StatDef kPcDisabledPmSamplingChosen{
    "pc_sampling.disabled.pm_sampling_chosen", kDataLoss,
    "PC and PM sampling both asked for: PM sampling kept, PC sampling off"};
inline constexpr StatDef kPcCubins{"pc_sampling.cubins", kInfo,
    "CubinImage records written"};
inline constexpr StatDef kPcCubinBytes{"pc_sampling.cubin_bytes", kInfo,
    "their image bytes"};
inline constexpr StatDef kPcCubinsLost{"pc_sampling.cubins_lost", kDataLoss,
    "cubins not written whole (or without a CRC): their PCs cannot be mapped offline"};

// ---- PM sampling (collectors/pm_sampling; docs/pm_sampling.md).
inline constexpr StatDef kPmSamples{"pm_sampling.samples", kInfo,
    "samples written"};
inline constexpr StatDef kPmSamplesDropped{"pm_sampling.samples_dropped", kDataLoss,
    "samples the writer dropped (memory bound)"};
inline constexpr StatDef kPmSamplesInvalid{"pm_sampling.samples_invalid", kDataLoss,
    "samples with a wrong value count or an empty interval"};
inline constexpr StatDef kPmOverflows{"pm_sampling.overflows", kDataLoss,
    "hardware buffer overflows (samples lost)"};
inline constexpr StatDef kPmDecodeErrors{"pm_sampling.decode_errors", kError,
    "decode or evaluation failures"};
inline constexpr StatDef kPmDisabledPrivileges{
    "pm_sampling.disabled.insufficient_privileges", kError,
    "off: counters restricted to admins"};
inline constexpr StatDef kPmDisabledHardwareBusy{"pm_sampling.disabled.hardware_busy", kError,
    "off: another profiler holds the counters"};
inline constexpr StatDef kPmDisabledUnsupported{"pm_sampling.disabled.unsupported_device", kError,
    "off: device, vGPU/MIG or metric not supported"};
inline constexpr StatDef kPmDisabledMultiplePasses{"pm_sampling.disabled.multiple_passes", kError,
    "off: the metric set needs more than one pass"};
inline constexpr StatDef kPmDisabledError{"pm_sampling.disabled.error", kError,
    "off: another setup error, or a restart after an overflow failed"};
inline constexpr StatDef kPmDisabledLibraryMismatch{"pm_sampling.disabled.library_mismatch", kError,
    "off: libnvperf_host.so loaded from another folder than libcupti's"};
inline constexpr StatDef kPmDisabledDecoderOverloaded{
    "pm_sampling.disabled.decoder_overloaded", kError,
    "off on a device: the decoder could not keep up with the interval"};
inline constexpr StatDef kPmClockRemapped{"pm_sampling.clock_remapped", kInfo,
    "sample times mapped onto the trace's clock"};
inline constexpr StatDef kPmSamplesTooLong{"pm_sampling.samples_discarded_too_long", kInfo,
    "samples much longer than the interval, dropped"};
inline constexpr StatDef kPmGaps{"pm_sampling.gaps", kDataLoss,
    "times without samples between two samples"};
inline constexpr StatDef kPmGapNs{"pm_sampling.gap_ns", kDataLoss,
    "their total length, ns"};
inline constexpr StatDef kPmDecodeBusyUs{"pm_sampling.decode_busy_us", kInfo,
    "decode thread time, µs"};
inline constexpr StatDef kPmDecodeDataUs{"pm_sampling.decode_data_us", kInfo,
    "of it, CUPTI's decode of raw records, µs"};
inline constexpr StatDef kPmEvaluateUs{"pm_sampling.evaluate_us", kInfo,
    "of it, metric evaluation, µs"};
inline constexpr StatDef kPmImageResetUs{"pm_sampling.image_reset_us", kInfo,
    "counter data image re-initialisation after each decode, µs"};
inline constexpr StatDef kPmRestarts{"pm_sampling.restarts_after_overflow", kDataLoss,
    "restarts after a full hardware buffer (the time between is a gap)"};
inline constexpr StatDef kPmDecodesCutShort{"pm_sampling.decodes_cut_short", kDataLoss,
    "drains stopped by their time budget with samples left"};
inline constexpr StatDef kPmSetupUs{"pm_sampling.setup_us", kInfo,
    "device setup time on the thread creating the context, µs"};
inline constexpr StatDef kPmSetupPrepareUs{"pm_sampling.setup_prepare_us", kInfo,
    "of it, PrepareDevice, µs"};
inline constexpr StatDef kPmSetupEnableUs{"pm_sampling.setup_enable_us", kInfo,
    "of it, EnableDevice, µs"};
inline constexpr StatDef kPmRawImages{"pm_sampling.raw_images", kInfo,
    "raw counter data images written (WARPSCOPE_PM_EVALUATE=offline/both)"};
inline constexpr StatDef kPmRawImageBytes{"pm_sampling.raw_image_bytes", kInfo,
    "their bytes"};
inline constexpr StatDef kPmSampleInfoUs{"pm_sampling.sample_info_us", kInfo,
    "time reading sample times from images, µs"};
inline constexpr StatDef kPmRawImagesDropped{"pm_sampling.raw_images_dropped", kDataLoss,
    "raw images the writer dropped"};

}  // namespace stats

// Every row of the table, in the order docs/format.md lists them.
std::span<const StatDef* const> AllStats();

// The row of `name` (a family's row for a name in it), or nullptr.
const StatDef* FindStat(std::string_view name);

// A member's name in a family row: StatFamilyMember(stats::kCollectorErrors, "pm_sampling")
// is "collector_errors.pm_sampling".
std::string StatFamilyMember(const StatDef& family, std::string_view member);

// Counter updates with the table's severity (TraceWriter::AddToCounter and SetCounter).
void AddToStat(TraceWriter& writer, const StatDef& stat, uint64_t delta);
void SetStat(TraceWriter& writer, const StatDef& stat, uint64_t value);

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_WRITER_STATS_TABLE_H_
