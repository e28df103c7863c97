// The gap rules of `warpscope advise`: each stretch where a device had no work, inside its
// first-to-last GPU work, gets the host activity that caused it (docs/advise.md, "Idle gaps").
// Gaps with one cause in one place are summed into one finding.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise/advise_gap_groups.h"
#include "analyzers/analyses/advise/advise_timeline.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/model/interval_union.h"

namespace warpscope::advise_internal {
namespace {

// The steady state begins with the first step after the warm-up steps (steps.h: the program's
// steps, and the leading ones that take 1.5 times the median step). Gaps at least half before
// it, and gaps this many times the median gap of their cause (with >= 5 such gaps; a cause
// with fewer, such as the weights' copies, against the median of all the device's gaps) that
// begin before the first steady step ends (without steps: in the first tenth of the device's
// GPU work, by count), are one-time start-up gaps. Later, such an outlier is a one-off: its cause
// keeps the median, the rest is `one-off`; unless the cause's outliers recur (docs/advise.md,
// "One-off gaps"): in at least every kRecurringSteps-th steady step, or in at least 1 of
// kRecurringGaps of the cause's gaps without steps (and at least kMinRecurring times either
// way; MarkRecurring). A recurring long gap is part of the program's step, and the cause keeps
// all of it. A recurring long launch gap is the host stalling between two launches: it goes to
// the range the host was in (host-range, "after launching its GPU work").
constexpr uint64_t kRecurringSteps = 2;
// A launch gap this many times the median launch call is the host doing something else than
// launching (a stall), whatever the usual launch gap is.
constexpr uint64_t kStallFactor = 100;
constexpr uint64_t kRecurringGaps = 10;
constexpr uint64_t kMinRecurring = 3;

// Where the program's steady state begins on one device (docs/advise.md, "Start-up").
struct SteadyState {
  std::string range;  // the steps' range family ("" without steps)
  uint64_t first_start_ns = 0;  // the first steady step's start
  uint64_t first_end_ns = 0;    // its end; without steps, the end of the first tenth of work
  // Per cause rule (with >= 5 gaps): the median gap; gaps at least kOutlierFactor times it
  // are outliers.
  std::map<std::string_view, uint64_t> median_ns;
  // The median of all the device's gaps (with >= 5 of them): what a cause too rare to have a
  // median of its own is compared with, for start-up only.
  uint64_t all_median_ns = 0;
  // Cause rules whose steady-state outliers recur: never one-off.
  std::set<std::string_view> recurring;
  // Places where long launch gaps recur: the host stalls there between two launches.
  std::set<std::string> stall_places;

  // Launch gaps from this long on are stalls (kStallFactor); 0: only outliers are.
  uint64_t stall_ns = 0;

  // A launch gap far longer than the usual one, or than launching takes.
  bool IsLongLaunchGap(uint64_t length_ns, const GapCause& cause) const {
    return cause.rule == kRuleLaunchBound &&
           (IsOutlier(length_ns, cause.rule) || (stall_ns > 0 && length_ns >= stall_ns));
  }
  bool IsRecurringStall(uint64_t length_ns, const GapCause& cause) const {
    return IsLongLaunchGap(length_ns, cause) && stall_places.contains(cause.host_path);
  }

  bool IsStartup(uint64_t begin_ns, uint64_t length_ns, std::string_view rule) const {
    // At least half of the gap before the first instance began.
    if (!range.empty() && begin_ns < first_start_ns &&
        2 * (first_start_ns - begin_ns) >= length_ns) {
      return true;
    }
    if (begin_ns >= first_end_ns) return false;
    if (median_ns.contains(rule)) return IsOutlier(length_ns, rule);
    return all_median_ns > 0 && length_ns / kOutlierFactor >= all_median_ns;
  }

  bool IsOutlier(uint64_t length_ns, std::string_view rule) const {
    const auto it = median_ns.find(rule);
    return it != median_ns.end() && length_ns / kOutlierFactor >= std::max<uint64_t>(it->second, 1);
  }

