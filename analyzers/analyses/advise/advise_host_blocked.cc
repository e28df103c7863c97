// Host blocked against GPU idle in `warpscope advise`: the host time blocked at each call site,
// summed as `summary --report syncs` sums it, put under the wait findings of that line, or
// a note that says why no finding counts it (docs/advise.md, "Host blocked and GPU idle").
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise/advise_gap_groups.h"
#include "analyzers/analyses/advise/advise_timeline.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/measures/host_waits.h"
#include "analyzers/model/interval_union.h"

namespace warpscope::advise_internal {
namespace {

std::string Ms(uint64_t ns) { return FormatDuration(static_cast<double>(ns)); }

// How long `merged` (sorted, disjoint) covers [begin_ns, end_ns).
uint64_t CoveredWithin(const std::vector<TimeInterval>& merged, uint64_t begin_ns,
                       uint64_t end_ns) {
  auto it = std::upper_bound(merged.begin(), merged.end(), begin_ns,
                             [](uint64_t t, const TimeInterval& i) { return t < i.end_ns; });
  uint64_t ns = 0;
  for (; it != merged.end() && it->begin_ns < end_ns; ++it) {
    ns += std::min(it->end_ns, end_ns) - std::max(it->begin_ns, begin_ns);
  }
  return ns;
}

// A line's waits: the blocked time as summary sums it, and the GPU idle time within it.
struct BlockedSite {
  const CallSiteGroup* group = nullptr;
  uint64_t gpu_idle_ns = 0;
};

// "cudaStreamSynchronize 27.10 ms, cudaMemcpyAsync 1.49 ms", most time first.
std::string CallsText(const CallSiteGroup& group) {
  std::vector<std::pair<uint64_t, std::string>> calls;
  for (const auto& [name, ns] : group.ns_by_call) calls.emplace_back(ns, name);
  std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> parts;
  for (const auto& [ns, name] : calls) parts.push_back(absl::StrCat(name, " ", Ms(ns)));
  return absl::StrJoin(parts, ", ");
}

std::string Calls(uint64_t n) { return absl::StrCat(n, n == 1 ? " call" : " calls"); }

// A wait finding is under `display` when its line is that site (or the site of most of its
// time, "... and N more").
bool IsUnder(const AdviseFinding& f, const std::string& display) {
  return IsWaitRule(f.rule) && !f.where.empty() &&
         (f.where == display || f.where.starts_with(display + " and "));
}

bool ReportHas(const std::vector<AdviseFinding>& findings, const WaitSiteGaps::InFinding& in) {
  return std::any_of(findings.begin(), findings.end(), [&](const AdviseFinding& f) {
    return f.rule == in.rule && f.where == in.where && f.api_call == in.api_call;
  });
}

// Why no finding at the line counts the blocked time: where the GPU idle during the waits
// went, or that there was none.
std::string WhyNotCounted(const BlockedSite& site, const WaitSiteGaps* gaps,
                          const std::vector<AdviseFinding>& findings) {
  std::vector<std::string> went;
  if (gaps != nullptr) {
    if (gaps->startup_ns > 0) {
      went.push_back(absl::StrCat(Ms(gaps->startup_ns), " before the steady state (startup)"));
    }
    if (gaps->one_off_ns > 0) {
      went.push_back(absl::StrCat(Ms(gaps->one_off_ns), " beyond the usual gap (one-off)"));
    }
    for (const WaitSiteGaps::InFinding& in : gaps->findings) {
      if (ReportHas(findings, in)) {
        went.push_back(absl::StrCat(
            Ms(in.ns), " in the ", in.rule, " finding", in.where.empty() ? "" : " at ", in.where,
            in.api_call.empty() ? "" : " (", in.api_call, in.api_call.empty() ? "" : ")"));
      } else {
        went.push_back(absl::StrCat(Ms(in.ns), " too little for a finding"));
      }
    }
  }
  const bool gpu_busy = site.gpu_idle_ns * 100 <= site.group->total_ns;  // idle under 1%
  std::string out =
      gpu_busy ? absl::StrCat("the GPU ran work queued before the waits through all of them",
                              site.gpu_idle_ns == 0 ? "" : " but ",
                              site.gpu_idle_ns == 0 ? "" : Ms(site.gpu_idle_ns))
               : absl::StrCat("the GPU had no work during ", Ms(site.gpu_idle_ns), " of it");
  if (!went.empty()) {
    absl::StrAppend(&out, "; the idle gaps that began during them, to the GPU's next work: ",
                    absl::StrJoin(went, "; "));
  } else if (gpu_busy) {
    absl::StrAppend(&out,
                    ": the host lost that time, the GPU did not (a fix saves host time only "
                    "where the host has work to do meanwhile)");
  } else {
    absl::StrAppend(&out,
                    "; no idle gap was put down to these waits (the GPU's next work was "
                    "launched by another thread or queued before the gap, or no work followed)");
  }
  return out;
}

}  // namespace

void AccountHostBlocked(const AdviseTimeline& timeline, const GapTotals& gaps,
                        std::vector<AdviseFinding>* findings, std::vector<std::string>* notes) {
  const TraceModel& model = timeline.model();
  std::vector<TimeInterval> work;
  for (const auto& [device, device_work] : timeline.work_by_device()) {
    for (const GpuWork& w : device_work) work.push_back({w.start_ns, w.end_ns()});
  }
  const std::vector<TimeInterval> busy = MergedIntervals(std::move(work));
  CallSiteGroups sites;
  std::map<const CallSiteGroup*, uint64_t> idle_ns;
  for (const auto& [thread_id, thread] : timeline.threads()) {
    for (const HostWait& wait : thread.waits) {
      const CallSiteGroup& group = AddBlockedTime(model, wait, &sites);
      idle_ns[&group] += wait.duration_ns() - CoveredWithin(busy, wait.start_ns, wait.end_ns);
    }
  }
  std::vector<BlockedSite> ranked;
  for (const auto& [key, group] : sites.groups()) ranked.push_back({&group, idle_ns[&group]});
  std::sort(ranked.begin(), ranked.end(), [](const BlockedSite& a, const BlockedSite& b) {
    return a.group->total_ns > b.group->total_ns;
  });
  for (const BlockedSite& site : ranked) {
    const CallSiteGroup& g = *site.group;
    const std::string display = g.site.Display();
    const uint64_t calls = g.durations_ns.size();
    bool named = false;
    for (AdviseFinding& f : *findings) {
      if (!IsUnder(f, display)) continue;
      named = true;
      f.host_blocked_ns = g.total_ns;
      f.host_blocked_calls = calls;
      f.host_blocked_gpu_idle_ns = site.gpu_idle_ns;
      f.evidence = absl::StrCat(
          "host blocked ", Ms(g.total_ns), " in ", Calls(calls), " at this line (", CallsText(g),
          ", as summary --report syncs counts it); the GPU ran work queued before the waits "
          "through ",
          Ms(g.total_ns - site.gpu_idle_ns), " of that and had none for ", Ms(site.gpu_idle_ns),
          "; the cost is GPU idle time instead: from when the GPU ran dry during a wait to its "
          "next work, the host's time after the wait returned included (the wait had drained "
          "the queue); ",
          f.evidence);
    }
    if (named) continue;
    const auto it = gaps.wait_sites.find(display);
    const WaitSiteGaps* site_gaps = it == gaps.wait_sites.end() ? nullptr : &it->second;
    std::string note;
    if (g.site.frame == nullptr) {
      // No line to put the time under: say so, and where the GPU idle after the waits went.
      note = absl::StrCat(
          "host blocked ", Ms(g.total_ns), " in ", Calls(calls), " that name no line (",
          CallsText(g), "; summary --report syncs lists them as \"", display, "\"): ",
          model.api_stacks.empty()
              ? "the trace has no call stacks (record with --stacks to put each wait on its line)"
              : "their stacks have no frame of the program's own",
          "; ", WhyNotCounted(site, site_gaps, *findings));
    } else {
      note = absl::StrCat("host blocked ", Ms(g.total_ns), " in ", Calls(calls), " at ", display,
                          " (", CallsText(g),
                          "; summary --report syncs) is in no finding at "
                          "that line: ",
                          WhyNotCounted(site, site_gaps, *findings));
    }
    notes->push_back(std::move(note));
  }
}

}  // namespace warpscope::advise_internal
