// The import counters in one list, and how one joins a trace's counters.
#include "analyzers/model/import_counters.h"

#include <array>
#include <utility>

namespace warpscope {
namespace {

using namespace import_counters;  // NOLINT(google-build-using-namespace): the rows only

constexpr std::array<const StatDef*, 33> kAll = {
    &kReaderTruncatedBytes,
    &kReaderMissingEndOfTrace,
    &kReaderPacketsAfterEndOfTrace,
    &kReaderUndefinedStringRefs,
    &kReaderUndefinedLaunchConfigRefs,
    &kReaderUndefinedThreadRefs,
    &kReaderUndefinedStackRefs,
    &kReaderUndefinedStackFrameRefs,
    &kReaderRedefinedIds,
    &kReaderUnknownPackets,
    &kReaderPacketsWithUnknownFields,
    &kReaderExtraHeaders,
    &kReaderInvalidUtf8Strings,
    &kReaderNewerFormatMinor,
    &kModelRedefinedPmMetricSets,
    &kModelRedefinedDevices,
    &kModelRedefinedContexts,
    &kModelPmSamplesWithoutMetricSet,
    &kModelPmSampleValueCountMismatch,
    &kModelPcStallReasonsLengthMismatch,
    &kModelUndefinedPcStallReasonRefs,
    &kModelOrphanPcSampleContinuations,
    &kModelIncompleteCubins,
    &kModelUnmatchedCaptureWindowEnds,
    &kModelPmRawSamplesEvaluated,
    &kModelPmRawSamplesNotEvaluated,
    &kModelPmRawSampleEvaluationErrors,
    &kModelPmRawRecordsMalformed,
    &kModelPmRawSamplesSuperseded,
    &kModelEventsWithOverflowingEnd,
    &kModelDevicesOutOfRange,
    &kModelLaunchConfigsOutOfRange,
    &kModelPmSamplesOutOfRange,
};

}  // namespace

std::span<const StatDef* const> AllImportCounters() { return kAll; }

void AppendImportCounter(const StatDef& counter, uint64_t value, std::vector<StatCounter>* out,
                         std::string meaning) {
  if (value == 0) return;
  out->push_back({std::string(counter.name), value,
                  static_cast<v1::Severity>(static_cast<int>(counter.severity)),
                  meaning.empty() ? std::string(counter.meaning) : std::move(meaning)});
}

}  // namespace warpscope
