// What the advise rules look up in a trace, in time order: GPU work per device, the API call
// that launched each piece, host waits for the GPU per thread, and the NVTX ranges open on a
// thread at any instant.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_TIMELINE_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_TIMELINE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/measures/host_waits.h"
#include "analyzers/measures/median.h"
#include "analyzers/measures/ns_from_double.h"
#include "analyzers/measures/steps.h"
#include "analyzers/model/trace_model.h"

namespace warpscope::advise_internal {

enum class WorkKind { kKernel, kMemcpy, kMemset };

// One kernel, copy or memset on the GPU: when and where it ran, and which one it is.
struct GpuWork : StreamWork {
  WorkKind kind = WorkKind::kKernel;
  uint32_t index = 0;  // into model.kernels / memcpys / memsets
};

// The host waiting for the GPU (measures/host_waits.h).
using ::warpscope::HostWait;

struct ThreadTimeline {
  std::vector<HostWait> waits;          // by end
  std::vector<uint64_t> launch_starts;  // start of API calls that launched GPU work, sorted
  // NVTX: segment i covers [segment_starts[i], segment_starts[i+1]) with open_ranges[i]
  // (indices into model.nvtx_ranges, outermost first).
  std::vector<uint64_t> segment_starts;
  std::vector<std::vector<uint32_t>> open_ranges;
};

class AdviseTimeline {
 public:
  AdviseTimeline(const TraceModel& model, const AdviseOptions& options);

  const TraceModel& model() const { return model_; }
  // GPU work of each selected device, by start.
  const std::map<uint32_t, std::vector<GpuWork>>& work_by_device() const { return work_; }
  // The API call that launched a piece of work; nullptr when unknown.
  const ApiCallEvent* LaunchOf(uint32_t correlation_id) const;
  const ThreadTimeline* Thread(uint64_t thread_id) const;
  // Every thread with launches, waits or ranges.
  const std::map<uint64_t, ThreadTimeline>& threads() const { return threads_; }
  // Ranges open on `thread_id` at `t`, outermost first.
  const std::vector<uint32_t>& OpenRangesAt(uint64_t thread_id, uint64_t t) const;
  // The path of a range ("step_<N>/forward"): the push/pop ranges around it, then its own
  // name, each a RangeFamily unless AdviseOptions::literal_ranges.
  std::string RangePath(uint32_t range_index) const;
  // A range's name as places show it: its RangeFamily unless literal_ranges.
  std::string RangeName(uint32_t range_index) const;
  // The path of the innermost range open on `thread_id` at `t`; "" outside any. A thread
  // that opens no ranges of its own (NCCL's do not count: an autograd or NCCL thread) is in
  // the ranges of the one thread that has a range of its own open at `t`; in none when
  // several have.
  std::string PathAt(uint64_t thread_id, uint64_t t) const;
  // The program's steps, the warm-up steps among them, and when the steady state begins:
  // the start of the first step after the warm-up (0 without steps).
  const StepSet& steps() const { return steps_; }
  // The median host time of a launch call (API calls that launched GPU work); 0 without any.
  uint64_t median_launch_call_ns() const { return median_launch_call_ns_; }
  size_t warmup_steps() const { return warmup_steps_; }
  uint64_t steady_begin_ns() const { return steady_begin_ns_; }
  // Whether the range launched GPU work (an API call with a GPU record started inside it),
  // at all or in [from, to).
  bool RangeLaunchedWork(uint32_t range_index) const;
  bool RangeLaunchedWorkBetween(uint32_t range_index, uint64_t from, uint64_t to) const;
  std::string WorkName(const GpuWork& work) const;
  void DescribeThread(uint64_t thread_id, AdviseFinding* finding) const;
  // The call site of the call with `correlation_id` ("train.py:57 train_step", "no stack");
  // "" when the trace has no call stacks at all (findings then name no line).
  std::string CallSiteText(uint32_t correlation_id) const;
  // The same for the site most of `correlation_ids` were made from.
  std::string CallSiteText(const std::vector<uint32_t>& correlation_ids) const;

 private:
  void IndexWork(const AdviseOptions& options);
  void IndexThreads(std::optional<uint32_t> device);
  void IndexRanges();

