// What the straggler did while the others waited (job.h), in this order:
//  1. Its host: where the steps' thread spends its time per step (RankDigest's
//     host_ns_per_step, waiting for the GPU left out) against the other ranks' median. The
//     path with the largest excess is the cause when that excess is at least half the
//     straggler's lead: its host is late there.
//  2. Its GPU: its compute per step against the other ranks' median, when longer by at least
//     half its lead: slower GPU work, with the kernel it spent the time before its late
//     arrivals in.
//  3. Otherwise the stretches before its late arrivals (each as long as the lead there), read
//     from its own trace: GPU busy with its own work most of the time means its work ran later
//     but no slower; GPU idle most of the time, the NVTX range its host was in meanwhile.
// Rule 1 comes first because in a launch-bound step the straggler's own launches, late by its
// host's stall, fill the stretch before its arrival: that stretch names the phase after the
// stall, not the stall.
#include <algorithm>
#include <map>
#include <string_view>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/advise/advise_sample.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/measures/collectives.h"
#include "analyzers/measures/median.h"
#include "analyzers/measures/steps.h"
#include "analyzers/model/interval_union.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

struct Window {
  uint64_t begin_ns, end_ns;
};

// The stretches before each late arrival, in the straggler's trace time.
std::vector<Window> LateWindows(const JobView& view, const RankDigest& r) {
  std::map<std::pair<std::string_view, uint64_t>, const MatchedCollective*> by_key;
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
    absl::StrAppend(&path, path.empty() ? "" : "/", RangeFamily(r->name));
  }
  return path;
}

// GPU busy time in the windows, and the host's ranges over the idle part, by path.
struct WindowUse {
  uint64_t total_ns = 0, busy_ns = 0;
  std::map<std::string, uint64_t> idle_by_range;  // "" = no range open
  std::map<std::string, uint64_t> busy_by_kernel;
  KernelNames names;  // with --short-names, over every kernel name of the trace
};

// The straggler's non-NCCL kernels within the windows, as its trace streams by: each kernel
// clipped to every window it overlaps (the union of the clipped parts is the window's part of
// the union of all), its time there by name, and every kernel name in order of first launch.
class WindowKernels : public TraceEventSink {
 public:
  explicit WindowKernels(const std::vector<Window>& windows) : windows_(windows) {
    by_begin_.resize(windows.size());
    for (size_t i = 0; i < windows.size(); ++i) {
      by_begin_[i] = i;
      longest_ns_ = std::max(longest_ns_, windows[i].end_ns - windows[i].begin_ns);
    }
    std::sort(by_begin_.begin(), by_begin_.end(),
              [&](size_t a, size_t b) { return windows[a].begin_ns < windows[b].begin_ns; });
    compute.resize(windows.size());
  }
  using TraceEventSink::Add;
  void Add(const KernelEvent& k) override {
    // Names are interned: a pair of addresses seen once is a name seen once.
    if (seen_.insert({k.name.data(), k.mangled_name.data()}).second) {
      std::string shown = KernelDisplayName(k);
      if (shown_.insert(shown).second) names_in_order.push_back(std::move(shown));
    }
    const bool nccl = IsNcclKernel(k.name.empty() ? k.mangled_name : k.name);
    const uint64_t from = k.start_ns > longest_ns_ ? k.start_ns - longest_ns_ : 0;
    auto first = std::lower_bound(by_begin_.begin(), by_begin_.end(), from,
                                  [&](size_t w, uint64_t t) { return windows_[w].begin_ns < t; });
    for (auto it = first; it != by_begin_.end() && windows_[*it].begin_ns < k.end_ns(); ++it) {
      const Window& w = windows_[*it];
      const uint64_t b = std::max(k.start_ns, w.begin_ns), e = std::min(k.end_ns(), w.end_ns);
      if (e <= b) continue;
      if (!nccl) compute[*it].push_back({b, e});
      if (!IsNcclKernel(k.name)) busy_by_kernel[KernelDisplayName(k)] += e - b;
    }
  }
  std::vector<std::vector<TimeInterval>> compute;  // per window
  std::map<std::string, uint64_t> busy_by_kernel;
  std::vector<std::string> names_in_order;  // KernelDisplayName, in order of first launch

