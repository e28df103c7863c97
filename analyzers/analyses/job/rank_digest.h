// RankDigest: what the job view keeps of one rank's trace once it has read it: who the rank
// is, its collectives and its steps, each step's compute and communication time. A few
// hundred bytes per collective and per step, so that a job of many ranks is analysed in
// memory that grows with collectives and ranks, not with events (the trace is read twice as
// it streams by, never held whole).
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_JOB_RANK_DIGEST_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_JOB_RANK_DIGEST_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/analyses/memory.h"
#include "analyzers/measures/steps.h"
#include "analyzers/model/interval_union.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// One collective as this rank ran it (CollectiveInstance without views into the trace): its
// operation and communicator are views into its digest's names (RankDigest::names), so that
// a collective holds no string of its own.
struct RankCollective {
  std::string_view op;
  std::string_view comm;
  uint64_t seq = 0;
  uint64_t bytes = 0;
  int32_t comm_size = 0;
  uint64_t start_ns = 0;  // the NCCL kernel on the GPU, trace time
  uint64_t duration_ns = 0;
  int64_t step = -1;      // index into RankDigest::steps; -1 outside every step
  size_t kernel_index = 0;  // into the trace's TraceModel::kernels (as loaded)
  // Filled by the job view once every rank is read (job_match.cc):
  uint64_t wait_ns = 0;      // this duration minus the shortest among the ranks
  // The time this rank lost waiting for later ranks, counted once per run of back-to-back
  // collectives (job_match.cc, LostTime), on the run's last collective; 0 on the others.
  uint64_t lost_ns = 0;
  // With lost_ns: the collective of the run this rank waited longest in (its seq): whoever
  // arrived last there is who the time was lost to.
  uint64_t lost_to_seq = 0;
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

// One step's time on this rank.
struct StepTimes {
  uint64_t compute_ns = 0;  // GPU time of work other than NCCL's launched in the step (union)
  uint64_t comm_ns = 0;     // GPU time of NCCL kernels launched in the step (union)
  uint64_t overlap_ns = 0;  // both at once
  uint64_t wait_ns = 0;     // time its collectives waited for the last rank (job_match.cc)
  uint64_t lost_ns = 0;     // time lost waiting (RankCollective::lost_ns)
  uint64_t exposed_comm_ns() const { return comm_ns - overlap_ns; }
};

struct RankDigest {
  std::string path;
  std::optional<uint32_t> rank;  // from the launcher's variables (RANK, ...); else unknown
  uint32_t world_size = 0;       // 0 = unknown
  uint32_t index = 0;            // position among the traces given (the rank when unknown)
  std::string host;
  uint32_t pid = 0;
  // The GPU its collectives ran on (its first kernel's without collectives): id and name.
  std::optional<uint32_t> device_id;
  std::string device;
  uint64_t unix_time_base_ns = 0;  // trace time 0 in ns since the epoch (0 = unknown)
  std::string truncated;         // why the trace ended early; empty when it is complete
  uint64_t end_ns = 0;           // its last event's end (trace time)
  // How it ended (its end-of-trace marker); unset when it has none (cut short: killed?).
  std::optional<v1::EndReason> end_reason;
  uint32_t end_signal = 0;  // the signal it ended on (signal, crash); 0: not known

  // The operations and communicator keys its collectives name, each once (shared by copies of
  // the digest, so that their views stay valid).
  std::shared_ptr<const std::set<std::string, std::less<>>> names;
  std::vector<RankCollective> collectives;  // by start
  size_t collectives_tied_to_calls = 0;     // with communicator and bytes from NCCL's calls
  size_t collectives_keyed_by_stream = 0;   // matched by stream order (no communicator)
  size_t unreadable_payloads = 0;

  StepSet steps;
  std::vector<StepTimes> step_times;  // parallel to steps.steps
  // The host time of the steps' thread per NVTX path, median per step (steps.h
  // HostTimePerStep): where a late rank's host spends its extra time.
  std::map<std::string, uint64_t> host_ns_per_step;
  uint64_t gpu_begin_ns = 0, gpu_end_ns = 0;  // first and last GPU work (trace time)
  uint64_t compute_ns = 0, comm_ns = 0, overlap_ns = 0;
  // When its GPU ran work other than NCCL's, merged (trace time), kept so as not to grow with
  // its kernels (a stretch per kernel where they do not run back to back): `compute_busy`
  // holds, for each of its collectives, the stretch that last began before it, all that the
  // lost time reads of it (collectives.h LostToWaiting); `compute_drawn` the stretches with
  // the gaps shorter than a thousandth of a mean step closed (of the GPU span without steps),
  // for the picture, where such gaps are below a pixel; at most 262145 (rank_digest.cc), and
  // none when no picture is drawn (DigestRankFile's `drawing`).
  std::vector<TimeInterval> compute_busy;
  std::vector<TimeInterval> compute_drawn;
  // Device memory (memory.h DigestMemory); no devices when the trace has no memory events.
  MemoryDigest memory;
  // The most in use on any of its devices; 0 without memory events.
  uint64_t PeakMemoryBytes() const {
    uint64_t peak = 0;
    for (const DeviceMemoryDigest& m : memory.devices) peak = std::max(peak, m.peak_bytes);
    return peak;
  }

  uint32_t RankOrIndex() const { return rank.value_or(index); }
  // The job's steady state on this rank: its steps after the job's `warmup` (at most half of
  // its steps, as steps.h's WarmupSteps); its whole trace without steps.
  size_t Warmup(size_t warmup) const { return std::min(warmup, steps.steps.size() / 2); }
  bool Steady(const RankCollective& c, size_t warmup) const {
    return steps.steps.empty() || (c.step >= 0 && static_cast<size_t>(c.step) >= Warmup(warmup));
  }
  // The steady steps' summed duration; the GPU span without steps.
  uint64_t SteadyNs(size_t warmup) const {
    return steps.steps.empty() ? gpu_end_ns - gpu_begin_ns
                               : SteadyStepTimeOf(steps, Warmup(warmup)).ns;
  }
  // Trace time `ns` on the epoch clock, to line ranks up (valid on one host).
  uint64_t Epoch(uint64_t ns) const { return unix_time_base_ns + ns; }
};

// The digest of the trace at `path`, read in two passes without holding its kernels and API
// calls (rank_stream.h): memory grows with its NVTX ranges, NCCL calls, collectives, memory
// events and steps. `index` is its position among the traces given; `drawing`: keep the
// picture's compute stretches (compute_drawn). Errors: those of reading the trace.
absl::StatusOr<RankDigest> DigestRankFile(const std::string& path, uint32_t index,
                                          const std::string& step, bool drawing = true);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_JOB_RANK_DIGEST_H_