  // A steady-state gap that is an outlier of its cause, other than a host range (whose range
  // says what the host did), is one-off: its cause keeps the median gap.
  bool IsOneOff(uint64_t length_ns, std::string_view rule) const {
    return rule != kRuleHostRange && !recurring.contains(rule) && IsOutlier(length_ns, rule);
  }
  uint64_t Typical(std::string_view rule) const { return median_ns.at(rule); }
};

std::vector<Gap> GapsOf(const std::vector<GpuWork>& work, uint64_t* busy_ns) {
  std::vector<TimeInterval> intervals;
  intervals.reserve(work.size());
  for (const GpuWork& w : work) intervals.push_back({w.start_ns, w.end_ns()});
  const IntervalUnion busy = UnionOfSorted(intervals);
  *busy_ns = busy.covered_ns;
  std::vector<Gap> gaps;
  for (const IntervalGap& g : busy.gaps) {
    gaps.push_back({g.begin_ns, g.end_ns, &work[g.before], &work[g.after]});
  }
  return gaps;
}

// The recorder's own time in the trace: its overhead records (warpscope's flushes and buffer
// translations, CUPTI's), by start.
class RecorderTime {
 public:
  explicit RecorderTime(const TraceModel& model) {
    for (const OverheadEvent& o : model.overheads) {
      events_.push_back(&o);
      longest_ns_ = std::max(longest_ns_, o.duration_ns);
    }
    std::sort(events_.begin(), events_.end(), [](const OverheadEvent* a, const OverheadEvent* b) {
      return a->start_ns < b->start_ns;
    });
  }

  // How much of [begin_ns, end_ns) overhead records cover, and (`kinds`, may be null) the
  // kinds of those that reach into it.
  uint64_t Within(uint64_t begin_ns, uint64_t end_ns, std::set<std::string_view>* kinds) const {
    // Events starting at most the longest duration before `begin_ns` may reach into it.
    const uint64_t from = begin_ns > longest_ns_ ? begin_ns - longest_ns_ : 0;
    auto it = std::lower_bound(events_.begin(), events_.end(), from,
                               [](const OverheadEvent* o, uint64_t t) { return o->start_ns < t; });
    uint64_t ns = 0;
    uint64_t covered_to = begin_ns;  // events come by start: count each ns once
    for (; it != events_.end() && (*it)->start_ns < end_ns; ++it) {
      const OverheadEvent& o = **it;
      if (o.end_ns() <= begin_ns) continue;
      if (kinds != nullptr) kinds->insert(o.kind);
      const uint64_t lo = std::max(o.start_ns, covered_to);
      const uint64_t hi = std::min(o.end_ns(), end_ns);
      if (hi > lo) {
        ns += hi - lo;
        covered_to = hi;
      }
    }
    return ns;
  }

 private:
  std::vector<const OverheadEvent*> events_;
  uint64_t longest_ns_ = 0;
};

class GapClassifier {
 public:
  GapClassifier(const AdviseTimeline& timeline, const AdviseOptions& options)
      : timeline_(timeline), options_(options) {}

  // False when the host is not to blame or the launch of the next work is unknown. A launch
  // call that began before the gap is the host's only while it was still under way when the
  // GPU ran dry and the work started as it returned (within the edge tolerance): the host was
  // too slow with it. Returned before the gap began, the work was queued in time; started
  // well after the return, the GPU waited for something else (a stream waiting for an event,
  // a module loading) once the host was done.
  bool Classify(const Gap& gap, GapCause* cause) {
    const ApiCallEvent* launch = timeline_.LaunchOf(gap.after->correlation_id);
    if (launch == nullptr) return false;
    if (launch->start_ns < gap.begin_ns &&
        (launch->end_ns() <= gap.begin_ns ||
         gap.end_ns > launch->end_ns() + options_.edge_tolerance_ns)) {
      return false;
    }
    cause->thread_id = launch->thread_id;
    // A range that launched no GPU work at all first; a host wait next (the host was waiting
    // for the GPU, not working); then a range that had launched work before the gap but none
    // during it (a data loader that made its batch on the GPU, then stalled on the host).
    if (uint32_t range = 0; HostRangeCovering(gap, *launch, /*launched_before=*/false, &range) ||
                            (WaitEndingGap(gap, *launch) == nullptr &&
                             HostRangeCovering(gap, *launch, /*launched_before=*/true, &range))) {
      cause->rule = kRuleHostRange;
      cause->label = timeline_.RangeName(range);
      cause->path = timeline_.RangePath(range);
      return true;
    }
    if (const HostWait* wait = WaitEndingGap(gap, *launch); wait != nullptr) {
      cause->label = wait->label;
      cause->where = timeline_.CallSiteText(wait->correlation_id);
      cause->wait_site = CallSiteOfCall(timeline_.model(), wait->correlation_id).Display();
      cause->lead_ns = gap.begin_ns > wait->start_ns ? gap.begin_ns - wait->start_ns : 0;
      cause->path = timeline_.PathAt(launch->thread_id, wait->start_ns);
      const bool read_before =
          gap.before->kind == WorkKind::kMemcpy &&
          timeline_.model().memcpys[gap.before->index].copy_kind == v1::COPY_KIND_DTOH;
      if (wait->copy != nullptr) {
        cause->rule =
            wait->copy->copy_kind == v1::COPY_KIND_DTOH ? kRuleBlockingRead : kRuleBlockingCopy;
      } else {
        cause->rule = read_before ? kRuleBlockingRead : kRuleSync;
      }
      return true;
    }
    cause->rule = kRuleLaunchBound;
    cause->where = timeline_.CallSiteText(launch->correlation_id);
    cause->path = timeline_.PathAt(launch->thread_id, launch->start_ns);
    cause->host_path = timeline_.PathAt(launch->thread_id, gap.begin_ns + gap.length() / 2);
    return true;
  }