 private:
  const std::vector<Window>& windows_;
  std::vector<size_t> by_begin_;
  uint64_t longest_ns_ = 0;
  std::set<std::pair<const char*, const char*>> seen_;
  std::set<std::string> shown_;
};

// GPU busy time in the windows and the host's ranges over the idle part, from the straggler's
// trace read once more (its NVTX ranges kept, its kernels streamed).
absl::StatusOr<WindowUse> Use(const std::string& path, uint64_t thread,
                              const std::vector<Window>& windows, bool short_names) {
  WindowKernels kernels(windows);
  TraceModelOptions load;
  load.keep_events = EventKindBit(EventKind::kNvtxRange);
  load.keep_pc_sample_records = false;
  load.sink = &kernels;
  load.sink_events = EventKindBit(EventKind::kKernel);
  load.skip_other_events = true;
  absl::StatusOr<TraceModel> model = TraceModel::Load(path, load);
  if (!model.ok()) return model.status();
  std::vector<const NvtxRange*> ranges;
  for (const NvtxRange& r : model->nvtx_ranges) {
    if (r.thread_id == thread && r.domain != "NCCL") ranges.push_back(&r);
  }
  WindowUse use;
  for (size_t i = 0; i < windows.size(); ++i) {
    const Window& w = windows[i];
    const std::vector<TimeInterval> compute = MergedIntervals(std::move(kernels.compute[i]));
    use.total_ns += w.end_ns - w.begin_ns;
    use.busy_ns += LengthOfMerged(compute);
    // The idle part, sampled at 100 points: which ranges the host was in.
    const uint64_t step = std::max<uint64_t>(1, (w.end_ns - w.begin_ns) / 100);
    size_t ci = 0;
    for (uint64_t t = w.begin_ns; t < w.end_ns; t += step) {
      while (ci < compute.size() && compute[ci].end_ns <= t) ++ci;
      const bool busy = ci < compute.size() && compute[ci].begin_ns <= t;
      if (!busy) use.idle_by_range[RangePath(ranges, t)] += std::min(step, w.end_ns - t);
    }
  }
  use.busy_by_kernel = std::move(kernels.busy_by_kernel);
  if (short_names) {
    std::vector<std::string_view> names;
    for (const std::string& n : kernels.names_in_order) names.push_back(n);
    use.names = KernelNames::Short(names);
  }
  return use;
}

template <typename Map>
typename Map::const_iterator Largest(const Map& m) {
  return std::max_element(m.begin(), m.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; });
}

