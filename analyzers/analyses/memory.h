// `warpscope memory`: device memory over time (measures/memory_timeline.h) as a Report: each
// device's peak, who held it and where it was allocated, the peak of each NVTX phase and each
// step, growth across the steady steps (a leak), the requests the driver refused, and an SVG
// of memory over time. docs/memory.md says how each figure is made.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_MEMORY_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "analyzers/model/trace_model.h"
#include "analyzers/render/report.h"

namespace warpscope {

struct MemoryReportOptions {
  std::optional<uint32_t> device;
  size_t top = 10;   // largest blocks at each peak, growing sites
  bool svg = false;  // draw the picture (MemoryReportResult::svg)
};

// Growth across the steady steps, in bytes per step, is a leak when Sen's 95% interval lies
// above zero and the steady steps gained at least this much in all.
inline constexpr uint64_t kLeakMinimumBytes = 1 << 20;

struct MemoryReportResult {
  Report report;
  std::string svg;  // when asked for
};

MemoryReportResult MemoryReport(const TraceModel& model, const MemoryReportOptions& options);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_MEMORY_H_