 private:
  // A range of the launching thread that covers at least half of the gap and launched no GPU
  // work: at all, or (`launched_before`) during the gap, the launch that ended it included:
  // the host was busy in it while the GPU ran dry and launched the next work after leaving it.
  bool HostRangeCovering(const Gap& gap, const ApiCallEvent& launch, bool launched_before,
                         uint32_t* range) {
    const ThreadTimeline* thread = timeline_.Thread(launch.thread_id);
    if (thread == nullptr || thread->segment_starts.empty()) return false;
    const auto& starts = thread->segment_starts;
    size_t i = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), gap.begin_ns) -
                                   starts.begin());
    if (i > 0) --i;
    std::map<uint32_t, uint64_t> covered;
    for (; i < starts.size() && starts[i] < gap.end_ns; ++i) {
      const uint64_t seg_end = i + 1 < starts.size() ? starts[i + 1] : gap.end_ns;
      const uint64_t lo = std::max(starts[i], gap.begin_ns);
      const uint64_t hi = std::min(seg_end, gap.end_ns);
      if (hi <= lo) continue;
      for (uint32_t r : thread->open_ranges[i]) {
        const bool launched =
            launched_before ? timeline_.RangeLaunchedWorkBetween(
                                  r, std::min(gap.begin_ns, launch.start_ns), launch.start_ns + 1)
                            : timeline_.RangeLaunchedWork(r);
        if (!launched) {
          covered[r] += hi - lo;
        }
      }
    }
    // Of those covering at least half, the innermost (it says most precisely what the host
    // did); on equal depth, the one covering most, then the later one.
    const auto& ranges = timeline_.model().nvtx_ranges;
    bool found = false;
    uint64_t best = 0;
    for (const auto& [r, ns] : covered) {
      if (2 * ns < gap.length()) continue;
      const auto key = std::make_tuple(ranges[r].depth, ns, ranges[r].start_ns);
      if (!found || key > std::make_tuple(ranges[*range].depth, best, ranges[*range].start_ns)) {
        found = true;
        best = ns;
        *range = r;
      }
    }
    return found && best > 0;
  }

  // The last host wait on the launching thread that was under way when the gap began and
  // returned before the launch: the host was waiting for the GPU to run dry.
  const HostWait* WaitEndingGap(const Gap& gap, const ApiCallEvent& launch) const {
    const ThreadTimeline* thread = timeline_.Thread(launch.thread_id);
    if (thread == nullptr) return nullptr;
    const auto& waits = thread->waits;
    auto it = std::upper_bound(waits.begin(), waits.end(), launch.start_ns,
                               [](uint64_t t, const HostWait& w) { return t < w.end_ns; });
    while (it != waits.begin()) {
      --it;
      if (it->end_ns + options_.edge_tolerance_ns < gap.begin_ns) break;
      if (it->start_ns <= gap.begin_ns + options_.edge_tolerance_ns) return &*it;
    }
    return nullptr;
  }

  const AdviseTimeline& timeline_;
  const AdviseOptions& options_;
};

// Rule, label, place, thread, device, and whether the host stalled after launching.
using GroupKey =
    std::tuple<std::string_view, std::string, std::string, uint64_t, uint32_t, bool>;

// The steady step a gap belongs to (the one it begins in), -1 outside the steady steps.
int64_t SteadyStepOf(const AdviseTimeline& timeline, uint64_t ns) {
  const int64_t step = timeline.steps().StepAt(ns);
  return step >= static_cast<int64_t>(timeline.warmup_steps()) ? step : -1;
}

