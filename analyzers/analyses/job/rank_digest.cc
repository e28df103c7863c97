// One rank's trace reduced to its identity, collectives and step times (rank_digest.h).
#include "analyzers/analyses/job/rank_digest.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "analyzers/analyses/job/rank_stream.h"
#include "analyzers/measures/collectives.h"
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
  d.end_ns = model.span.end_ns;
  if (model.end_of_trace) {
    d.end_reason = model.end_of_trace->reason;
    d.end_signal = model.end_of_trace->signal;
  }
}

// The gap below which the picture's compute stretches are closed: a thousandth of the rank's
// mean step (of its GPU span without steps), and a 262144th of its GPU span, so that at most a
// thousand stretches a step and 262145 in all (4 MiB) are kept. On a short job the first rule
// decides, and a gap closed is below a pixel of the three steps drawn; on a long one (hours)
// the second.
uint64_t DrawingGap(const RankDigest& d) {
  constexpr uint64_t kStretchesPerStep = 1000, kMostStretches = 262144;
  const std::vector<Step>& steps = d.steps.steps;
  const uint64_t gpu_span = d.gpu_end_ns - d.gpu_begin_ns;
  const uint64_t step = steps.empty() ? gpu_span
                                      : (steps.back().end_ns - steps.front().start_ns) /
                                            steps.size();
  return std::max(step / kStretchesPerStep, gpu_span / kMostStretches);
}

// The first pass's kernels: every kernel's span, NCCL's kept (with their index in file order)
// to find the collectives.
class NcclKernels : public TraceEventSink {
 public:
  using TraceEventSink::Add;
  void Add(const KernelEvent& k) override {
    if (seen == 0) first_device = k.device_id;
    if (gpu_end_ns == 0 || k.start_ns < gpu_begin_ns) gpu_begin_ns = k.start_ns;
    gpu_end_ns = std::max(gpu_end_ns, k.end_ns());
    if (nccl_.Of(k)) {
      kernels.push_back(k);
      index.push_back(seen);
    }
    ++seen;
  }
  std::vector<KernelEvent> kernels;
  std::vector<size_t> index;
  size_t seen = 0;
  uint32_t first_device = 0;
  uint64_t gpu_begin_ns = 0, gpu_end_ns = 0;

 private:
  NcclKernelNames nccl_;
};

void KeepCollectives(const RankCollectives& collectives, RankDigest& d) {
  auto names = std::make_shared<std::set<std::string, std::less<>>>();
  auto name = [&](std::string_view s) {
    auto it = names->find(s);
    if (it == names->end()) it = names->emplace(s).first;
    return std::string_view(*it);
  };
  d.collectives_tied_to_calls = collectives.tied_to_calls;
  d.collectives_keyed_by_stream = collectives.keyed_by_stream;
  d.unreadable_payloads = collectives.unreadable_payloads;
  d.collectives.reserve(collectives.instances.size());
  for (const CollectiveInstance& c : collectives.instances) {
    RankCollective& r = d.collectives.emplace_back();
    r.op = name(c.op);
    r.comm = name(c.comm);
    r.seq = c.seq;
    r.bytes = c.bytes;
    r.comm_size = c.comm_size;
    r.start_ns = c.start_ns;
    r.duration_ns = c.duration_ns;
    r.kernel_index = c.kernel_index;
    if (!d.device_id) d.device_id = c.device_id;
  }
  d.names = std::move(names);
}

// The second pass: every kernel's step (by its launch), the step times and the host's blocked
// time (rank_stream.h).
absl::StatusOr<std::vector<TimeInterval>> StreamRank(const std::string& path,
                                                     const RankCollectives& collectives,
                                                     bool drawing, RankDigest& d) {
  RankStreamInputs in;
  in.steps = &d.steps;
  for (const CollectiveInstance& c : collectives.instances) {
    if (c.call_start_ns != 0) in.call_start_by_kernel.emplace(c.kernel_index, c.call_start_ns);
    in.collective_of_kernel.emplace(c.kernel_index, in.collective_starts.size());
    in.collective_starts.push_back(c.start_ns);
  }
  in.drawing = drawing;
  in.drawing_gap_ns = DrawingGap(d);
  RankStream stream(std::move(in));
  TraceModelOptions again;
  again.keep_events = 0;
  again.keep_pc_sample_records = false;
  again.sink = &stream;
  again.sink_events = EventKindBit(EventKind::kKernel) | EventKindBit(EventKind::kApiCall) |
                      EventKindBit(EventKind::kMemcpy) | EventKindBit(EventKind::kSync);
  again.skip_other_events = true;
  if (absl::Status s = TraceModel::Load(path, again).status(); !s.ok()) return s;
  std::vector<TimeInterval> blocked = stream.Finish(d);
  for (size_t i = 0; i < d.collectives.size(); ++i) {
    d.collectives[i].step = stream.collective_steps()[i];
  }
  return blocked;
}

}  // namespace

absl::StatusOr<RankDigest> DigestRankFile(const std::string& path, uint32_t index,
                                          const std::string& step, bool drawing) {
  // First pass: what grows with steps and collectives (NVTX ranges, NCCL's calls, memory
  // events, NCCL's kernels) is kept; the other events are read and dropped.
  NcclKernels nccl;
  TraceModelOptions first;
  first.keep_events = EventKindBit(EventKind::kNvtxRange) | EventKindBit(EventKind::kNcclCall) |
                      EventKindBit(EventKind::kMemory);
  first.keep_pc_sample_records = false;
  first.sink = &nccl;
  first.sink_events = EventKindBit(EventKind::kKernel);
  absl::StatusOr<TraceModel> model = TraceModel::Load(path, first);
  if (!model.ok()) return model.status();
  RankDigest d;
  d.path = model->source_name;
  d.index = index;
  Identify(*model, d);
  d.steps = FindSteps(model->nvtx_ranges, step);
  d.memory = DigestMemory(*model, std::nullopt, step);
  d.gpu_begin_ns = nccl.gpu_begin_ns;
  d.gpu_end_ns = nccl.gpu_end_ns;
  const RankCollectives collectives = FindCollectives(model->nccl_calls, nccl.kernels, nccl.index);
  KeepCollectives(collectives, d);
  absl::StatusOr<std::vector<TimeInterval>> blocked = StreamRank(path, collectives, drawing, d);
  if (!blocked.ok()) return blocked.status();
  d.host_ns_per_step = HostTimePerStep(model->nvtx_ranges, d.steps, *blocked);
  if (!d.device_id && nccl.seen > 0) d.device_id = nccl.first_device;
  if (d.device_id) {
    const DeviceInfo* dev = model->FindDevice(*d.device_id);
    d.device = dev != nullptr ? dev->name : "";
  }
  return d;
}

}  // namespace warpscope
