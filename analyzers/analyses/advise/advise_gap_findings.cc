// How `warpscope advise` words a group of idle gaps with one cause as a finding: title,
// evidence and fix per rule (docs/advise.md, "Idle gaps").
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise/advise_gap_groups.h"

namespace warpscope::advise_internal {
namespace {

// Work after launch-bound gaps with a median length under this is "short kernels".
constexpr uint64_t kShortWorkNs = 20'000;

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

void DescribeStartup(const GapGroup& g, const std::string& gaps, AdviseFinding* f) {
  f->title =
      g.steady_range.empty()
          ? std::string("one-time start-up: GPU idle early in the trace")
          : absl::StrCat("one-time start-up: GPU idle before the steady state of ", g.steady_range);
  std::vector<std::string> causes;
  for (const auto& [rule, ns] : g.split_causes) {
    causes.push_back(absl::StrCat(std::string(rule), " ", FormatDuration(static_cast<double>(ns))));
  }
  f->evidence = absl::StrCat(gaps, "; causes: ", absl::StrJoin(causes, ", "),
                             "; paid once (module and library loading, allocation, warm-up), "
                             "not per step");
  f->fix =
      "Nothing per step; for a shorter start, load modules eagerly "
      "(CUDA_MODULE_LOADING=EAGER moves the cost, it does not remove it) or reuse a warm "
      "process.";
}

// `worst_ms`: where the longest gap begins, in trace ms (the time base of every command's
// --window and --from).
void DescribeOneOff(const GapGroup& g, double worst_ms, AdviseFinding* f) {
  f->title = "one-off: GPU idle far longer than the usual gap of its cause";
  std::vector<std::string> causes;
  for (const auto& [rule, ns] : g.split_causes) {
    causes.push_back(absl::StrCat(std::string(rule), " ", FormatDuration(static_cast<double>(ns))));
  }
  const double worst = static_cast<double>(g.worst.length());
  f->evidence = absl::StrCat(
      g.gaps_ns.size(), " gap", g.gaps_ns.size() == 1 ? "" : "s", ", longest ",
      FormatDuration(worst), ", each at least ", kOutlierFactor,
      " times the median gap of its cause; the cause keeps its median gap, the rest is "
      "counted here (",
      absl::StrJoin(causes, ", "),
      "): fixing the cause would not remove it, something else held the host up");
  if (g.overhead_ns > 0) {
    std::vector<std::string> kinds;
    for (std::string_view k : g.overhead_kinds) kinds.emplace_back(k);
    absl::StrAppend(&f->evidence, "; overhead records (", absl::StrJoin(kinds, ", "), ") cover ",
                    FormatDuration(static_cast<double>(g.overhead_ns)),
                    " of these gaps: the recording's own time (WARPSCOPE_FLUSH: warpscope "
                    "flushing CUPTI's buffers), absent from a plain run");
  }
  f->fix = absl::StrFormat(
      "Look at what the host did then: the longest begins at %.3f ms "
      "(warpscope timeline TRACE --svg FILE --window %.3f:%.3f). Garbage collection, a "
      "checkpoint, paging, a lock or the recorder's own flush are typical; a rare stall may "
      "not come back in the next run.",
      worst_ms, std::max(0.0, worst_ms - 1.0), worst_ms + 1.0 + worst / 1e6);
}

// Rule 4: launch gaps; with a `label`, the rest of catch-up gaps past that wait's lead.
void DescribeLaunchBound(const GapGroup& g, const std::string& gaps, const std::string& place,
                         AdviseFinding* f) {
  if (!g.cause.label.empty()) {
    f->title = absl::StrCat("the GPU waited for the host's next launch after ", g.cause.label,
                            " returned", place);
    f->evidence = absl::StrCat(
        gaps,
        "; each is what remained of a gap after the wait once the work the host had queued "
        "ahead of the wait ran out: the host's own work after the wait (bookkeeping, logging, "
        "preparing the next step) kept the GPU idle; work after the gaps: ",
        TopNames(g.next_work, 3));
    f->fix =
        "Queue the next step's GPU work before the host's bookkeeping, or move that work to "
        "another thread; without the wait (its own finding) the host's work overlaps the GPU "
        "as far as the GPU has work queued.";
    return;
  }
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

// Rule 6: recurring long launch gaps, the host stalled where it was.
void DescribeStall(const GapGroup& g, const std::string& gaps, AdviseFinding* f) {
  const std::string where = g.cause.path.empty() ? std::string("outside any NVTX range")
                                                 : absl::StrCat("in NVTX range ", g.cause.path);
  f->title = absl::StrCat("GPU idle while the host stalled ", where,
                          " after launching its GPU work");
  if (g.steady_steps > 0) {
    absl::StrAppend(&f->title, ", in ", g.steps_hit.size(), " of ", g.steady_steps, " steps");
  }
  f->evidence = absl::StrCat(
      gaps, "; each a pause between two launches far longer than launching takes, recurring "
      "in this place: the host did something else there (data preparation, a CPU "
      "computation, a lock, a sleep) while the GPU had run dry");
  if (g.given_to_wait_ns > 0) {
    absl::StrAppend(&f->evidence, "; another ",
                    FormatDuration(static_cast<double>(g.given_to_wait_ns)),
                    " of these gaps is counted with the wait before them (the host would have "
                    "been ahead by that much without it): the fix saves up to ",
                    FormatDuration(static_cast<double>(g.total_ns + g.given_to_wait_ns)));
  }
  f->fix = absl::StrCat(
      "Find what the host does ", where,
      " between its launches and take it off the GPU's critical path: prepare it ahead "
      "(DataLoader workers, a background thread) or move it after the step's GPU work is "
      "queued.");
}

void Describe(const GapGroup& g, double worst_ms, AdviseFinding* f) {
  std::string gaps = absl::StrCat(
      g.gaps_ns.size(), " gap", g.gaps_ns.size() == 1 ? "" : "s", ", median ",
      FormatDuration(static_cast<double>(MedianOf(g.gaps_ns))), ", longest ",
      FormatDuration(static_cast<double>(*std::max_element(g.gaps_ns.begin(), g.gaps_ns.end()))));
  std::string place;
  if (!g.cause.path.empty()) place = absl::StrCat(" in ", g.cause.path);
  if (g.catchup_gaps > 0) {
    absl::StrAppend(&gaps, "; of them ", g.catchup_gaps, " catch-up gap",
                    g.catchup_gaps == 1 ? "" : "s", " (",
                    FormatDuration(static_cast<double>(g.catchup_ns)),
                    ") while the host refilled the queue the wait had drained");
    if (g.beyond_lead_ns > 0) {
      absl::StrAppend(&gaps, "; ", FormatDuration(static_cast<double>(g.beyond_lead_ns)),
                      " more idle after them, beyond the work queued ahead of the waits, is the "
                      "host's own time after the wait (its own finding): the fix saves up to ",
                      FormatDuration(static_cast<double>(g.total_ns + g.beyond_lead_ns)),
                      " where the host keeps up with the GPU (the recording slowed the host)");
    }
  }
  if (g.cause.rule == kRuleStartup) {
    DescribeStartup(g, gaps, f);
    return;
  }
  if (g.cause.rule == kRuleOneOff) {
    DescribeOneOff(g, worst_ms, f);
    return;
  }
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
  } else if (g.cause.rule == kRuleHostRange && g.stalled_after_launch) {
    DescribeStall(g, gaps, f);
  } else if (g.cause.rule == kRuleHostRange) {
    f->title = absl::StrCat("GPU idle while the host was in NVTX range ", g.cause.path,
                            " without launching GPU work");
    f->evidence = absl::StrCat(gaps,
                               "; the range covered at least half of each gap and "
                               "launched nothing during it");
    f->fix = absl::StrCat("Take ", g.cause.label,
                          " off the GPU's critical path: prepare it "
                          "ahead (DataLoader workers with prefetching, a background thread) "
                          "while the GPU runs the previous step.");
  } else {
    DescribeLaunchBound(g, gaps, place, f);
  }
}

}  // namespace

AdviseFinding FindingOf(const AdviseTimeline& timeline, const GapGroup& g) {
  AdviseFinding f;
  f.rule = std::string(g.cause.rule);
  f.cost_ns = g.total_ns;
  f.cost_max_ns = g.total_ns + g.beyond_lead_ns + g.given_to_wait_ns;
  f.occurrences = g.gaps_ns.size();
  f.device_id = g.device_id;
  f.nvtx_path = g.cause.path;
  if (IsWaitRule(g.cause.rule) || g.cause.rule == kRuleLaunchBound) f.api_call = g.cause.label;
  f.kernel = TopNames(g.next_work, 1);
  f.stream = absl::StrJoin(g.streams, ",");
  timeline.DescribeThread(g.cause.thread_id, &f);
  f.worst_begin_ns = g.worst.begin_ns;
  f.worst_end_ns = g.worst.end_ns;
  f.one_time = g.cause.rule == kRuleStartup;
  // In trace time, as `warpscope timeline --window` takes it.
  Describe(g, static_cast<double>(g.worst.begin_ns) / 1e6, &f);
  // The call site of most of the group's time, "and N more" when there were others.
  f.where = TopNames(g.where_ns, 1);
  if (!f.where.empty() && (IsWaitRule(g.cause.rule) || g.cause.rule == kRuleLaunchBound)) {
    absl::StrAppend(&f.title, " at ", f.where);
  }
  if (g.cause.rule == kRuleOneOff || g.cause.rule == kRuleStartup) {
    // No cause to name: the longest gap's place and what the host did then instead.
    const GapPlace place = PlaceOfGap(timeline, g.worst, g.cause.thread_id);
    f.where = place.where;
    f.nvtx_path = place.path;
    absl::StrAppend(&f.evidence, "; ", place.text);
    if (g.cause.rule == kRuleOneOff) {
      absl::StrAppendFormat(&f.title, " (the longest, %s, at %.3f ms",
                            FormatDuration(static_cast<double>(g.worst.length())),
                            static_cast<double>(g.worst.begin_ns) / 1e6);
      if (!place.path.empty()) absl::StrAppend(&f.title, " in ", place.path);
      if (!place.where.empty()) absl::StrAppend(&f.title, " at ", place.where);
      absl::StrAppend(&f.title, ")");
    }
  }
  return f;
}

}  // namespace warpscope::advise_internal