uint64_t SteadySteps(const AdviseTimeline& timeline) {
  return timeline.steps().steps.size() - timeline.warmup_steps();
}

// Whether outliers counted in `steps` distinct steady steps, or (without steps) in
// `outlier_gaps` of `gaps` gaps, recur.
bool Recurs(const AdviseTimeline& timeline, uint64_t steps, uint64_t outlier_gaps, uint64_t gaps) {
  if (timeline.steps().steps.empty()) {
    return outlier_gaps >= kMinRecurring && outlier_gaps * kRecurringGaps >= gaps;
  }
  return steps >= kMinRecurring && steps * kRecurringSteps >= SteadySteps(timeline);
}

// Marks the cause rules whose steady-state outliers recur (the rule above), and the places
// (NVTX paths) where long launch gaps recur: the host stalled there between two launches.
void MarkRecurring(const AdviseTimeline& timeline,
                   const std::vector<std::pair<Gap, GapCause>>& gaps,
                   const std::map<std::string_view, std::vector<uint64_t>>& lengths,
                   SteadyState* steady) {
  struct Count {
    std::set<int64_t> steps;  // steady steps with an outlier
    uint64_t outlier_gaps = 0;
  };
  std::map<std::string_view, Count> by_rule;
  std::map<std::string, Count> stalls;  // launch-bound outliers by place
  for (const auto& [gap, cause] : gaps) {
    if (steady->IsStartup(gap.begin_ns, gap.length(), cause.rule)) continue;
    const int64_t step = SteadyStepOf(timeline, gap.begin_ns);
    const bool outlier = steady->IsOutlier(gap.length(), cause.rule);
    const bool stall = steady->IsLongLaunchGap(gap.length(), cause);
    for (Count* c : {outlier ? &by_rule[cause.rule] : nullptr,
                     stall ? &stalls[cause.host_path] : nullptr}) {
      if (c == nullptr) continue;
      ++c->outlier_gaps;
      if (step >= 0) c->steps.insert(step);
    }
  }
  for (const auto& [rule, c] : by_rule) {
    if (Recurs(timeline, c.steps.size(), c.outlier_gaps, lengths.at(rule).size())) {
      steady->recurring.insert(rule);
    }
  }
  for (const auto& [path, c] : stalls) {
    // Without steps, a stall place needs its long gaps among the launch gaps as often as a
    // recurring cause needs its outliers.
    if (Recurs(timeline, c.steps.size(), c.outlier_gaps, lengths.at(kRuleLaunchBound).size())) {
      steady->stall_places.insert(path);
    }
  }
}

// The steady state (the rule above) of one device.
SteadyState SteadyStateOf(const AdviseTimeline& timeline, const std::vector<GpuWork>& work,
                          const std::vector<std::pair<Gap, GapCause>>& gaps) {
  SteadyState steady;
  const StepSet& steps = timeline.steps();
  if (!steps.steps.empty()) {
    const Step& first = steps.steps[timeline.warmup_steps()];
    steady.range = steps.family;
    steady.first_start_ns = first.start_ns;
    steady.first_end_ns = first.end_ns;
  } else if (!work.empty()) {
    steady.first_end_ns = work[work.size() / 10].start_ns;
  }
  std::map<std::string_view, std::vector<uint64_t>> lengths;  // per cause rule
  std::vector<uint64_t> all;
  for (const auto& [gap, cause] : gaps) {
    lengths[cause.rule].push_back(gap.length());
    all.push_back(gap.length());
  }
  for (const auto& [rule, ns] : lengths) {
    if (ns.size() >= 5) steady.median_ns[rule] = MedianOf(ns);
  }
  if (all.size() >= 5) steady.all_median_ns = MedianOf(all);
  steady.stall_ns = kStallFactor * timeline.median_launch_call_ns();
  MarkRecurring(timeline, gaps, lengths, &steady);
  return steady;
}

// Adds `ns` of `gap` (all of it, or the part left after a catch-up or a one-off took its
// share); the gap is the group's worst when it is the longest (`can_be_worst`) or the first.
void AddGap(const AdviseTimeline& timeline, const Gap& gap, uint64_t ns, uint32_t device,
            GapGroup* g, bool can_be_worst = true) {
  if (g->gaps_ns.empty() || (can_be_worst && gap.length() > g->worst.length())) g->worst = gap;
  g->device_id = device;
  g->gaps_ns.push_back(ns);
  g->total_ns += ns;
  g->next_work[timeline.WorkName(*gap.after)]++;
  g->prev_work[timeline.WorkName(*gap.before)]++;
  g->streams.insert(gap.after->stream_id);
  g->next_durations_ns.push_back(gap.after->duration_ns);
}

