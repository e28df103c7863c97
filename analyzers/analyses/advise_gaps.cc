// The gap rules of `warpscope advise`: each stretch where a device had no work, inside its
// first-to-last GPU work, gets the host activity that caused it (docs/advise.md, "Idle gaps").
// Gaps with one cause in one place are summed into one finding.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise_timeline.h"

namespace warpscope::advise_internal {
namespace {

// Work after launch-bound gaps with a median length under this is "short kernels".
constexpr uint64_t kShortWorkNs = 20'000;

struct Gap {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  const GpuWork* before = nullptr;  // the work that ended at begin_ns
  const GpuWork* after = nullptr;   // the first work to start at end_ns
  uint64_t length() const { return end_ns - begin_ns; }
};

// What a gap was put down to, and where.
struct GapCause {
  std::string_view rule;
  std::string label;  // API call, or the range name
  std::string path;
  uint64_t thread_id = 0;
};

struct GapGroup {
  GapCause cause;
  uint32_t device_id = 0;
  std::vector<uint64_t> gaps_ns;
  uint64_t total_ns = 0;
  Gap worst;
  std::map<std::string, uint64_t> next_work;  // name of the work after each gap -> count
  std::map<std::string, uint64_t> prev_work;  // name of the work before it -> count
  std::set<uint32_t> streams;
  std::vector<uint64_t> next_durations_ns;  // duration of the work after each gap
};

std::vector<Gap> GapsOf(const std::vector<GpuWork>& work, uint64_t* busy_ns) {
  std::vector<Gap> gaps;
  *busy_ns = 0;
  if (work.empty()) return gaps;
  const GpuWork* last = &work[0];  // the work ending last so far
  uint64_t busy_begin = work[0].start_ns;
  for (size_t i = 1; i < work.size(); ++i) {
    const GpuWork& w = work[i];
    if (w.start_ns > last->end_ns) {
      *busy_ns += last->end_ns - busy_begin;
      gaps.push_back({last->end_ns, w.start_ns, last, &w});
      busy_begin = w.start_ns;
      last = &w;
    } else if (w.end_ns > last->end_ns) {
      last = &w;
    }
  }
  *busy_ns += last->end_ns - busy_begin;
  return gaps;
}

class GapClassifier {
 public:
  GapClassifier(const AdviseTimeline& timeline, const AdviseOptions& options)
      : timeline_(timeline), options_(options) {}

  // False when the host is not to blame (it had queued the next work before the gap began)
  // or the launch of the next work is unknown.
  bool Classify(const Gap& gap, GapCause* cause) {
    const ApiCallEvent* launch = timeline_.LaunchOf(gap.after->correlation_id);
    if (launch == nullptr || launch->start_ns < gap.begin_ns) return false;
    cause->thread_id = launch->thread_id;
    if (uint32_t range = 0; HostRangeCovering(gap, launch->thread_id, &range)) {
      cause->rule = kRuleHostRange;
      cause->label = std::string(timeline_.model().nvtx_ranges[range].name);
      cause->path = timeline_.RangePath(range);
      return true;
    }
    if (const HostWait* wait = WaitEndingGap(gap, *launch); wait != nullptr) {
      cause->label = wait->label;
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
    cause->path = timeline_.PathAt(launch->thread_id, launch->start_ns);
    return true;
  }

 private:
  // A range of the launching thread, without GPU work of its own, that covers at least half
  // of the gap (the one covering most; the innermost on a tie).
  bool HostRangeCovering(const Gap& gap, uint64_t thread_id, uint32_t* range) {
    const ThreadTimeline* thread = timeline_.Thread(thread_id);
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
        if (!LaunchedWork(r)) covered[r] += hi - lo;
      }
    }
    uint64_t best = 0;
    for (const auto& [r, ns] : covered) {
      const auto& ranges = timeline_.model().nvtx_ranges;
      if (ns > best || (ns == best && best > 0 && ranges[r].start_ns > ranges[*range].start_ns)) {
        best = ns;
        *range = r;
      }
    }
    return best > 0 && 2 * best >= gap.length();
  }

  bool LaunchedWork(uint32_t range) {
    auto [it, inserted] = launched_.emplace(range, false);
    if (inserted) it->second = timeline_.RangeLaunchedWork(range);
    return it->second;
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
  std::unordered_map<uint32_t, bool> launched_;
};

std::string TopNames(const std::map<std::string, uint64_t>& counts, size_t n) {
  std::vector<std::pair<uint64_t, std::string>> ranked;
  for (const auto& [name, count] : counts) ranked.push_back({count, name});
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return std::tie(b.first, a.second) < std::tie(a.first, b.second);
  });
  std::vector<std::string> names;
  for (size_t i = 0; i < ranked.size() && i < n; ++i) names.push_back(ranked[i].second);
  std::string joined = absl::StrJoin(names, ", ");
  if (ranked.size() > n) absl::StrAppend(&joined, " and ", ranked.size() - n, " more");
  return joined;
}

