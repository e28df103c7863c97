// The stats table's rows in one list, and the helpers that update a counter with its
// severity from the table.
#include "proto/writer/stats_table.h"

#include <array>

#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

constexpr std::array<const StatDef*, 104> kAllStats = {
    &stats::kWriterEventsWritten,
    &stats::kWriterEventsWrittenKind,
    &stats::kWriterBytesWritten,
    &stats::kWriterDroppedBufferFull,
    &stats::kWriterDroppedWriteError,
    &stats::kWriterBufferHighWater,
    &stats::kWriterDroppedTooLarge,
    &stats::kWriterDroppedAfterClose,
    &stats::kWriterTimestampsClamped,
    &stats::kWriterInternFailed,
    &stats::kWriterInternTableFull,
    &stats::kWriterPcBatchesSplit,
    &stats::kWriterWriteErrors,
    &stats::kWriterDefinitionsKeptBytes,
    &stats::kWriterDefinitionsNotKept,
    &stats::kWriterRingEvictedEvents,
    &stats::kWriterRingDumps,
    &stats::kWriterRingHeldHighWater,
    &stats::kCollectorErrors,
    &stats::kActivityBuffers,
    &stats::kActivityRecords,
    &stats::kActivityKernels,
    &stats::kActivityMemcpys,
    &stats::kActivityMemsets,
    &stats::kActivitySyncs,
    &stats::kActivityApiCalls,
    &stats::kActivityApiCallsFiltered,
    &stats::kActivityLaunchCallsLeftOut,
    &stats::kActivityInternalLaunches,
    &stats::kActivityBuffersAllocated,
    &stats::kActivityNvtxMarkers,
    &stats::kActivityKernelNamesDemangled,
    &stats::kActivityBufferHighWater,
    &stats::kActivityUnknownKinds,
    &stats::kActivityBuffersLost,
    &stats::kCuptiDroppedRecords,
    &stats::kCuptiDroppedRecordsTotal,
    &stats::kCuptiZeroTimestamps,
    &stats::kNvtxUnmatchedEnds,
    &stats::kNvtxUnclosedRanges,
    &stats::kNcclCalls,
    &stats::kNcclPayloadUnreadable,
    &stats::kCaptureLimitedWindows,
    &stats::kControlRefused,
    &stats::kApiCallsLogged,
    &stats::kApiCallsLaunches,
    &stats::kApiCallsRuntime,
    &stats::kApiCallsDropped,
    &stats::kApiCallsThreads,
    &stats::kStacksCaptured,
    &stats::kStacksNone,
    &stats::kStacksDistinct,
    &stats::kStacksFrames,
    &stats::kStacksCodeObjects,
    &stats::kStacksCaptureNs,
    &stats::kStacksNativeKnown,
    &stats::kPcBatches,
    &stats::kPcRecords,
    &stats::kPcSamples,
    &stats::kPcSamplesDropped,
    &stats::kPcHardwareBufferFull,
    &stats::kPcBatchesDropped,
    &stats::kPcGetDataErrors,
    &stats::kPcDrainCapped,
    &stats::kPcStartStopErrors,
    &stats::kPcContextsSampled,
    &stats::kPcContextsRefused,
    &stats::kPcDisabledPrivileges,
    &stats::kPcDisabledUnsupported,
    &stats::kPcDisabledBusy,
    &stats::kPcDisabledError,
    &stats::kPcDisabledPmSamplingChosen,
    &stats::kPcCubins,
    &stats::kPcCubinBytes,
    &stats::kPcCubinsLost,
    &stats::kPmSamples,
    &stats::kPmSamplesDropped,
    &stats::kPmSamplesInvalid,
    &stats::kPmOverflows,
    &stats::kPmDecodeErrors,
    &stats::kPmDisabledPrivileges,
    &stats::kPmDisabledHardwareBusy,
    &stats::kPmDisabledUnsupported,
    &stats::kPmDisabledMultiplePasses,
    &stats::kPmDisabledError,
    &stats::kPmDisabledLibraryMismatch,
    &stats::kPmDisabledDecoderOverloaded,
    &stats::kPmClockRemapped,
    &stats::kPmSamplesTooLong,
    &stats::kPmGaps,
    &stats::kPmGapNs,
    &stats::kPmDecodeBusyUs,
    &stats::kPmDecodeDataUs,
    &stats::kPmEvaluateUs,
    &stats::kPmImageResetUs,
    &stats::kPmRestarts,
    &stats::kPmDecodesCutShort,
    &stats::kPmSetupUs,
    &stats::kPmSetupPrepareUs,
    &stats::kPmSetupEnableUs,
    &stats::kPmRawImages,
    &stats::kPmRawImageBytes,
    &stats::kPmSampleInfoUs,
    &stats::kPmRawImagesDropped,
};

// The prefix a family row stands for ("collector_errors."), or the whole name.
constexpr std::string_view Prefix(std::string_view name) {
  const size_t open = name.find('<');
  return open == std::string_view::npos ? name : name.substr(0, open);
}

}  // namespace

std::span<const StatDef* const> AllStats() { return kAllStats; }

const StatDef* FindStat(std::string_view name) {
  for (const StatDef* stat : kAllStats) {
    if (stat->name == name) return stat;
  }
  for (const StatDef* stat : kAllStats) {
    const std::string_view prefix = Prefix(stat->name);
    if (prefix.size() < stat->name.size() && name.size() > prefix.size() &&
        name.starts_with(prefix)) {
      return stat;
    }
  }
  return nullptr;
}

std::string StatFamilyMember(const StatDef& family, std::string_view member) {
  return std::string(Prefix(family.name)) + std::string(member);
}

void AddToStat(TraceWriter& writer, const StatDef& stat, uint64_t delta) {
  writer.AddToCounter(stat.name, delta, stat.severity);
}

void SetStat(TraceWriter& writer, const StatDef& stat, uint64_t value) {
  writer.SetCounter(stat.name, value, stat.severity);
}

}  // namespace warpscope