  const TraceModel& model_;
  bool literal_ranges_ = false;
  StepSet steps_;
  size_t warmup_steps_ = 0;
  uint64_t steady_begin_ns_ = 0;
  uint64_t median_launch_call_ns_ = 0;
  std::vector<uint64_t> ranged_threads_;  // threads with ranges of their own (not NCCL's)
  std::map<uint32_t, std::vector<GpuWork>> work_;
  // (correlation id, index into model.api_calls) of the calls that launched GPU work, sorted
  // by id, then file order: 8 bytes a launch where a hash map took some 40.
  std::vector<std::pair<uint32_t, uint32_t>> launch_by_correlation_;
  std::map<uint64_t, ThreadTimeline> threads_;
};

// Per-rule finders: each appends its findings (cost, where, evidence, fix; severity and
// fraction are set by BuildAdviseReport).
// The idle gaps that began during the waits of one call site, and where their time went.
struct WaitSiteGaps {
  uint64_t startup_ns = 0;  // in the start-up finding
  uint64_t one_off_ns = 0;  // in the one-off finding (the part beyond the usual gap)
  struct InFinding {
    std::string rule, where, api_call;  // as the finding has them
    uint64_t ns = 0;
  };
  std::vector<InFinding> findings;  // the gap findings of waits (catch-up included)
};
struct GapTotals {
  uint64_t idle_ns = 0;
  uint64_t attributed_ns = 0;
  std::vector<AdviseDeviceBusy> devices;
  std::map<std::string, WaitSiteGaps> wait_sites;  // by CallSite::Display() of the wait
};
GapTotals FindGapCauses(const AdviseTimeline& timeline, const AdviseOptions& options,
                        std::vector<AdviseFinding>* findings);
void FindPageableCopies(const AdviseTimeline& timeline, const AdviseOptions& options,
                        std::vector<AdviseFinding>* findings);
void FindCopiesWithoutOverlap(const AdviseTimeline& timeline, const AdviseOptions& options,
                              std::vector<AdviseFinding>* findings);
// NCCL collectives waiting for other ranks (advise_collectives.cc): one finding per operation;
// returns the GPU time spent only waiting (no other work ran), which is not useful work.
uint64_t FindCollectiveWaits(const AdviseTimeline& timeline, const AdviseOptions& options,
                             std::vector<AdviseFinding>* findings);
// The host time blocked at each call site (measures/host_waits.h, as `summary --report syncs`
// sums it) under the wait findings of that line, with the GPU idle time during it; a note for
// each site no wait finding names, saying why (advise_host_blocked.cc). `findings` ranked.
void AccountHostBlocked(const AdviseTimeline& timeline, const GapTotals& gaps,
                        std::vector<AdviseFinding>* findings, std::vector<std::string>* notes);
// FP32 GEMMs and convolutions on the SIMT cores, per device and NVTX place, costed at the time
// TF32 (or BF16) tensor cores would save; notes on FP64 work and on what is left alone
// (advise_precision.cc).
void FindFp32MatrixWork(const AdviseTimeline& timeline, std::vector<AdviseFinding>* findings,
                        std::vector<std::string>* notes);
// Tails, occupancy and stalls, from the trace's samples; a note per part that had none.
void FindKernelEfficiency(const TraceModel& model, const AdviseOptions& options,
                          std::vector<AdviseFinding>* findings, std::vector<std::string>* notes);
// Device memory: out-of-memory, memory-leak and memory-fragmentation findings, in that order
// (advise_memory.cc); severity set, cost in AdviseFinding::memory_bytes.
void FindMemoryIssues(const TraceModel& model, const AdviseOptions& options,
                      std::vector<AdviseFinding>* findings);

// Achieved occupancy below this share of the theoretical one is low (the low-occupancy rule,
// and the latency-bound rule's story).
inline constexpr double kLowAchievedShare = 0.6;
// A stall reason is a kernel's story when it holds at least this share of its PC samples
// ("selected" and "not_selected" are not stalls).
inline constexpr double kStallShare = 0.3;

// Latency-bound kernels (with their occupancy and stalls joined) and DRAM-bound matrix
// multiplies, from the `sol` analysis when the trace has per-unit PM samples (advise_sol.cc).
void FindSpeedOfLight(const TraceModel& model, const AdviseOptions& options,
                      std::vector<AdviseFinding>* findings);

}  // namespace warpscope::advise_internal

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_TIMELINE_H_