// Sums classified gaps into groups by cause and place: start-up gaps and one-off outliers
// apart, catch-up gaps after a wait to the wait (docs/advise.md, "Idle gaps").
class GapGrouper {
 public:
  GapGrouper(const AdviseTimeline& timeline, const RecorderTime& recorder)
      : timeline_(timeline), recorder_(recorder) {}

  void AddDevice(uint32_t device, const std::vector<GpuWork>& work,
                 std::vector<std::pair<Gap, GapCause>>& classified) {
    const SteadyState steady = SteadyStateOf(timeline_, work, classified);
    waited_.reset();
    for (auto& [gap, cause] : classified) {
      if (steady.IsStartup(gap.begin_ns, gap.length(), cause.rule)) {
        GapGroup& g = groups_[{kRuleStartup, "", "", cause.thread_id, device, false}];
        g.split_causes[cause.rule] += gap.length();
        g.cause = {kRuleStartup, "", "", cause.thread_id};
        g.steady_range = steady.range;
        AddGap(timeline_, gap, gap.length(), device, &g);
        if (IsWaitRule(cause.rule)) site_gaps_[cause.wait_site].startup_ns += gap.length();
        waited_.reset();
        continue;
      }
      uint64_t rest_ns = gap.length();  // what is left for the gap's own cause
      if (steady.IsOneOff(gap.length(), cause.rule)) {
        rest_ns = steady.Typical(cause.rule);
        AddOneOff(gap, cause, gap.length() - rest_ns, device);
        if (IsWaitRule(cause.rule)) {
          site_gaps_[cause.wait_site].one_off_ns += gap.length() - rest_ns;
        }
      }
      AddToCause(gap, cause, rest_ns, device, rest_ns == gap.length(),
                 steady.IsRecurringStall(gap.length(), cause));
    }
  }

  const std::map<GroupKey, GapGroup>& groups() const { return groups_; }

  // The idle gaps that began during each wait site's waits: start-up and one-off ns, and the
  // ns each wait group got (catch-up included).
  struct SiteGaps {
    uint64_t startup_ns = 0;
    uint64_t one_off_ns = 0;
    std::map<GroupKey, uint64_t> groups_ns;
  };
  const std::map<std::string, SiteGaps>& site_gaps() const { return site_gaps_; }

 private:
  // What is left of a long launch gap that recurs where the host was during it: the host
  // stalled there (`ns`), after the range had launched GPU work. `to_wait_ns`: the part of the
  // gap a wait before it took as catch-up, which removing the stall alone saves too.
  void AddStall(const Gap& gap, const GapCause& cause, uint64_t ns, uint64_t to_wait_ns,
                uint32_t device, bool whole) {
    const std::string& path = cause.host_path;
    const size_t slash = path.rfind('/');
    const std::string label = slash == std::string::npos ? path : path.substr(slash + 1);
    GapGroup& g = groups_[{kRuleHostRange, label, path, cause.thread_id, device, true}];
    g.cause = {kRuleHostRange, label, path, cause.thread_id};
    g.stalled_after_launch = true;
    g.steady_steps = SteadySteps(timeline_);
    g.given_to_wait_ns += to_wait_ns;
    if (const int64_t step = SteadyStepOf(timeline_, gap.begin_ns); step >= 0) {
      g.steps_hit.insert(step);
    }
    AddGap(timeline_, gap, ns, device, &g, whole);
  }

  void AddOneOff(const Gap& gap, const GapCause& cause, uint64_t excess_ns, uint32_t device) {
    GapGroup& g = groups_[{kRuleOneOff, "", "", cause.thread_id, device, false}];
    g.cause = {kRuleOneOff, "", "", cause.thread_id};
    g.split_causes[cause.rule] += excess_ns;
    std::set<std::string_view> kinds;
    if (const uint64_t ns = recorder_.Within(gap.begin_ns, gap.end_ns, &kinds); ns > 0) {
      g.overhead_ns += ns;
      g.overhead_kinds.insert(kinds.begin(), kinds.end());
    }
    AddGap(timeline_, gap, excess_ns, device, &g);
  }

