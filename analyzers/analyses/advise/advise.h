// `warpscope advise`: findings ranked by the time a fix would save. Rules (docs/advise.md):
// GPU idle gaps with the host activity that caused them (a synchronisation, a blocking read
// of a GPU value, a blocking copy, a host NVTX range without GPU work, launch-bound
// stretches), pageable copies, copies that do not overlap compute, FP32 matrix work that
// tensor cores could run, and, when the trace has samples, long tails, low achieved occupancy,
// warp stalls, latency-bound kernels and DRAM-bound matrix multiplies.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"
#include "analyzers/render/report.h"
#include "analyzers/render/short_names.h"

namespace warpscope {

enum class AdviseSeverity { kLow, kMedium, kHigh };
std::string_view AdviseSeverityName(AdviseSeverity severity);  // "low", "medium", "high"

// Rule ids, as they appear in the output and in docs/advise.md.
inline constexpr std::string_view kRuleSync = "sync-idle";
inline constexpr std::string_view kRuleBlockingRead = "blocking-read";
inline constexpr std::string_view kRuleBlockingCopy = "blocking-copy";
inline constexpr std::string_view kRuleHostRange = "host-range";
inline constexpr std::string_view kRuleLaunchBound = "launch-bound";
inline constexpr std::string_view kRulePageable = "pageable-copy";
inline constexpr std::string_view kRuleNoOverlap = "copy-no-overlap";
inline constexpr std::string_view kRuleTail = "long-tail";
inline constexpr std::string_view kRuleOccupancy = "low-occupancy";
inline constexpr std::string_view kRuleStalls = "stalls";
// One-time idle gaps before the steady state; ranked after every steady-state finding.
inline constexpr std::string_view kRuleStartup = "startup";
// Idle gaps far longer than the usual gap of their cause: the part beyond the usual one.
inline constexpr std::string_view kRuleOneOff = "one-off";
// NCCL collectives waiting for other ranks (the GPU is not working then).
inline constexpr std::string_view kRuleCollectiveWait = "nccl-wait";
// FP32 GEMMs and convolutions on the SIMT cores that tensor cores (TF32, BF16) could run.
inline constexpr std::string_view kRulePrecision = "fp32-matrix";
// With per-unit PM samples (`--pm-metrics sol`): a kernel far from every roof, and a matrix
// multiply bound by DRAM (advise_sol.cc).
inline constexpr std::string_view kRuleLatencyBound = "latency-bound";
inline constexpr std::string_view kRuleMemoryBoundGemm = "memory-bound-gemm";
// In a job of several ranks: the rank the others wait for.
inline constexpr std::string_view kRuleStraggler = "straggler";
// Device memory (advise_memory.cc), costed in bytes, not time: memory that grows every steady
// step, a request the driver refused, and reserved memory far above what is in use at the peak.
inline constexpr std::string_view kRuleMemoryLeak = "memory-leak";
inline constexpr std::string_view kRuleOutOfMemory = "out-of-memory";
inline constexpr std::string_view kRuleFragmentation = "memory-fragmentation";

struct AdviseFinding {
  std::string rule;   // one of the kRule* ids
  std::string title;  // one line: what is wrong
  AdviseSeverity severity = AdviseSeverity::kLow;
  uint64_t cost_ns = 0;  // what the fix would save (the rule's cost model)
  // The most the fix could save: above cost_ns only where the cost model bounded it by what the
  // recording showed (waits: idle time after them beyond the host's lead, docs/advise.md
  // "Catch-up"); cost_ns elsewhere.
  uint64_t cost_max_ns = 0;
  double cost_fraction = 0;  // cost_ns / AdviseReport::gpu_span_ns
  // With steps, a steady-state finding's cost per steady step (its cost in the steady state
  // over AdviseReport::steady_steps) and that over the mean steady step; 0 for one-time
  // findings and without steps. Findings are ranked by it, and severity is its share.
  uint64_t cost_per_step_ns = 0;
  double step_fraction = 0;
  uint64_t occurrences = 0;  // gaps, copies, launches, ... the finding sums over
  uint32_t device_id = 0;
  // Where: empty when not known or not relevant.
  std::string nvtx_path;  // "step/forward"
  std::string kernel;
  std::string api_call;  // "cudaStreamSynchronize"
  std::string stream;    // "7", "7,13"
  // The program's line that made the calls (measures/call_sites.h): "train.py:57 train_step";
  // waits and copies: the site of most of their time; kernels: their most common launch site.
  // Empty when the trace has no call stacks.
  std::string where;
  // Waits with a line: the host time blocked in every wait at that line, as `summary --report
  // syncs` sums it (measures/host_waits.h), the calls, and how much of that time the GPU had
  // no work (the rest it ran work queued before the wait). 0 for other findings.
  uint64_t host_blocked_ns = 0;
  uint64_t host_blocked_calls = 0;
  uint64_t host_blocked_gpu_idle_ns = 0;
  uint32_t os_tid = 0;   // the host thread; 0 = unknown
  std::string thread_name;
  std::string evidence;  // numbers that support it
  std::string fix;       // what to do, in plain words
  // The worst single occurrence (trace ns), for the HTML timeline; begin == end when none.
  uint64_t worst_begin_ns = 0;
  uint64_t worst_end_ns = 0;
  // In a job's report (several ranks' traces): the rank the finding is about; -1 otherwise.
  int64_t job_rank = -1;
  // Paid once, before the steady state (start-up gaps, copies of the weights, the first
  // collectives): ranked after every steady-state finding.
  bool one_time = false;
  // A memory finding (IsMemoryRule): its cost in bytes (memory-leak: growth per steady step;
  // out-of-memory: the bytes asked; memory-fragmentation: reserved and unused at the peak), and
  // for a leak the steady steps until the device is full at that rate (-1: capacity unknown).
  uint64_t memory_bytes = 0;
  int64_t steps_to_full = -1;
};

inline bool IsMemoryRule(std::string_view rule) {
  return rule == kRuleMemoryLeak || rule == kRuleOutOfMemory || rule == kRuleFragmentation;
}

// What the other ranks' traces say about this rank's NCCL collectives (`warpscope advise` of a
// job): each collective kernel's wait for the last rank, measured, and who the rank waited
// for. Without it the nccl-wait rule estimates the waits from this trace alone.
struct MeasuredCollectiveWaits {
  std::unordered_map<size_t, uint64_t> wait_by_kernel;  // index into TraceModel::kernels
  std::optional<uint32_t> waited_for;                    // the straggler, when one was named
};

struct AdviseOptions {
  std::optional<uint32_t> device;  // only this device; all when unset
  size_t top = 0;                  // findings kept, by cost; 0 = all
  // Bandwidth (bytes/ns = GB/s) assumed for pinned copies when the trace has none to measure.
  double pinned_bytes_per_ns = 50.0;
  // Copies smaller than this are left to the gap rules (latency, not bandwidth, sets them).
  uint64_t min_copy_bytes = 64 * 1024;
  uint64_t min_finding_ns = 1000;  // findings costing less are dropped
  double high_fraction = 0.05;     // severity high: cost >= 5% of the GPU span
  double medium_fraction = 0.01;   // medium: >= 1%
  // A host wait or launch within this of the gap's edges counts as touching it.
  uint64_t edge_tolerance_ns = 5000;
  // Measured waits of this rank's collectives (a job's advise); nullptr: estimate them.
  const MeasuredCollectiveWaits* collective_waits = nullptr;
  // Places are NVTX paths with each range's numbers replaced (steps.h RangeFamily:
  // "step_12/data_load" -> "step_<N>/data_load"), so that a finding covers every step; true:
  // as the ranges are named.
  bool literal_ranges = false;
  std::string step;  // the NVTX range that marks steps ("" = steps.h's rule)
  // Warm-up steps before the steady state (unset: steps.h's WarmupSteps of this trace's); a
  // job's advise gives every rank the job's, so that their steady states are the same steps.
  std::optional<size_t> warmup_steps;
  bool short_names = false;  // kernels named short and distinct over the trace's (--short-names)
};

struct AdviseDeviceBusy {
  uint32_t device_id = 0;
  uint64_t begin_ns = 0;  // first GPU work
  uint64_t end_ns = 0;    // end of the last
  uint64_t busy_ns = 0;   // union of kernels, copies, memsets
};

struct AdviseReport {
  std::string label;     // the trace's path
  uint64_t wall_ns = 0;  // the trace's span (host and GPU events, start-up included)
  // From the first GPU work to the end of the last, over the selected devices (the trace's
  // span when there is none): what costs and busy time are shares of.
  uint64_t gpu_span_ns = 0;
  uint64_t gpu_busy_ns = 0;         // union per device, summed over the selected devices
  double busy_fraction = 0;         // gpu_busy_ns / gpu_span_ns
  uint64_t gpu_idle_ns = 0;         // idle time inside each device's first-to-last GPU work, summed
  uint64_t idle_attributed_ns = 0;  // of it, in gaps a rule attributed to a cause
  // GPU time spent only waiting inside NCCL collectives for other ranks (no other work ran):
  // counted in gpu_busy_ns, left out of busy_fraction.
  uint64_t collective_wait_ns = 0;
  std::vector<AdviseDeviceBusy> devices;
  std::vector<AdviseFinding> findings;  // by cost, descending
  std::vector<std::string> notes;       // rules skipped and why (no PM samples, ...)
  std::string headline;
  // The program's steps (steps.h) and how many of the first are warm-up; the steady state
  // starts with the first step after them.
  size_t steps = 0;
  size_t warmup_steps = 0;
  std::string step_rule;
  // The steady steps (steps less warm-up) and their mean duration: what costs per step are
  // shares of. 0 without steps.
  size_t steady_steps = 0;
  uint64_t steady_step_ns = 0;
  // The share of the run after warm-up (to the last GPU work) that the steady steps span.
  // Under kMinStepsCoverage the steps are not the program's iteration: no cost per step.
  double steps_coverage = 1.0;
  KernelNames names;  // as the findings name kernels; the HTML timeline names its boxes so
};

inline constexpr double kMinStepsCoverage = 0.5;

// Whether `a` is listed before `b`: steady-state findings before one-time ones, then by cost
// per steady step (with steps), then by cost.
bool RankedBefore(const AdviseFinding& a, const AdviseFinding& b);

// Severity of a finding whose cost is `fraction` of the steady step (with steps) or of the GPU
// span (options' thresholds).
AdviseSeverity SeverityOf(double fraction, const AdviseOptions& options);

// Whether `f` has a cost per steady step: a steady-state finding of a report with steps.
// Whether the rule's findings are about one kernel's launches (costed over every launch).
bool IsKernelRule(std::string_view rule);

inline bool HasCostPerStep(const AdviseReport& report, const AdviseFinding& f) {
  return report.steady_steps > 0 && !f.one_time && !IsMemoryRule(f.rule);
}

// A finding's cost as the text shows it: "10.50 ms a step (69.7% of a steady step)" for a
// steady-state finding of a report with steps, else "125.97 ms (2.5% of the GPU span)".
std::string CostText(const AdviseReport& report, const AdviseFinding& f);

// A memory finding's cost as the text shows it: "4.00 MiB a steady step; full in 35000 steps".
std::string MemoryCostText(const AdviseFinding& f);

// Runs every rule on `model`, ranks the findings and writes the head line.
AdviseReport BuildAdviseReport(const TraceModel& model, std::string label,
                               const AdviseOptions& options);

// With options.short_names (BuildAdviseReport calls it last): every kernel name in the
// findings, head line and notes, short and distinct over `model`'s kernels (advise_names.cc).
void ShortenKernelNames(const TraceModel& model, AdviseReport& report);

// The findings as one typed table (a column per figure, as CSV, JSON and Python give them):
// the one place a finding's column is defined.
Table AdviseFindingsTable(const AdviseReport& report);

// The report, rendered by RenderReport, as scalars (the head figures) and tables "findings",
// "devices" and "notes": what CSV, JSON and Python's warpscope.advise give. Its text form:
// the head line, then one block per finding. A job's findings name their rank (column
// `rank`; -1, not shown, for a single trace); a finding's place in the list is its `order`.
Report AdviseReportTables(const AdviseReport& report);

// One self-contained HTML page (inline CSS and SVG, no script): head line, findings, a
// timeline of the worst stretch, and the active-warp curve and stall bars when the trace has
// the samples.
// `picture`: an SVG shown after the findings under `picture_title` (a job's ranks side by
// side); the timeline of the worst stretch is drawn from `model`.
std::string RenderAdviseHtml(const AdviseReport& report, const TraceModel& model,
                             std::string_view picture_title = "", std::string_view picture = "");

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_H_
