// The second pass of a rank's digest (rank_digest.cc): its kernels, API calls, copies and
// synchronisations as they stream by, folded into the step times, the compute stretches the
// digest keeps and the host's blocked time, in memory that grows with steps, collectives and
// blocking calls, not with kernels or API calls.
//
// A kernel's step is the step of its launch: its API call's start, joined by correlation id.
// Kernels wait (up to kReorderWindow of them) to be taken in order of start, as CUPTI flushes
// records out of order within a buffer; API calls wait (the latest kCallsKept) for their
// kernels and copies. A kernel taken before its call arrived is placed as launch_times.h says.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_JOB_RANK_STREAM_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_JOB_RANK_STREAM_H_

#include <cstdint>
#include <deque>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzers/analyses/job/rank_digest.h"
#include "analyzers/model/interval_union.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// The union of intervals given in order of start, folded: its length, and the stretch each
// Add closes.
class RunningUnion {
 public:
  // Adds `t`, which begins no earlier than those before it; true with `closed` set when it
  // begins after the current stretch ended (that stretch is then done).
  bool Add(TimeInterval t, TimeInterval* closed = nullptr);
  uint64_t Length() const { return total_ns_ + (any_ ? end_ns_ - begin_ns_ : 0); }
  bool Current(TimeInterval* open) const;

 private:
  bool any_ = false;
  uint64_t begin_ns_ = 0, end_ns_ = 0, total_ns_ = 0;
};

// Whether kernels are NCCL's, each distinct name parsed once: names are interned, one address
// per distinct name.
class NcclKernelNames {
 public:
  bool Of(const KernelEvent& k);

 private:
  std::unordered_map<const char*, std::pair<size_t, bool>> by_name_;
};

// What the second pass reads from the first: the steps, the NCCL kernels' launches from their
// NCCL calls and the collectives they ran (by kernel index), the collectives' starts
// (ascending), whether the picture's stretches are kept and the gap they close (rank_digest.cc).
struct RankStreamInputs {
  const StepSet* steps = nullptr;
  std::unordered_map<size_t, uint64_t> call_start_by_kernel;
  std::unordered_map<size_t, size_t> collective_of_kernel;
  std::vector<uint64_t> collective_starts;
  bool drawing = true;
  uint64_t drawing_gap_ns = 0;
};

class RankStream : public TraceEventSink {
 public:
  static constexpr size_t kReorderWindow = size_t{1} << 15;  // kernels, about 1.5 MiB
  static constexpr size_t kCallsKept = size_t{1} << 17;      // API calls, about 8 MiB

  explicit RankStream(RankStreamInputs inputs);
  using TraceEventSink::Add;
  void Add(const KernelEvent& k) override;
  void Add(const ApiCallEvent& a) override;
  void Add(const MemcpyEvent& c) override;
  void Add(const SyncEvent& s) override;
  // Takes the kernels still waiting and fills `d`'s step times, totals, compute_busy and
  // (with inputs.drawing) compute_drawn; returns the steps' thread's blocked time (merged), for HostTimePerStep.
  std::vector<TimeInterval> Finish(RankDigest& d);
  // After Finish: the step of each collective (-1: outside every step), by its position.
  const std::vector<int64_t>& collective_steps() const { return collective_steps_; }

 private:
  struct Waiting {  // a kernel waiting to be taken in order of start
    uint64_t start_ns, end_ns;
    size_t index;  // in file order
    uint32_t correlation_id, device_id, stream_id;
    bool nccl;
    bool operator>(const Waiting& o) const {
      return start_ns != o.start_ns ? start_ns > o.start_ns : index > o.index;
    }
  };
  struct Call {
    uint64_t start_ns, end_ns, thread_id;
    bool blocks;  // a synchronize call: blocked whole, never joined to a copy
  };
  struct StepUnions {
    RunningUnion compute, comm, both;
  };
  void TakeEarliest();  // every waiting kernel of the earliest start
  void Fold(const Waiting& k, uint64_t launch_ns);
  void Stretch(TimeInterval s, uint64_t next_begin_ns);  // a compute stretch is done
  void Blocked(const Call& call, uint64_t copy_end_ns);

  RankStreamInputs in_;
  uint64_t blocked_thread_ = 0;
  bool want_blocked_ = false;
  size_t kernels_seen_ = 0;
  NcclKernelNames nccl_;
  std::priority_queue<Waiting, std::vector<Waiting>, std::greater<Waiting>> waiting_;
  std::unordered_map<uint32_t, Call> calls_;               // by correlation id, the first of each
  std::deque<uint32_t> call_order_;                        // their ids in arrival order
  std::unordered_map<uint32_t, uint64_t> copies_waiting_;  // copy end by correlation id
  std::deque<uint32_t> copy_order_;
  // Per (device, stream): (start, launch) of the last kernel taken with a known launch.
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> last_known_;
  std::vector<StepUnions> steps_;
  RunningUnion compute_, comm_, both_;
  size_t next_collective_ = 0;
  std::vector<TimeInterval> busy_kept_, drawn_, blocked_;
  std::vector<int64_t> collective_steps_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_JOB_RANK_STREAM_H_