// The straggler's own `advise` findings in `range` (a RangeFamily of a path; one per step where the
// range is numbered) or on `kernel`, summed; none there: its top finding, when it has a range.
// Its trace is read as `advise` reads it: whole, or its first steps within `max_events`
// (advise_sample.h), which the sentence then says; "" when it cannot be read.
std::string OwnFinding(const std::string& path, uint64_t max_events, const std::string& range,
                       const std::string& kernel = "", const KernelNames& names = KernelNames()) {
  absl::StatusOr<TraceModel> ranges = TraceModel::Load(path, AdviseRangesLoadOptions());
  if (!ranges.ok()) return "";
  absl::StatusOr<AdviseSample> sample = PlanAdviseSample(*ranges, max_events, "");
  if (!sample.ok()) return "";
  absl::StatusOr<TraceModel> model = LoadAdviseSample(*ranges, &*sample);
  if (!model.ok()) return "";
  const AdviseReport report = BuildAdviseReport(*model, path, AdviseOptions{});
  const std::string part = sample->slice ? absl::StrFormat(" (%d of its %d steps read)",
                                                           sample->steps_read, sample->steps)
                                         : "";
  if (report.findings.empty()) return "";
  uint64_t cost = 0;
  size_t count = 0, first = 0;
  for (size_t i = 0; i < report.findings.size(); ++i) {
    const AdviseFinding& f = report.findings[i];
    const bool here =
        range.empty() ? !kernel.empty() && f.kernel == kernel : RangeFamily(f.nvtx_path) == range;
    if (!here) continue;
    if (count++ == 0) first = i;
    cost += f.cost_ns;
  }
  if (count == 0) {
    if (range.empty()) return "";  // slower GPU work: its top finding says nothing of it
    return absl::StrFormat("its own `warpscope advise` top finding: %s: %s%s",
                           report.findings.front().rule, report.findings.front().title, part);
  }
  const AdviseFinding& f = report.findings[first];
  return absl::StrFormat(
      "its own `warpscope advise` finds it: %s in %s, %d finding%s (#%d "
      "first) costing %s in all%s",
      f.rule, range.empty() ? names.Show(kernel, true) : range, count, count == 1 ? "" : "s",
      first + 1, FormatDuration(static_cast<double>(cost)), part);
}

uint64_t MedianComputePerStep(const RankDigest& r) {
  std::vector<uint64_t> v;
  for (const StepTimes& t : r.step_times) v.push_back(t.compute_ns);
  return MedianOf(std::move(v));
}

struct HostExcess {
  std::string path;
  uint64_t mine_ns = 0, others_ns = 0;
  uint64_t excess_ns() const { return mine_ns > others_ns ? mine_ns - others_ns : 0; }
};

// The path where `me`'s host spends the most time per step beyond the other ranks' median.
HostExcess LargestHostExcess(const RankDigest& me, const std::vector<const RankDigest*>& others) {
  HostExcess best;
  for (const auto& [path, mine] : me.host_ns_per_step) {
    std::vector<uint64_t> theirs;
    for (const RankDigest* r : others) {
      auto it = r->host_ns_per_step.find(path);
      theirs.push_back(it == r->host_ns_per_step.end() ? 0 : it->second);
    }
    HostExcess h{path, mine, MedianOf(std::move(theirs))};
    if (h.excess_ns() > best.excess_ns()) best = std::move(h);
  }
  return best;
}

std::string Where(const std::string& path) {
  return path.empty() ? std::string("outside any NVTX range")
                      : absl::StrCat("in NVTX range ", path);
}

// Rule 1's cause: the path where the straggler's host spends the extra time.
void SayHostIsLate(const HostExcess& host, const RankDigest& me, uint64_t max_events,
                   StragglerVerdict& v) {
  v.cause_kind = StragglerCause::kHost;
  v.cause_range = host.path;
  v.cause_host_excess_ns = host.excess_ns();
  v.cause = absl::StrFormat(
      "Its host spends a median of %s per step %s against %s on the other ranks: %s more, "
      "%.0f%% of its lead. The host is late, not the GPU.",
      FormatDuration(static_cast<double>(host.mine_ns)), Where(host.path),
      FormatDuration(static_cast<double>(host.others_ns)),
      FormatDuration(static_cast<double>(host.excess_ns())),
      100.0 * static_cast<double>(host.excess_ns()) /
          static_cast<double>(std::max<uint64_t>(v.median_lead_ns, 1)));
  v.finding = OwnFinding(me.path, max_events, host.path);
}

// Rule 3's cause when the GPU sat idle before its late arrivals: the host's range meanwhile.
void SayHostWasIdle(const WindowUse& use, double busy, const RankDigest& me, uint64_t max_events,
                    StragglerVerdict& v) {
  auto range = Largest(use.idle_by_range);
  const std::string path = range == use.idle_by_range.end() ? "" : range->first;
  const double range_share =
      range == use.idle_by_range.end() ? 0 : static_cast<double>(range->second) / use.total_ns;
  v.cause_kind = StragglerCause::kHost;
  v.cause_range = path;
  v.cause = absl::StrFormat(
      "Its GPU sat idle %.0f%% of the time the others waited, while its host was %s (%.0f%% "
      "of that time): the host is late, not the GPU.",
      100 * (1 - busy), Where(path), 100 * range_share);
  v.finding = OwnFinding(me.path, max_events, path);
}

}  // namespace

