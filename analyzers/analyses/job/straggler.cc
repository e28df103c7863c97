// The straggler rule and its cause on the straggler's own trace (job.h; docs/distributed.md).
//
// Rule: a collective is uneven when its ranks' durations differ by at least kMinSpreadNs. The
// straggler is the rank that arrives last (shortest duration) at a share of the uneven
// collectives of at least 1/2 + 1/(2n) for n ranks (3/4 with two ranks, 5/8 with four: more
// than chance when the last arrival is random), at kMinUneven of them or more, while the other
// ranks' idle waiting on its account (waiting with nothing else to run on their GPU) is at
// least kMinWaitShare of their step time. Otherwise no
// rank is named: the ranks are balanced, or they take turns being last.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise.h"
#include "analyzers/analyses/collectives.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/analyses/steps.h"
#include "analyzers/model/interval_union.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

constexpr uint64_t kMinSpreadNs = 100'000;  // 100 us
constexpr uint32_t kMinUneven = 3;
constexpr double kMinWaitShare = 0.02;

uint64_t Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Step time of a rank: its steps, else its GPU span.
uint64_t RankTime(const RankDigest& r) {
  uint64_t t = 0;
  for (const Step& s : r.steps.steps) t += s.duration_ns();
  return t > 0 ? t : r.gpu_end_ns - r.gpu_begin_ns;
}

std::string RankList(const std::vector<uint32_t>& ranks) {
  std::vector<std::string> names;
  for (uint32_t r : ranks) names.push_back(absl::StrCat(r));
  if (names.size() > 6) {
    const size_t more = names.size() - 5;
    names.resize(5);
    return absl::StrCat(absl::StrJoin(names, ", "), " and ", more, " more");
  }
  if (names.size() <= 1) return absl::StrJoin(names, "");
  const std::string last = names.back();
  names.pop_back();
  return absl::StrCat(absl::StrJoin(names, ", "), " and ", last);
}

struct Tally {
  uint32_t last = 0;
  std::map<std::string, uint32_t> last_by_op;
  uint64_t others_wait_ns = 0;  // their idle wait at those (RankCollective::idle_wait_ns)
};

}  // namespace

void JudgeStraggler(JobView& view) {
  StragglerVerdict& v = view.straggler;
  v = StragglerVerdict{};
  std::map<uint32_t, Tally> tally;
  std::map<std::pair<std::string, uint64_t>, const MatchedCollective*> by_key;
  for (const MatchedCollective& m : view.collectives) {
    by_key[{m.comm, m.seq}] = &m;
    if (m.spread_ns() < kMinSpreadNs) continue;
    ++v.uneven;
    Tally& t = tally[m.last_rank];
    ++t.last;
    ++t.last_by_op[m.op];
  }
  // The others' waits at each uneven collective, by the rank that was last there.
  uint64_t all_wait = 0, all_time = 0;
  for (const RankDigest& r : view.ranks) {
    all_time += RankTime(r);
    for (const RankCollective& c : r.collectives) {
      all_wait += c.idle_wait_ns;
      auto it = by_key.find({c.comm, c.seq});
      if (it == by_key.end() || it->second->spread_ns() < kMinSpreadNs) continue;
      if (it->second->last_rank == r.RankOrIndex()) continue;
      tally[it->second->last_rank].others_wait_ns += c.idle_wait_ns;
    }
  }
  const double n = static_cast<double>(std::max<size_t>(view.ranks.size(), 2));
  const double share_needed = 0.5 + 0.5 / n;
  const Tally* top = nullptr;
  uint32_t top_rank = 0;
  for (const auto& [rank, t] : tally) {
    if (top == nullptr || t.last > top->last) {
      top = &t;
      top_rank = rank;
    }
  }
  std::vector<uint32_t> others;
  uint64_t others_time = 0;
  for (const RankDigest& r : view.ranks) {
    if (top != nullptr && r.RankOrIndex() == top_rank) continue;
    others.push_back(r.RankOrIndex());
    others_time += RankTime(r);
  }
  const bool named = top != nullptr && top->last >= kMinUneven &&
                     top->last >= share_needed * v.uneven && others_time > 0 &&
                     top->others_wait_ns >= kMinWaitShare * static_cast<double>(others_time);
  const double all_share = all_time > 0 ? static_cast<double>(all_wait) / all_time : 0;
  if (!named) {
    v.others_wait_ns = all_wait;
    v.others_wait_share = all_share;
    if (view.collectives.empty()) {
      v.verdict = "No straggler to name: no collective was matched across the traces.";
    } else if (top == nullptr) {
      v.verdict = absl::StrFormat(
          "No straggler: the ranks are balanced; no collective's arrivals differ by %s or "
          "more. Idle waiting in collectives: %s in all (%.1f%% of step time).",
          FormatDuration(kMinSpreadNs), FormatDuration(all_wait), 100 * all_share);
    } else {
      v.verdict = absl::StrFormat(
          "No straggler: no one rank arrives last at most uneven collectives (rank %d is last "
          "at %d of %d). Idle waiting in collectives: %s in all (%.1f%% of step time).",
          top_rank, top->last, v.uneven, FormatDuration(all_wait), 100 * all_share);
    }
    return;
  }
  v.rank = top_rank;
  v.last_count = top->last;
  v.others_wait_ns = top->others_wait_ns;
  v.others_wait_share = static_cast<double>(top->others_wait_ns) / others_time;
  std::vector<uint64_t> leads;
  for (const MatchedCollective& m : view.collectives) {
    if (m.spread_ns() >= kMinSpreadNs && m.last_rank == top_rank) leads.push_back(m.spread_ns());
  }
  v.median_lead_ns = Median(leads);
  std::vector<std::string> ops;
  for (const auto& [op, count] : top->last_by_op) ops.push_back(absl::StrCat(count, " ", op));
  v.verdict = absl::StrFormat(
      "Straggler: rank %d arrives last at %d of %d uneven collectives (%s), by a median of %s; "
      "rank%s %s wait %s for it with nothing else to run, %.1f%% of their step time.",
      top_rank, v.last_count, v.uneven, absl::StrJoin(ops, ", "), FormatDuration(v.median_lead_ns),
      others.size() == 1 ? "" : "s", RankList(others), FormatDuration(v.others_wait_ns),
      100 * v.others_wait_share);
}

}  // namespace warpscope
