// One rank's trace reduced to its identity, collectives and step times (rank_digest.h).
#include "analyzers/analyses/job/rank_digest.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <utility>

#include "analyzers/measures/collectives.h"
#include "analyzers/measures/launch_times.h"
#include "analyzers/model/interval_union.h"
#include "proto/settings/job_variables.h"

namespace warpscope {
namespace {

template <size_t N>
std::optional<uint32_t> FirstNumber(const TraceHeader& h, const std::string_view (&names)[N]) {
  for (std::string_view name : names) {
    for (const auto& [k, v] : h.rank_env) {
      uint32_t n = 0;
      if (k != name) continue;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec == std::errc() && end == v.data() + v.size()) return n;
    }
  }
  return std::nullopt;
}

void Identify(const TraceModel& model, RankDigest& d) {
  d.rank = FirstNumber(model.header, kRankVariables);
  d.world_size = FirstNumber(model.header, kWorldSizeVariables).value_or(0);
  // Without the launcher's variables, NCCL's own word (a CommDestroy or CommAbort payload
  // names the rank) for the largest communicator.
  int32_t largest = 0;
  for (const NcclCall& c : model.nccl_calls) {
    if (c.comm_rank < 0 || c.comm_size <= largest) continue;
    largest = c.comm_size;
    if (!d.rank) d.rank = static_cast<uint32_t>(c.comm_rank);
    if (d.world_size == 0) d.world_size = static_cast<uint32_t>(c.comm_size);
  }
  d.host = model.header.hostname;
  d.pid = model.header.pid;
  d.unix_time_base_ns = model.header.unix_time_base_ns;
  d.truncated = model.truncation.truncated() ? model.truncation.Describe() : "";
}

// When each kernel was launched (host time): its API call, or for NCCL's kernels the NCCL call
// that made it; 0 when neither is in the trace.
std::vector<uint64_t> LaunchTimes(const TraceModel& model, const RankCollectives& collectives) {
  std::unordered_map<uint32_t, uint64_t> call_start;
  call_start.reserve(model.api_calls.size());
  for (const ApiCallEvent& a : model.api_calls) {
    if (a.correlation_id != 0) call_start.emplace(a.correlation_id, a.start_ns);
  }
  std::vector<uint64_t> launch(model.kernels.size(), 0);
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    auto it = call_start.find(model.kernels[i].correlation_id);
    if (model.kernels[i].correlation_id != 0 && it != call_start.end()) launch[i] = it->second;
  }
  for (const CollectiveInstance& c : collectives.instances) {
    if (c.call_start_ns != 0) launch[c.kernel_index] = c.call_start_ns;
  }
  return launch;
}

// The step of every kernel: the step its launch fell in. A kernel with no launch time
// (launched through the driver API without its record) is placed as launch_times.h says.
std::vector<int64_t> KernelSteps(const TraceModel& model, const StepSet& steps,
                                 const std::vector<uint64_t>& launch) {
  UnrecordedLaunchTimes unrecorded;
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const KernelEvent& k = model.kernels[i];
    if (launch[i] != 0) unrecorded.AddKnown(k.device_id, k.stream_id, k.start_ns, launch[i]);
  }
  std::vector<int64_t> step(model.kernels.size(), -1);
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const KernelEvent& k = model.kernels[i];
    const uint64_t at =
        launch[i] != 0 ? launch[i] : unrecorded.Place(k.device_id, k.stream_id, k.start_ns).ns;
    step[i] = steps.StepAt(at);
  }
  return step;
}

// Compute, communication and their overlap, per step and over the whole trace.
void StepTimesOf(const TraceModel& model, const std::vector<int64_t>& kernel_step,
                 RankDigest& d) {
  const size_t n = d.steps.steps.size();
  std::vector<std::vector<TimeInterval>> compute(n + 1), comm(n + 1);  // [n]: the whole trace
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const KernelEvent& k = model.kernels[i];
    const std::string_view name = k.name.empty() ? k.mangled_name : k.name;
    const TimeInterval t{k.start_ns, k.end_ns()};
    auto& bucket = IsNcclKernel(name) ? comm : compute;
    bucket[n].push_back(t);
    if (kernel_step[i] >= 0) bucket[static_cast<size_t>(kernel_step[i])].push_back(t);
    if (d.gpu_end_ns == 0 || k.start_ns < d.gpu_begin_ns) d.gpu_begin_ns = k.start_ns;
    d.gpu_end_ns = std::max(d.gpu_end_ns, k.end_ns());
  }
  d.step_times.resize(n);
  for (size_t s = 0; s <= n; ++s) {
    const std::vector<TimeInterval> a = MergedIntervals(std::move(compute[s]));
    const std::vector<TimeInterval> b = MergedIntervals(std::move(comm[s]));
    StepTimes t{LengthOfMerged(a), LengthOfMerged(b), OverlapOfMerged(a, b), 0, 0};
    if (s < n) {
      d.step_times[s] = t;
    } else {
      d.compute_ns = t.compute_ns;
      d.comm_ns = t.comm_ns;
      d.overlap_ns = t.overlap_ns;
      d.compute_busy = a;
    }
  }
}

