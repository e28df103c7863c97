// Fuzz entry for the trace reader and everything built on it: any bytes must give packets
// or a clean error, never a crash, hang or sanitizer report. Used by the libFuzzer binary
// (clang) and by trace_reader_fuzz_replay (every compiler, a ctest).
#include <cstddef>
#include <cstdint>
#include <string>

#include "analyzers/lib/output.h"
#include "analyzers/lib/summary.h"
#include "analyzers/lib/trace_info.h"
#include "analyzers/lib/trace_model.h"
#include "analyzers/lib/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warpscope;  // NOLINT: a fuzz entry, not library code
  std::string bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::FromBuffer(bytes, "fuzz");
  if (!reader.ok()) return 0;
  // The model walks the reader itself; then the renderers touch every table.
  absl::StatusOr<TraceModel> model = TraceModel::Load(**reader);
  if (!model.ok()) return 0;
  (void)model->truncation.Describe();
  (void)RenderTraceInfo(*model, OutputFormat::kTable);
  (void)RenderTraceInfo(*model, OutputFormat::kJson);
  SummaryOptions options;
  const std::vector<TraceSummary> summary = SummarizeTraces({&*model}, {"fuzz"}, options);
  (void)RenderSummary(summary, OutputFormat::kTable, options);
  (void)RenderSummary(summary, OutputFormat::kJson, options);
  return 0;
}