  // `whole`: the cause has the whole gap (not a one-off's usual part). `stall`: a recurring
  // long launch gap, which after any catch-up is the host's stall where it was (AddStall).
  void AddToCause(const Gap& gap, GapCause cause, uint64_t rest_ns, uint32_t device, bool whole,
                  bool stall) {
    if (IsWaitRule(cause.rule)) {
      // A wait that began after the GPU had run dry drained nothing: no catch-up.
      waited_.reset();
      if (cause.lead_ns > 0)
        waited_ = {cause.rule, cause.label, cause.path, cause.thread_id, device, false};
      waited_site_ = cause.wait_site;
      lead_left_ns_ = cause.lead_ns;
      site_gaps_[cause.wait_site]
          .groups_ns[{cause.rule, cause.label, cause.path, cause.thread_id, device, false}] +=
          rest_ns;
    } else if (cause.rule == kRuleLaunchBound && waited_) {
      // Without the wait the host would have been ahead by its lead: catch-up gaps up to
      // that much go to the wait, the rest of a gap that exceeds it stays launch-bound.
      const uint64_t taken = std::min(rest_ns, lead_left_ns_);
      GapGroup& w = groups_[*waited_];
      w.catchup_gaps++;
      w.catchup_ns += taken;
      AddGap(timeline_, gap, taken, device, &w, whole);
      site_gaps_[waited_site_].groups_ns[*waited_] += taken;
      w.beyond_lead_ns += rest_ns - taken;
      lead_left_ns_ -= taken;
      if (lead_left_ns_ == 0) waited_.reset();
      rest_ns -= taken;
      if (rest_ns == 0) return;
      if (stall) {
        AddStall(gap, cause, rest_ns, taken, device, whole);
        return;
      }
      // The rest: the host, back from the wait, took longer than the work it had queued ahead.
      // A group of its own, named after the wait, apart from stretches no wait drained.
      cause.label = w.cause.label;
    } else {
      waited_.reset();
      if (stall) {
        AddStall(gap, cause, rest_ns, 0, device, whole);
        return;
      }
    }
    GapGroup& g = groups_[{cause.rule, cause.label, cause.path, cause.thread_id, device, false}];
    if (!cause.where.empty()) g.where_ns[cause.where] += rest_ns;
    g.cause = cause;
    AddGap(timeline_, gap, rest_ns, device, &g, whole);
  }

  const AdviseTimeline& timeline_;
  const RecorderTime& recorder_;
  std::map<GroupKey, GapGroup> groups_;
  std::optional<GroupKey> waited_;  // the wait whose drained queue the host is refilling
  std::string waited_site_;         // its call site
  uint64_t lead_left_ns_ = 0;       // of the work it had queued ahead, not yet caught up
  std::map<std::string, SiteGaps> site_gaps_;
};

}  // namespace

GapTotals FindGapCauses(const AdviseTimeline& timeline, const AdviseOptions& options,
                        std::vector<AdviseFinding>* findings) {
  GapTotals totals;
  const RecorderTime recorder(timeline.model());
  GapClassifier classifier(timeline, options);
  GapGrouper grouper(timeline, recorder);
  for (const auto& [device, work] : timeline.work_by_device()) {
    uint64_t busy_ns = 0;
    const std::vector<Gap> gaps = GapsOf(work, &busy_ns);
    uint64_t end_ns = 0;
    for (const GpuWork& w : work) end_ns = std::max(end_ns, w.end_ns());
    if (work.empty()) continue;
    totals.devices.push_back({device, work.front().start_ns, end_ns, busy_ns});
    std::vector<std::pair<Gap, GapCause>> classified;
    for (const Gap& gap : gaps) {
      totals.idle_ns += gap.length();
      if (GapCause cause; classifier.Classify(gap, &cause)) classified.push_back({gap, cause});
    }
    for (const auto& [gap, cause] : classified) totals.attributed_ns += gap.length();
    grouper.AddDevice(device, work, classified);
  }
  std::map<GroupKey, size_t> finding_of;  // index into `findings`
  for (const auto& [key, g] : grouper.groups()) {
    finding_of[key] = findings->size();
    findings->push_back(FindingOf(timeline, g));
  }
  for (const auto& [site, gaps] : grouper.site_gaps()) {
    WaitSiteGaps& out = totals.wait_sites[site];
    out.startup_ns = gaps.startup_ns;
    out.one_off_ns = gaps.one_off_ns;
    for (const auto& [key, ns] : gaps.groups_ns) {
      const AdviseFinding& f = (*findings)[finding_of.at(key)];
      out.findings.push_back({f.rule, f.where, f.api_call, ns});
    }
  }
  return totals;
}

}  // namespace warpscope::advise_internal
