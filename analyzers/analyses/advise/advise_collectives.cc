// The nccl-wait rule of `warpscope advise`: time this rank's NCCL collectives spent waiting for
// other ranks, when its GPU did nothing useful (docs/advise.md, "Waiting for other ranks").
//
// Each collective's wait is measured against the other ranks' traces when the report is a
// job's (AdviseOptions::collective_waits), else estimated from this trace alone: its duration
// minus the shortest duration of the collectives of its kind, communicator and size (a power of
// two of its bytes; its kernel name where the bytes are unknown), which moved the same data
// without waiting. A wait every instance shares is not seen that way, so the estimate is a
// lower bound. The cost is the time lost (collectives.h, LostToWaiting).
#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/advise/advise_timeline.h"
#include "analyzers/measures/collectives.h"
#include "analyzers/measures/steps.h"

namespace warpscope::advise_internal {
namespace {

constexpr uint64_t kMinEstimatedWaitNs = 20'000;  // shorter estimated waits are jitter

// Estimated waits: each collective against the shortest of its kind, communicator and size.
std::vector<uint64_t> EstimatedWaits(const RankCollectives& rc) {
  using Key = std::tuple<std::string_view, std::string_view, int, std::string_view>;
  auto key = [](const CollectiveInstance& c) {
    return c.bytes > 0 ? Key{c.op, c.comm, std::bit_width(c.bytes), ""}
                       : Key{c.op, c.comm, -1, c.kernel.protocol};
  };
  std::map<Key, uint64_t> shortest;
  for (const CollectiveInstance& c : rc.instances) {
    auto [it, added] = shortest.try_emplace(key(c), c.duration_ns);
    if (!added) it->second = std::min(it->second, c.duration_ns);
  }
  std::vector<uint64_t> waits;
  for (const CollectiveInstance& c : rc.instances) {
    const uint64_t wait = c.duration_ns - shortest[key(c)];
    waits.push_back(wait >= kMinEstimatedWaitNs ? wait : 0);
  }
  return waits;
}

std::vector<TimeInterval> OwnWork(const TraceModel& model) {
  std::vector<TimeInterval> work;
  for (const KernelEvent& k : model.kernels) {
    if (!IsNcclKernel(k.name.empty() ? k.mangled_name : k.name)) work.push_back({k.start_ns, k.end_ns()});
  }
  return MergedIntervals(std::move(work));
}

struct OpTotals {
  uint64_t collectives = 0, waited = 0, wait_ns = 0, lost_ns = 0, runs = 0;
  size_t worst = SIZE_MAX;  // the collective with the longest wait
};

void Describe(const AdviseTimeline& timeline, const AdviseOptions& options,
              const RankCollectives& rc, std::string_view op, const OpTotals& t,
              AdviseFinding* f) {
  const CollectiveInstance& w = rc.instances[t.worst];
  const bool measured = options.collective_waits != nullptr;
  const auto& waited_for = measured ? options.collective_waits->waited_for : std::nullopt;
  f->rule = std::string(kRuleCollectiveWait);
  f->cost_ns = t.lost_ns;
  f->occurrences = t.runs;
  f->device_id = w.device_id;
  f->kernel = std::string(timeline.model().kernels[w.kernel_index].name);
  f->stream = absl::StrCat(w.stream_id);
  if (w.call_start_ns != 0) {
    f->nvtx_path = timeline.PathAt(w.call_thread_id, w.call_start_ns);
    timeline.DescribeThread(w.call_thread_id, f);
  }
  f->worst_begin_ns = w.start_ns;
  f->worst_end_ns = w.end_ns();
  f->title = absl::StrCat("GPU waited inside NCCL ", std::string(op), " for ",
                          waited_for ? absl::StrCat("rank ", *waited_for) : "other ranks");
  f->evidence = absl::StrFormat(
      "%d of %d %s collectives waited, %s in all inside them; counting the collectives queued "
      "behind a waiting one once, %s lost in %d stretches; %s",
      t.waited, t.collectives, std::string(op), FormatDuration(static_cast<double>(t.wait_ns)),
      FormatDuration(static_cast<double>(t.lost_ns)), t.runs,
      measured ? "waits measured against the other ranks' traces"
               : "waits estimated from this trace alone (each collective against the shortest "
                 "of its kind and size here): a wait every step shares is not seen");
  f->fix = waited_for
               ? absl::StrCat("Nothing to fix on this rank: it waits for rank ", *waited_for,
                              "; see the straggler finding.")
               : "The GPU is not busy here: it waits for another rank. Run `warpscope job` (or "
                 "`warpscope advise`) on every rank's trace to find the rank that arrives late "
                 "and why, and fix that rank.";
}

}  // namespace

uint64_t FindCollectiveWaits(const AdviseTimeline& timeline, const AdviseOptions& options,
                             std::vector<AdviseFinding>* findings) {
  const TraceModel& model = timeline.model();
  const RankCollectives rc = FindCollectives(model);
  if (rc.instances.empty()) return 0;
  std::vector<uint64_t> waits = EstimatedWaits(rc);
  if (options.collective_waits != nullptr) {
    for (size_t i = 0; i < rc.instances.size(); ++i) {
      auto it = options.collective_waits->wait_by_kernel.find(rc.instances[i].kernel_index);
      waits[i] = it != options.collective_waits->wait_by_kernel.end() ? it->second : 0;
    }
  }
  const StepSet& steps = timeline.steps();
  std::vector<CollectiveWait> cw;
  for (size_t i = 0; i < rc.instances.size(); ++i) {
    const CollectiveInstance& c = rc.instances[i];
    if (options.device && c.device_id != *options.device) continue;
    const int64_t step = steps.StepAt(c.call_start_ns != 0 ? c.call_start_ns : c.start_ns);
    cw.push_back({c.comm, c.seq, c.start_ns, c.end_ns(), waits[i], c.duration_ns - waits[i], step});
  }
  const std::vector<TimeInterval> own = OwnWork(model);
  LostToWaiting(cw, own);
  // By operation, and whether before the steady state (NCCL's set-up, the first steps'
  // collectives: one-time).
  std::map<std::pair<std::string_view, bool>, OpTotals> by_op;
  uint64_t idle_waiting = 0;
  for (size_t i = 0, j = 0; i < rc.instances.size(); ++i) {
    const CollectiveInstance& c = rc.instances[i];
    if (options.device && c.device_id != *options.device) continue;
    const CollectiveWait& w = cw[j++];
    const uint64_t issued = c.call_start_ns != 0 ? c.call_start_ns : c.start_ns;
    OpTotals& t = by_op[{c.op, issued < timeline.steady_begin_ns()}];
    ++t.collectives;
    t.lost_ns += w.lost_ns;  // on a run's last collective, which may not wait itself
    t.runs += w.lost_ns > 0;
    if (w.wait_ns == 0) continue;
    ++t.waited;
    t.wait_ns += w.wait_ns;
    if (t.worst == SIZE_MAX || w.wait_ns > waits[t.worst]) t.worst = i;
    const std::vector<TimeInterval> waiting{{w.start_ns, w.start_ns + w.wait_ns}};
    idle_waiting += w.wait_ns - OverlapOfMerged(waiting, own);
  }
  for (const auto& [key, t] : by_op) {
    if (t.lost_ns == 0 || t.worst == SIZE_MAX) continue;
    AdviseFinding& f = findings->emplace_back();
    Describe(timeline, options, rc, key.first, t, &f);
    f.one_time = key.second;
    if (f.one_time) absl::StrAppend(&f.title, ", before the steady state (one-time)");
  }
  return idle_waiting;
}

}  // namespace warpscope::advise_internal
