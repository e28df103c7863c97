// What the straggler did while the others waited, read from its own trace (job.h). For each
// collective it reached last, the stretch before its arrival as long as the earliest rank's
// wait: how much of it its GPU was busy with its own work, and, on the host thread that runs
// its steps, which NVTX range (the innermost open) held the rest. Mostly busy: its GPU work is
// slower than the others'. Mostly idle: its host was late, in the range named.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/advise.h"
#include "analyzers/analyses/collectives.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/analyses/steps.h"
#include "analyzers/model/interval_union.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

struct Window {
  uint64_t begin_ns, end_ns;
};

// The stretches before each late arrival, in the straggler's trace time.
std::vector<Window> LateWindows(const JobView& view, const RankDigest& r) {
  std::map<std::pair<std::string, uint64_t>, const MatchedCollective*> by_key;
  for (const MatchedCollective& m : view.collectives) by_key[{m.comm, m.seq}] = &m;
  std::vector<Window> out;
  for (const RankCollective& c : r.collectives) {
    auto it = by_key.find({c.comm, c.seq});
    if (it == by_key.end() || it->second->last_rank != r.RankOrIndex()) continue;
    const uint64_t lead = it->second->spread_ns();
    if (lead < view.straggler.uneven_spread_ns) continue;
    out.push_back({c.start_ns > lead ? c.start_ns - lead : 0, c.start_ns});
  }
  return out;
}

// A path with each range's trailing number replaced: "step_12/data_load" -> "step_<N>/data_load".
std::string FamilyPath(std::string_view path) {
  std::string out;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view name = path.substr(0, slash);
    const std::string_view family = StepFamily(name);
    absl::StrAppend(&out, out.empty() ? "" : "/", std::string(family),
                    family.size() != name.size() ? "<N>" : "");
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

// "step_<N>/data_load" for the ranges covering `ns` on `thread`, outermost first.
std::string RangePath(const std::vector<const NvtxRange*>& ranges, uint64_t ns) {
  std::vector<const NvtxRange*> covering;
  for (const NvtxRange* r : ranges) {
    if (r->start_ns <= ns && ns < r->end_ns()) covering.push_back(r);
  }
  std::sort(covering.begin(), covering.end(),
            [](const NvtxRange* a, const NvtxRange* b) { return a->depth < b->depth; });
  std::string path;
  for (const NvtxRange* r : covering) {
    absl::StrAppend(&path, path.empty() ? "" : "/", FamilyPath(r->name));
  }
  return path;
}

// GPU busy time in the windows, and the host's ranges over the idle part, by path.
struct WindowUse {
  uint64_t total_ns = 0, busy_ns = 0;
  std::map<std::string, uint64_t> idle_by_range;  // "" = no range open
  std::map<std::string, uint64_t> busy_by_kernel;
};

WindowUse Use(const TraceModel& model, uint64_t thread, const std::vector<Window>& windows) {
  std::vector<TimeInterval> compute;
  for (const KernelEvent& k : model.kernels) {
    if (!IsNcclKernel(k.name.empty() ? k.mangled_name : k.name)) {
      compute.push_back({k.start_ns, k.end_ns()});
    }
  }
  compute = MergedIntervals(std::move(compute));
  std::vector<const NvtxRange*> ranges;
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (r.thread_id == thread && r.domain != "NCCL") ranges.push_back(&r);
  }
  WindowUse use;
  for (const Window& w : windows) {
    use.total_ns += w.end_ns - w.begin_ns;
    const std::vector<TimeInterval> window{{w.begin_ns, w.end_ns}};
    use.busy_ns += OverlapOfMerged(window, compute);
    for (const KernelEvent& k : model.kernels) {
      const uint64_t b = std::max(k.start_ns, w.begin_ns), e = std::min(k.end_ns(), w.end_ns);
      if (e > b && !IsNcclKernel(k.name)) use.busy_by_kernel[KernelDisplayName(k)] += e - b;
    }
    // The idle part, sampled at 100 points: which ranges the host was in.
    const uint64_t step = std::max<uint64_t>(1, (w.end_ns - w.begin_ns) / 100);
    size_t ci = 0;
    for (uint64_t t = w.begin_ns; t < w.end_ns; t += step) {
      while (ci < compute.size() && compute[ci].end_ns <= t) ++ci;
      const bool busy = ci < compute.size() && compute[ci].begin_ns <= t;
      if (!busy) use.idle_by_range[RangePath(ranges, t)] += std::min(step, w.end_ns - t);
    }
  }
  return use;
}

