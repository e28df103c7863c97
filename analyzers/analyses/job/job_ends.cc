// How the ranks of a job ended (job.h JudgeEnds): when one did not end at its exit (killed,
// stopped by a signal, cut short by a full disk), which rank ended first and how, and for each
// other rank how much later it ended and the collectives it ran after that end, which the
// first never joined: what happened to whom, on the ranks' shared clock (each trace's time 0
// since the epoch).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

std::string HowItEnded(const RankDigest& r) {
  if (!r.end_reason) return "cut short (no end-of-trace marker: killed?)";
  const std::string signal = r.end_signal == 0 ? "" : SignalText(r.end_signal);
  switch (*r.end_reason) {
    case v1::END_REASON_EXIT: return "at its exit";
    case v1::END_REASON_SIGNAL:
      return signal.empty() ? "on a signal (SIGINT or SIGTERM)" : absl::StrCat("on ", signal);
    case v1::END_REASON_CRASH:
      if (signal == "SIGABRT") {
        return "crashed on SIGABRT (an abort: a failed check, or a watchdog such as NCCL's "
               "ending a collective that timed out)";
      }
      return absl::StrCat("crashed on ", signal.empty() ? "a fatal signal" : signal);
    case v1::END_REASON_WRITE_ERROR: return "when writing its trace failed";
    case v1::END_REASON_DETACH: return "when its capture ended";
    case v1::END_REASON_NEXT_FILE: return "at the end of its window's file";
    case v1::END_REASON_DUMP: return "in a flight-recorder dump";
    default: return "for a reason its trace does not give";
  }
}

bool EndedAtExit(const RankDigest& r) {
  return r.end_reason && (*r.end_reason == v1::END_REASON_EXIT ||
                          *r.end_reason == v1::END_REASON_NEXT_FILE);
}

// Ends since the epoch: each trace's time 0 since the epoch plus its last event's end.
uint64_t EndSinceEpoch(const RankDigest& r) { return r.unix_time_base_ns + r.end_ns; }

// What `r` did after `at_ns` (since the epoch): its collectives that began then, and the longest.
std::string AfterwardsText(const RankDigest& r, uint64_t at_ns, uint32_t first_rank) {
  size_t count = 0;
  const RankCollective* longest = nullptr;
  for (const RankCollective& c : r.collectives) {
    if (r.unix_time_base_ns + c.end_ns() <= at_ns) continue;  // ended before
    ++count;
    if (longest == nullptr || c.duration_ns > longest->duration_ns) longest = &c;
  }
  if (count == 0) return "";
  return absl::StrFormat(
      ", after %d collective(s) that ran past rank %d's last recorded event (the longest, %s, %s)",
      count, first_rank, longest->op, FormatDuration(static_cast<double>(longest->duration_ns)));
}

}  // namespace

void JudgeEnds(JobView& view) {
  view.end_verdicts.clear();
  if (view.ranks.size() < 2) return;
  bool all_exit = true, clocks = true;
  for (const RankDigest& r : view.ranks) {
    all_exit = all_exit && EndedAtExit(r);
    clocks = clocks && r.unix_time_base_ns != 0;
  }
  if (all_exit || !clocks) return;
  std::vector<const RankDigest*> order;
  for (const RankDigest& r : view.ranks) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const RankDigest* a, const RankDigest* b) {
    return EndSinceEpoch(*a) < EndSinceEpoch(*b);
  });
  const RankDigest& first = *order.front();
  const uint64_t first_end = EndSinceEpoch(first);
  // A trace cut short misses what its last flush interval held: its end is a lower bound.
  view.end_verdicts.push_back(absl::StrCat(
      "ends: rank ", first.RankOrIndex(), " ended first, ", HowItEnded(first),
      ", its last recorded event ", FormatDuration(static_cast<double>(first.end_ns)),
      " into its trace",
      first.end_reason ? "" : " (a trace cut short misses up to its last flush interval)",
      view.shared_clock ? "" : " (the ranks' hosts have clocks of their own)"));
  for (size_t i = 1; i < order.size(); ++i) {
    const RankDigest& r = *order[i];
    view.end_verdicts.push_back(absl::StrCat(
        "  rank ", r.RankOrIndex(), " ended ",
        FormatDuration(static_cast<double>(EndSinceEpoch(r) - first_end)), " later, ",
        HowItEnded(r), AfterwardsText(r, first_end, first.RankOrIndex())));
  }
}

Table JobEndsTable(const JobView& view) {
  Table t({{"rank", true, CellKind::kInt},
           {"end", false, CellKind::kString},
           {"end_after_first_ms", true, CellKind::kReal},
           {"trace_end_ms", true, CellKind::kReal}});
  uint64_t first = UINT64_MAX;
  for (const RankDigest& r : view.ranks) first = std::min(first, EndSinceEpoch(r));
  for (const RankDigest& r : view.ranks) {
    t.AddRow({r.RankOrIndex(), HowItEnded(r),
               Cell(static_cast<double>(EndSinceEpoch(r) - first) / 1e6, 3),
               Cell(static_cast<double>(r.end_ns) / 1e6, 3)});
  }
  return t;
}

}  // namespace warpscope
