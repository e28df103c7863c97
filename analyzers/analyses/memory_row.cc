// `warpscope memory`, a row of the list of analyses (analysis.h): device memory over time,
// its peaks, owners and call sites, growth across steps, refused requests (memory.h).
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/memory.h"

namespace warpscope {
namespace {

// The memory events, the NVTX ranges (steps and phases) and the calls' stacks: a long trace's
// kernels, API calls and samples stay unread.
TraceModelOptions MemoryLoadOptions(const OptionValues&) {
  TraceModelOptions options;
  options.keep_events = EventKindBit(EventKind::kMemory) | EventKindBit(EventKind::kNvtxRange) |
                        EventKindBit(EventKind::kApiStack);
  options.keep_pc_sample_records = false;
  options.keep_pm_samples = false;
  return options;
}

absl::StatusOr<AnalysisResult> RunMemory(const AnalysisInputs& in, const OptionValues& values) {
  const TraceModel& model = *in.traces[0];
  if (absl::Status s = model.CheckDevice(values.Device()); !s.ok()) return s;
  MemoryReportOptions options;
  options.device = values.Device();
  options.top = values.Count("top");
  options.svg = values.Has("svg");
  MemoryReportResult memory = MemoryReport(model, options);
  AnalysisResult result;
  result.report = std::move(memory.report);
  if (model.EventCount(EventKind::kMemory) == 0) {
    result.notices.push_back(
        "the trace has no memory events: record with a warpscope that records memory");
  }
  if (options.svg) result.files.push_back({"svg", std::move(memory.svg), ""});
  return result;
}

}  // namespace

AnalysisRow MemoryAnalysis() {
  AnalysisRow row;
  row.name = "memory";
  row.summary = "device memory over time: peaks, owners, call sites, leaks, failed requests";
  row.usage = "TRACE.wst [flags]";
  row.input = AnalysisInput::kOneTrace;
  row.options = {
      {"device", "", OptionKind::kDevice, "N", "only this device's memory", ""},
      {"top", "n", OptionKind::kCount, "N", "the N largest blocks and growing sites (0 = all)",
       "10"},
      {"svg", "", OptionKind::kOutputFile, "FILE", "also draw memory over time as an SVG", "",
       "memory.svg"}};
  row.about =
      "In use: the blocks allocated or mapped and not yet freed, per device; reserved adds\n"
      "the stream-ordered pools' reserved size. Owners from the module that asked, call\n"
      "sites from the recorded stacks, steps and phases from NVTX. See docs/memory.md.\n";
  row.load_options = MemoryLoadOptions;
  row.run = RunMemory;
  return row;
}

}  // namespace warpscope