absl::Status ExplainStraggler(JobView& view, const JobOptions& options) {
  StragglerVerdict& v = view.straggler;
  const RankDigest* me = nullptr;
  std::vector<const RankDigest*> others;
  std::vector<uint64_t> others_compute;
  for (const RankDigest& r : view.ranks) {
    if (v.rank && r.RankOrIndex() == *v.rank) {
      me = &r;
    } else {
      others.push_back(&r);
      others_compute.push_back(MedianComputePerStep(r));
    }
  }
  if (me == nullptr || others.empty()) return absl::OkStatus();
  const uint64_t half_lead = v.median_lead_ns / 2;

  const HostExcess host = LargestHostExcess(*me, others);
  if (host.excess_ns() > 0 && host.excess_ns() >= half_lead) {
    SayHostIsLate(host, *me, options.max_events, v);
    return absl::OkStatus();
  }

  const std::vector<Window> windows = LateWindows(view, *me);
  absl::StatusOr<WindowUse> read = Use(me->path, me->steps.thread_id, windows, options.short_names);
  if (!read.ok()) return read.status();
  const WindowUse& use = *read;
  const uint64_t mine = MedianComputePerStep(*me), theirs = MedianOf(others_compute);
  auto kernel = Largest(use.busy_by_kernel);
  const KernelNames& names = use.names;
  const std::string kernel_name = kernel == use.busy_by_kernel.end()
                                      ? std::string("(no kernel)")
                                      : names.Show(kernel->first, true);
  auto kernel_finding = [&] {
    return kernel == use.busy_by_kernel.end()
               ? std::string()
               : OwnFinding(me->path, options.max_events, "", kernel->first, names);
  };
  if (!me->step_times.empty() && mine > theirs && mine - theirs >= half_lead && mine - theirs > 0) {
    v.cause_kind = StragglerCause::kGpu;
    v.cause = absl::StrFormat(
        "Its GPU work is slower: its compute takes a median of %s per step against %s on the "
        "other ranks; before its late arrivals its GPU spent the most time in %s.",
        FormatDuration(static_cast<double>(mine)), FormatDuration(static_cast<double>(theirs)),
        kernel_name);
    v.finding = kernel_finding();
    return absl::OkStatus();
  }
  if (use.total_ns == 0) return absl::OkStatus();
  const double busy = static_cast<double>(use.busy_ns) / static_cast<double>(use.total_ns);
  if (busy >= 0.5) {
    // Without steps there is no per-step compute to compare: the stretches decide.
    if (me->step_times.empty()) {
      v.cause_kind = StragglerCause::kGpu;
      v.cause = absl::StrFormat(
          "Its GPU was busy with its own work %.0f%% of the time the others waited (slower GPU "
          "work); the most of it in %s.",
          100 * busy, kernel_name);
      v.finding = kernel_finding();
      return absl::OkStatus();
    }
    v.cause_kind = StragglerCause::kLater;
    v.cause = absl::StrFormat(
        "Its GPU was busy with its own work %.0f%% of the time the others waited, but its "
        "compute per step (%s) is no longer than the others' (%s): its work ran later, not "
        "slower, and no NVTX range of its host takes longer than theirs. Look at what delays "
        "its launches (a host stall the ranges do not cover, a launch queue that filled).",
        100 * busy, FormatDuration(static_cast<double>(mine)),
        FormatDuration(static_cast<double>(theirs)));
    return absl::OkStatus();
  }
  SayHostWasIdle(use, busy, *me, options.max_events, v);
  return absl::OkStatus();
}

}  // namespace warpscope