void Describe(const GapGroup& g, AdviseFinding* f) {
  const std::string gaps =
      absl::StrCat(g.gaps_ns.size(), " gap", g.gaps_ns.size() == 1 ? "" : "s", ", median ",
                   FormatDuration(static_cast<double>(MedianOf(g.gaps_ns))), ", longest ",
                   FormatDuration(static_cast<double>(g.worst.length())));
  std::string place;
  if (!g.cause.path.empty()) place = absl::StrCat(" in ", g.cause.path);
  if (g.cause.rule == kRuleSync) {
    f->title = absl::StrCat("GPU idle after the host waited in ", g.cause.label, place);
    f->evidence = absl::StrCat(gaps,
                               "; each began when the GPU ran dry during the wait and "
                               "ended with the next work the host queued after it");
    f->fix =
        "Drop the synchronization, or move it where the host has nothing left to queue "
        "(end of the step, every N steps); order streams with events "
        "(cudaStreamWaitEvent) instead of host waits.";
  } else if (g.cause.rule == kRuleBlockingRead) {
    f->title =
        absl::StrCat("GPU idle while the host read a GPU value (", g.cause.label, ")", place);
    f->evidence = absl::StrCat(gaps,
                               "; each followed a device-to-host copy the host waited "
                               "for (like PyTorch's .item() or .cpu())");
    f->fix =
        "Keep the value on the GPU and read it every N steps, or copy it with "
        "cudaMemcpyAsync into pinned memory and read it a step later, after an event.";
  } else if (g.cause.rule == kRuleBlockingCopy) {
    f->title =
        absl::StrCat("GPU idle after a copy the host waited for (", g.cause.label, ")", place);
    f->evidence = absl::StrCat(gaps, "; copies before the gaps: ", TopNames(g.prev_work, 3));
    f->fix =
        "Copy from pinned memory with cudaMemcpyAsync on a stream so the host keeps "
        "queueing work while the copy runs.";
  } else if (g.cause.rule == kRuleHostRange) {
    f->title = absl::StrCat("GPU idle while the host was in NVTX range ", g.cause.path,
                            " without GPU work");
    f->evidence = absl::StrCat(gaps,
                               "; the range covered at least half of each gap and "
                               "launched nothing");
    f->fix = absl::StrCat("Take ", g.cause.label,
                          " off the GPU's critical path: prepare it "
                          "ahead (DataLoader workers with prefetching, a background thread) "
                          "while the GPU runs the previous step.");
  } else {
    const uint64_t median_kernel = MedianOf(g.next_durations_ns);
    const bool short_work = median_kernel < kShortWorkNs;
    f->title = absl::StrCat(short_work ? "launch-bound: short kernels, launched slower than "
                                         "they run"
                                       : "the GPU waited for the host's next launch",
                            place);
    f->evidence = absl::StrCat(
        gaps, "; median work after a gap ", FormatDuration(static_cast<double>(median_kernel)),
        "; the host launched it after the GPU had run dry; work: ", TopNames(g.next_work, 3));
    f->fix = short_work ? "Fuse the short kernels (torch.compile, a custom kernel) or capture the "
                          "sequence in a CUDA graph so one launch queues them all."
                        : "Cut the host's work between launches (or move it off the launching "
                          "thread), or capture the sequence in a CUDA graph.";
  }
}

}  // namespace

GapTotals FindGapCauses(const AdviseTimeline& timeline, const AdviseOptions& options,
                        std::vector<AdviseFinding>* findings) {
  GapTotals totals;
  GapClassifier classifier(timeline, options);
  std::map<std::tuple<std::string_view, std::string, std::string, uint64_t, uint32_t>, GapGroup>
      groups;
  for (const auto& [device, work] : timeline.work_by_device()) {
    uint64_t busy_ns = 0;
    const std::vector<Gap> gaps = GapsOf(work, &busy_ns);
    uint64_t end_ns = 0;
    for (const GpuWork& w : work) end_ns = std::max(end_ns, w.end_ns);
    if (!work.empty()) totals.devices.push_back({device, work.front().start_ns, end_ns, busy_ns});
    for (const Gap& gap : gaps) {
      totals.idle_ns += gap.length();
      GapCause cause;
      if (!classifier.Classify(gap, &cause)) continue;
      totals.attributed_ns += gap.length();
      GapGroup& g = groups[{cause.rule, cause.label, cause.path, cause.thread_id, device}];
      if (g.gaps_ns.empty() || gap.length() > g.worst.length()) g.worst = gap;
      g.cause = cause;
      g.device_id = device;
      g.gaps_ns.push_back(gap.length());
      g.total_ns += gap.length();
      g.next_work[timeline.WorkName(*gap.after)]++;
      g.prev_work[timeline.WorkName(*gap.before)]++;
      g.streams.insert(gap.after->stream_id);
      g.next_durations_ns.push_back(gap.after->end_ns - gap.after->start_ns);
    }
  }
  for (const auto& [key, g] : groups) {
    AdviseFinding f;
    f.rule = std::string(g.cause.rule);
    f.cost_ns = g.total_ns;
    f.occurrences = g.gaps_ns.size();
    f.device_id = g.device_id;
    f.nvtx_path = g.cause.path;
    if (g.cause.rule != kRuleHostRange && g.cause.rule != kRuleLaunchBound) {
      f.api_call = g.cause.label;
    }
    f.kernel = TopNames(g.next_work, 1);
    f.stream = absl::StrJoin(g.streams, ",");
    timeline.DescribeThread(g.cause.thread_id, &f);
    f.worst_begin_ns = g.worst.begin_ns;
    f.worst_end_ns = g.worst.end_ns;
    Describe(g, &f);
    findings->push_back(std::move(f));
  }
  return totals;
}

}  // namespace warpscope::advise_internal
