// `warpscope info`, a row of the list of analyses (analysis.h, info.h).
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/info.h"

namespace warpscope {
namespace {

// Info needs counts, the span and the problems, not the events: memory stays with what the
// trace defines however long it is.
TraceModelOptions InfoLoadOptions(const OptionValues&) {
  TraceModelOptions options;
  options.keep_events = 0;
  return options;
}

absl::StatusOr<AnalysisResult> RunInfo(const AnalysisInputs& in, const OptionValues&) {
  AnalysisResult result;
  result.report = TraceInfoReport(*in.traces[0]);
  return result;
}

}  // namespace

AnalysisRow InfoAnalysis() {
  AnalysisRow row;
  row.name = "info";
  row.summary = "header, devices, event counts, time span, drops and truncation of a trace";
  row.usage = "TRACE.wst [flags]";
  row.input = AnalysisInput::kOneTrace;
  row.load_options = InfoLoadOptions;
  row.run = RunInfo;
  return row;
}

}  // namespace warpscope
