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
#include <string_view>
#include <utility>
#include <vector>

#include "analyzers/measures/memory_growth.h"
#include "analyzers/measures/memory_timeline.h"
#include "analyzers/measures/steps.h"

#include "analyzers/model/trace_model.h"
#include "analyzers/render/report.h"

namespace warpscope {

struct MemoryReportOptions {
  std::optional<uint32_t> device;
  size_t top = 10;   // largest blocks at each peak, growing sites
  bool svg = false;  // draw the picture (MemoryReportResult::svg)
};

struct MemoryReportResult {
  Report report;
  std::string svg;  // when asked for
};

MemoryReportResult MemoryReport(const TraceModel& model, const MemoryReportOptions& options);

// What growth is judged against: the steady steps (in use at each one's start and at the last
// one's end), or, in a trace without steps, the work done (the least in use between the ends
// of 40 evenly spaced kernels after the first tenth; memory_growth.h KernelProgressInstants).
struct MemoryProgress {
  enum class Basis { kSteps, kKernels, kNone };
  Basis basis = Basis::kNone;
  size_t first = 0;              // the first judged instant (steps: the warm-up steps)
  double kernels_per_point = 0;  // kernels: kernels launched between two instants
};

// The timeline's options: the peak inside each step, in use at the instants of `progress`
// (set here), site growth from its first judged instant on.
MemoryTimelineOptions ProgressTimelineOptions(const TraceModel& model, const StepSet& steps,
                                              size_t warmup, MemoryProgress* progress);

// Growth of one device over the program's progress, by memory_growth.h's rule (a rise from
// some onset, Theil-Sen, a leak when Sen's 95% interval lies above zero and it gained at
// least kLeakMinimumBytes), and the call sites whose live bytes grew, most first.
struct MemoryGrowth {
  uint32_t device_id = 0;
  MemoryProgress progress;
  std::optional<Slope> slope;  // bytes per step, or per judged point (kernels)
  size_t onset_step = 0;       // steps: the step the rise begins at
  uint64_t gained = 0;         // the last instant minus the onset's, when it grew
  bool leak = false;
  // Kernels basis: the rule would have called a leak, but over fewer than kLeakMinimumKernels.
  bool too_little_work = false;
  std::vector<SiteGrowth> growing_sites;  // most growth first
  double kernels_judged = 0;  // kernels basis: the kernels launched over the judged points
  // Bytes per kernel launched (kernels basis), 0 otherwise.
  double PerKernel() const;
  // The rate in words: "16.00 MiB per steady step" (" from step 12" when the rise began
  // after the first steady step), "1.20 MiB per 1,000 kernels launched (the trace has no
  // steps)"; with Sen's 95% interval after the rate when asked.
  std::string RateText(bool with_interval = false) const;
};
// The growth of `device`, its growing sites summed by call site and owner (the stacks of one
// line, or of one operation of a native stack, are one site), most growth first.
MemoryGrowth GrowthOf(const TraceModel& model, const DeviceMemory& device,
                      const MemoryProgress& progress);

// What the other commands (summary, advise, job) say about memory, from the same timeline and
// rules as `warpscope memory` (its phases left out: they change no figure here).
struct DeviceMemoryDigest {
  uint32_t device_id = 0;
  uint64_t capacity_bytes = 0;  // the device's global memory; 0 = unknown
  uint64_t peak_bytes = 0;
  uint64_t peak_ns = 0;
  uint64_t reserved_at_peak_bytes = 0;
  uint64_t peak_reserved_bytes = 0;
  std::vector<std::pair<std::string, uint64_t>> owners_at_peak;  // most first
  MemoryGrowth growth;
  std::string growth_site;    // the call site that grew most ("" when none grew)
  std::string growth_owner;
  uint64_t growth_site_bytes = 0;
  uint64_t steady_begin_ns = 0, steady_end_ns = 0;  // the steady steps' span (with steps)
  size_t steady_steps = 0;
};

struct MemoryFailureDigest {
  MemoryFailure failure;
  std::string site;  // where it was asked, or why there is none
};

struct MemoryDigest {
  uint64_t events = 0;
  std::vector<DeviceMemoryDigest> devices;  // by id
  std::vector<MemoryFailureDigest> failures;
};

// `step`: the NVTX range that marks steps ("" = steps.h's rule).
MemoryDigest DigestMemory(const TraceModel& model, std::optional<uint32_t> device = std::nullopt,
                          std::string_view step = "");

// The call site of a block's stack (call_sites.h), or "no stack".
std::string MemoryCallSite(const TraceModel& model, uint64_t stack_id);

// The first `top` owners with their bytes: "PyTorch caching allocator 1.00 GiB, NCCL 64.00 MiB".
std::string MemoryOwnersText(const std::vector<std::pair<std::string, uint64_t>>& owners,
                             size_t top);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_MEMORY_H_
