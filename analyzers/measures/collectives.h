// Collectives as one rank ran them: each NCCL kernel, with its operation, communicator, size
// and place in its communicator's order, so that the same collective can be matched across
// the traces of a job's ranks (job/). A shared measure: the job view, `advise` and the exports
// use it.
//
// Where each figure comes from:
//  - operation, reduction, data type, algorithm and protocol: the kernel's name
//    (ncclDevKernel_AllReduce_Sum_f32_RING_LL; older NCCL: ncclKernel_...);
//  - communicator and bytes: the NCCL call that launched the kernel (NcclCallEvent, from NCCL's
//    NVTX payload), tied to it by the launch's correlation id; calls queued in
//    ncclGroupStart/End belong to the launch their ncclGroupEnd made;
//  - a kernel no call is tied to (NVTX off, NCCL_NVTX_DISABLE=1, an older trace) takes the
//    communicator of the other kernels on its stream, or, on a stream without any, a key
//    "stream#K" (K: the stream's order among such streams by first use), which matches the
//    same stream on the other ranks when every rank creates its streams alike;
//  - order: kernels of one communicator run in order on the GPU; `seq` numbers them by start.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_COLLECTIVES_H_
#define WARPSCOPE_ANALYZERS_MEASURES_COLLECTIVES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/model/interval_union.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// What an NCCL kernel's name says. Empty fields: the name does not say.
struct NcclKernelName {
  std::string_view op;         // "AllReduce", "AllGather", "ReduceScatter", "Broadcast", ...
  std::string_view reduction;  // "Sum", "Prod", "Max", "Min", "PreMulSum", "SumPostDiv"
  std::string_view dtype;      // "f32", "bf16", ...
  std::string_view algorithm;  // "RING", "TREE", "NVLS", "COLLNET_DIRECT", ...
  std::string_view protocol;   // "LL", "LL128", "SIMPLE"
};

// True for NCCL's kernels (demangled or mangled names).
bool IsNcclKernel(std::string_view name);
// Parses an NCCL kernel's name; the views point into `name`.
NcclKernelName ParseNcclKernelName(std::string_view name);

struct CollectiveInstance {
  std::string_view op;          // from the NCCL call when one is tied, else the kernel name
  std::string comm;             // communicator key: "0x<hash>", or "stream#K" (see above)
  uint64_t comm_hash = 0;       // 0 = unknown
  uint64_t seq = 0;             // 0-based order within `comm` on this rank
  uint64_t bytes = 0;           // message bytes as NCCL reports them; 0 = unknown
  uint32_t calls = 0;           // NCCL calls the kernel carried (a group: several)
  int32_t comm_size = 0;        // communicator size where a payload said; 0 = unknown
  uint64_t call_start_ns = 0;   // host: when the (first) call began; 0 = no call tied
  uint64_t call_thread_id = 0;
  size_t kernel_index = 0;      // into TraceModel::kernels
  uint64_t start_ns = 0;        // the kernel on the GPU
  uint64_t duration_ns = 0;
  uint32_t device_id = 0;
  uint32_t stream_id = 0;
  NcclKernelName kernel;        // views into the model's strings
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

struct RankCollectives {
  std::vector<CollectiveInstance> instances;  // by start time
  size_t tied_to_calls = 0;        // kernels tied to an NCCL call
  size_t comm_from_stream = 0;     // took the communicator of their stream
  size_t keyed_by_stream = 0;      // on a stream without any known communicator
  size_t unreadable_payloads = 0;  // calls whose payload could not be read
};

RankCollectives FindCollectives(const TraceModel& model);
// The same from NCCL's calls and some of a trace's kernels (its NCCL kernels, say, read as
// they stream by), `kernel_index[i]` being kernels[i]'s index in TraceModel::kernels (empty:
// kernels is that table). The kernels' names must outlive the result.
RankCollectives FindCollectives(const std::vector<NcclCall>& nccl_calls,
                                const std::vector<KernelEvent>& kernels,
                                const std::vector<size_t>& kernel_index);

// One rank's collective as the time-lost computation needs it: where it ran in its
// communicator's order, and how long it waited for the last rank (measured across ranks, or
// estimated from this rank alone).
struct CollectiveWait {
  std::string_view comm;
  uint64_t seq = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t transfer_ns = 0;  // the data movement: the end of the wait to the end
  int64_t step = -1;         // the step it belongs to (steps.h); -1: none
  // Out: the time lost to waiting, on the last collective of each run (0 on the others), and
  // the index of the run's collective with the longest wait (who the time was lost to).
  uint64_t lost_ns = 0;
  size_t lost_to = 0;
};

// Time lost waiting, per run of back-to-back collectives on one communicator (each starting
// within 20 us of the end of the one before it: queued behind it, waiting for the same late
// rank): from when the rank's own work (`own_work`: its merged non-NCCL GPU work) before the
// run's last collective was done, or the run began if later, until that collective's data
// started moving; at most the run's waits together. A lone collective loses its wait. Within
// one step, the runs wait for the same late rank (it stays behind through the step: a wait at
// an AllGather, then at a ReduceScatter after the waiting rank caught up on its queued work),
// so the step loses its longest run's loss, and the other runs of the step lose nothing.
void LostToWaiting(std::vector<CollectiveWait>& collectives,
                   const std::vector<TimeInterval>& own_work);

// Operations after which every rank has heard from every other (AllReduce, AllGather,
// ReduceScatter, AlltoAll): the rank that arrives last spends the least time in them.
bool IsSymmetricCollective(std::string_view op);

// "AllReduce" from "ncclAllReduce"; "" for calls that are not collectives (ncclGroupEnd,
// ncclCommInitRank, ...).
std::string_view CollectiveOpOfCall(std::string_view call_name);

// nccl-tests' bus bandwidth factor for an operation over `nranks` ranks: the bytes each rank
// moves per byte of the operation's size, so that bus bandwidth is comparable across
// operations and rank counts (AllReduce 2(n-1)/n; AllGather, ReduceScatter, AlltoAll (n-1)/n;
// the others 1). Sizes here are NCCL's payload bytes, which for AllGather and ReduceScatter
// count one rank's part: their factor is multiplied by n.
double BusBandwidthFactor(std::string_view op, uint32_t nranks);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_COLLECTIVES_H_