template <typename Map>
typename Map::const_iterator Largest(const Map& m) {
  return std::max_element(m.begin(), m.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; });
}

// The straggler's own `advise` findings in `range` (a FamilyPath; one per step where the
// range is numbered) or on `kernel`, summed; none there: its top finding, when it has a range.
std::string OwnFinding(const TraceModel& model, const std::string& range,
                       const std::string& kernel = "") {
  const AdviseReport report = BuildAdviseReport(model, model.source_name, AdviseOptions{});
  if (report.findings.empty()) return "";
  uint64_t cost = 0;
  size_t count = 0, first = 0;
  for (size_t i = 0; i < report.findings.size(); ++i) {
    const AdviseFinding& f = report.findings[i];
    const bool here = range.empty() ? !kernel.empty() && f.kernel == kernel
                                    : FamilyPath(f.nvtx_path) == range;
    if (!here) continue;
    if (count++ == 0) first = i;
    cost += f.cost_ns;
  }
  if (count == 0) {
    if (range.empty()) return "";  // slower GPU work: its top finding says nothing of it
    return absl::StrFormat("its own `warpscope advise` top finding: %s: %s",
                           report.findings.front().rule, report.findings.front().title);
  }
  const AdviseFinding& f = report.findings[first];
  return absl::StrFormat("its own `warpscope advise` finds it: %s in %s, %d finding%s (#%d "
                         "first) costing %s in all",
                         f.rule, range.empty() ? ShortKernelName(kernel, true) : range, count,
                         count == 1 ? "" : "s", first + 1,
                         FormatDuration(static_cast<double>(cost)));
}

double MedianComputePerStep(const RankDigest& r) {
  std::vector<uint64_t> v;
  for (const StepTimes& t : r.step_times) v.push_back(t.compute_ns);
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return static_cast<double>(v[v.size() / 2]);
}

}  // namespace

void ExplainStraggler(JobView& view, const TraceModel& trace) {
  StragglerVerdict& v = view.straggler;
  const RankDigest* me = nullptr;
  std::vector<double> others_compute;
  for (const RankDigest& r : view.ranks) {
    if (v.rank && r.RankOrIndex() == *v.rank) {
      me = &r;
    } else {
      others_compute.push_back(MedianComputePerStep(r));
    }
  }
  if (me == nullptr) return;
  const std::vector<Window> windows = LateWindows(view, *me);
  const WindowUse use = Use(trace, me->steps.thread_id, windows);
  if (use.total_ns == 0) return;
  const double busy = static_cast<double>(use.busy_ns) / use.total_ns;
  std::sort(others_compute.begin(), others_compute.end());
  const double others = others_compute.empty() ? 0 : others_compute[others_compute.size() / 2];
  if (busy >= 0.5) {
    auto kernel = Largest(use.busy_by_kernel);
    v.cause = absl::StrFormat(
        "Its GPU was busy with its own work %.0f%% of the time the others waited (slower GPU "
        "work): its compute takes a median of %s per step against %s on the other ranks; the "
        "most of it in %s.",
        100 * busy, FormatDuration(MedianComputePerStep(*me)), FormatDuration(others),
        kernel == use.busy_by_kernel.end() ? std::string("(no kernel)")
                                           : ShortKernelName(kernel->first, true));
    v.finding = kernel == use.busy_by_kernel.end() ? "" : OwnFinding(trace, "", kernel->first);
    return;
  }
  auto range = Largest(use.idle_by_range);
  const std::string where =
      range == use.idle_by_range.end() || range->first.empty()
          ? std::string("outside any NVTX range")
          : absl::StrCat("in NVTX range ", range->first);
  const double range_share =
      range == use.idle_by_range.end() ? 0 : static_cast<double>(range->second) / use.total_ns;
  v.cause = absl::StrFormat(
      "Its GPU sat idle %.0f%% of the time the others waited, while its host was %s (%.0f%% "
      "of that time): the host is late, not the GPU.",
      100 * (1 - busy), where, 100 * range_share);
  v.finding = OwnFinding(trace, range == use.idle_by_range.end() ? "" : range->first);
}

}  // namespace warpscope