// The stretches of `busy` (merged, in order) that last began before each collective: where
// OwnWorkDone (collectives.cc) looks for any collective's start, it finds the same one here.
std::vector<TimeInterval> LastBeforeEach(const std::vector<TimeInterval>& busy,
                                         const std::vector<RankCollective>& collectives) {
  std::vector<size_t> kept;
  kept.reserve(collectives.size());
  for (const RankCollective& c : collectives) {
    auto it = std::upper_bound(busy.begin(), busy.end(), c.start_ns,
                               [](uint64_t t, const TimeInterval& b) { return t < b.begin_ns; });
    if (it != busy.begin()) kept.push_back(static_cast<size_t>(it - busy.begin()) - 1);
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  std::vector<TimeInterval> out;
  out.reserve(kept.size());
  for (size_t i : kept) out.push_back(busy[i]);
  return out;
}

// `busy` with every gap shorter than a thousandth of the rank's mean step closed (of its GPU
// span without steps), and than a 262144th of its GPU span: at most a thousand stretches a
// step and 262145 in all (4 MiB). On a short job the first rule decides, and a gap closed
// is below a pixel of the three steps drawn; on a long one (hours) the second.
std::vector<TimeInterval> ForDrawing(const std::vector<TimeInterval>& busy, const RankDigest& d) {
  constexpr uint64_t kStretchesPerStep = 1000, kMostStretches = 262144;
  const std::vector<Step>& steps = d.steps.steps;
  const uint64_t gpu_span = d.gpu_end_ns - d.gpu_begin_ns;
  const uint64_t step = steps.empty() ? gpu_span
                                      : (steps.back().end_ns - steps.front().start_ns) /
                                            steps.size();
  const uint64_t closed = std::max(step / kStretchesPerStep, gpu_span / kMostStretches);
  std::vector<TimeInterval> out;
  for (const TimeInterval& t : busy) {
    if (!out.empty() && t.begin_ns < out.back().end_ns + closed) {
      out.back().end_ns = std::max(out.back().end_ns, t.end_ns);
    } else {
      out.push_back(t);
    }
  }
  out.shrink_to_fit();
  return out;
}

}  // namespace

RankDigest DigestRank(const TraceModel& model, uint32_t index, const std::string& step) {
  RankDigest d;
  d.path = model.source_name;
  d.index = index;
  Identify(model, d);
  d.steps = FindSteps(model.nvtx_ranges, step);
  d.host_ns_per_step = HostTimePerStep(model, d.steps);
  d.memory = DigestMemory(model, std::nullopt, step);
  const RankCollectives collectives = FindCollectives(model);
  d.collectives_tied_to_calls = collectives.tied_to_calls;
  d.collectives_keyed_by_stream = collectives.keyed_by_stream;
  d.unreadable_payloads = collectives.unreadable_payloads;
  const std::vector<uint64_t> launch = LaunchTimes(model, collectives);
  const std::vector<int64_t> kernel_step = KernelSteps(model, d.steps, launch);
  StepTimesOf(model, kernel_step, d);
  d.collectives.reserve(collectives.instances.size());
  for (const CollectiveInstance& c : collectives.instances) {
    RankCollective& r = d.collectives.emplace_back();
    r.op = std::string(c.op);
    r.comm = c.comm;
    r.seq = c.seq;
    r.bytes = c.bytes;
    r.comm_size = c.comm_size;
    r.start_ns = c.start_ns;
    r.duration_ns = c.duration_ns;
    r.step = kernel_step[c.kernel_index];
    r.kernel_index = c.kernel_index;
    if (!d.device_id) d.device_id = c.device_id;
  }
  d.compute_drawn = ForDrawing(d.compute_busy, d);
  d.compute_busy = LastBeforeEach(d.compute_busy, d.collectives);
  if (!d.device_id && !model.kernels.empty()) d.device_id = model.kernels.front().device_id;
  if (d.device_id) {
    const DeviceInfo* dev = model.FindDevice(*d.device_id);
    d.device = dev != nullptr ? dev->name : "";
  }
  return d;
}

}  // namespace warpscope
