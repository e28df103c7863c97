// The straggler rule and its cause on the straggler's own trace (job.h; docs/distributed.md).
//
// Rule: a collective is uneven when its ranks' durations differ by at least kMinSpreadNs and
// by a tenth of the 90th percentile of all collectives' spreads (beside a rank 35 ms late at
// every AllReduce, the other collectives' sub-millisecond jitter is not counted). The
// straggler is the rank that arrives last (shortest duration) at a share of the uneven
// collectives of at least 1/2 + 1/(2n) for n ranks (3/4 with two ranks, 5/8 with four: more
// than chance when the last arrival is random), at kMinUneven of them or more, while the time
// the other ranks lose waiting for it in the steady state (job.h) is at least kMinWaitShare of
// their steady step time.
// Otherwise no rank is named: the ranks are balanced, or they take turns being last.
#include <algorithm>
#include <map>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise/advise.h"
#include "analyzers/measures/collectives.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/measures/median.h"
#include "analyzers/measures/steps.h"
#include "analyzers/model/interval_union.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

constexpr uint64_t kMinSpreadNs = 100'000;  // 100 us
constexpr uint32_t kMinUneven = 3;
constexpr double kMinWaitShare = 0.02;

// What a share of lost time is of: the steady steps' time, or the GPU span without steps.
std::string_view ShareOf(const JobView& view) {
  const bool steps = !view.ranks.empty() && !view.ranks.front().steps.steps.empty();
  return steps ? "steady step time" : "GPU span";
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
  std::map<std::string_view, uint32_t> last_by_op;
  uint64_t others_lost_ns = 0;  // the others' lost time at the collectives it was last at
  uint64_t others_steady_lost_ns = 0;  // of it, in the steady state
};

// Every rank's lost time, the part in the steady state, and their steady time.
struct AllLost {
  uint64_t lost_ns = 0;
  uint64_t steady_lost_ns = 0;
  uint64_t steady_ns = 0;
};

using ByKey = std::map<std::pair<std::string_view, uint64_t>, const MatchedCollective*>;

// How late the straggler typically is: per step, the largest spread among the collectives it
// arrived last at (later ones of a step were queued behind the first and spread less), then
// the median over steps; without steps, the median over those collectives.
uint64_t MedianLead(const JobView& view, const ByKey& by_key, uint32_t rank, uint64_t uneven) {
  std::map<int64_t, uint64_t> by_step;
  std::vector<uint64_t> all;
  for (const RankDigest& r : view.ranks) {
    if (r.RankOrIndex() != rank) continue;
    for (const RankCollective& c : r.collectives) {
      auto it = by_key.find({c.comm, c.seq});
      if (it == by_key.end() || it->second->last_rank != rank) continue;
      const uint64_t spread = it->second->spread_ns();
      if (spread < uneven) continue;
      all.push_back(spread);
      if (c.step >= 0) by_step[c.step] = std::max(by_step[c.step], spread);
    }
  }
  if (by_step.empty()) return MedianOf(std::move(all));
  std::vector<uint64_t> steps;
  for (const auto& [step, spread] : by_step) steps.push_back(spread);
  return MedianOf(std::move(steps));
}

// The spread from which a collective is uneven (the rule above).
uint64_t UnevenSpread(const JobView& view) {
  std::vector<uint64_t> spreads;
  for (const MatchedCollective& m : view.collectives) spreads.push_back(m.spread_ns());
  if (spreads.empty()) return kMinSpreadNs;
  const size_t p90 = spreads.size() * 9 / 10;
  std::nth_element(spreads.begin(), spreads.begin() + static_cast<long>(p90), spreads.end());
  return std::max(kMinSpreadNs, spreads[p90] / 10);
}

// Uneven collectives by the rank that arrived last, and the others' lost time by the rank it
// was lost to; *all: every rank's.
std::map<uint32_t, Tally> Tallies(const JobView& view, const ByKey& by_key, uint64_t threshold,
                                  uint32_t* uneven, AllLost* all) {
  std::map<uint32_t, Tally> tally;
  for (const MatchedCollective& m : view.collectives) {
    if (m.spread_ns() < threshold || !m.last_rank) continue;
    ++*uneven;
    Tally& t = tally[*m.last_rank];
    ++t.last;
    ++t.last_by_op[m.op];
  }
  for (const RankDigest& r : view.ranks) {
    all->steady_ns += r.SteadyNs(view.warmup_steps);
    for (const RankCollective& c : r.collectives) {
      const bool steady = r.Steady(c, view.warmup_steps);
      all->lost_ns += c.lost_ns;
      if (steady) all->steady_lost_ns += c.lost_ns;
      auto it = by_key.find({c.comm, c.lost_to_seq});
      if (c.lost_ns == 0 || it == by_key.end() || !it->second->last_rank) continue;
      if (*it->second->last_rank == r.RankOrIndex()) continue;
      Tally& t = tally[*it->second->last_rank];
      t.others_lost_ns += c.lost_ns;
      if (steady) t.others_steady_lost_ns += c.lost_ns;
    }
  }
  return tally;
}

}  // namespace

void JudgeStraggler(JobView& view) {
  StragglerVerdict& v = view.straggler;
  v = StragglerVerdict{};
  ByKey by_key;
  for (const MatchedCollective& m : view.collectives) by_key[{m.comm, m.seq}] = &m;
  AllLost all;
  v.uneven_spread_ns = UnevenSpread(view);
  const std::map<uint32_t, Tally> tally =
      Tallies(view, by_key, v.uneven_spread_ns, &v.uneven, &all);
  const Tally* top = nullptr;
  uint32_t top_rank = 0;
  for (const auto& [rank, t] : tally) {
    if (t.last > 0 && (top == nullptr || t.last > top->last)) {
      top = &t;
      top_rank = rank;
    }
  }
  std::vector<uint32_t> others;
  uint64_t others_time = 0;
  for (const RankDigest& r : view.ranks) {
    if (top != nullptr && r.RankOrIndex() == top_rank) continue;
    others.push_back(r.RankOrIndex());
    others_time += r.SteadyNs(view.warmup_steps);
    v.others_steady_steps += r.steps.steps.size() - r.Warmup(view.warmup_steps);
  }
  const double n = static_cast<double>(std::max<size_t>(view.ranks.size(), 2));
  const bool named = top != nullptr && top->last >= kMinUneven &&
                     top->last >= (0.5 + 0.5 / n) * v.uneven && others_time > 0 &&
                     top->others_steady_lost_ns >= kMinWaitShare * static_cast<double>(others_time);
  const std::string_view share_of = ShareOf(view);
  if (!named) {
    v.others_lost_ns = all.lost_ns;
    v.others_steady_lost_ns = all.steady_lost_ns;
    v.others_lost_share = all.steady_ns > 0 ? static_cast<double>(all.steady_lost_ns) /
                                                  static_cast<double>(all.steady_ns)
                                            : 0;
    if (view.collectives.empty()) {
      v.verdict = "No straggler to name: no collective was matched across the traces.";
    } else if (top == nullptr) {
      v.verdict = absl::StrFormat(
          "No straggler: the ranks are balanced; no collective's arrivals differ by %s or "
          "more. Time lost waiting in collectives: %s in all (%.1f%% of the %s).",
          FormatDuration(v.uneven_spread_ns), FormatDuration(all.lost_ns),
          100 * v.others_lost_share, share_of);
    } else {
      v.verdict = absl::StrFormat(
          "No straggler: no one rank arrives last at most uneven collectives (rank %d is last "
          "at %d of %d). Time lost waiting in collectives: %s in all (%.1f%% of the %s).",
          top_rank, top->last, v.uneven, FormatDuration(all.lost_ns), 100 * v.others_lost_share,
          share_of);
    }
    return;
  }
  v.rank = top_rank;
  v.last_count = top->last;
  v.others_lost_ns = top->others_lost_ns;
  v.others_steady_lost_ns = top->others_steady_lost_ns;
  v.others_lost_share = static_cast<double>(top->others_steady_lost_ns) / others_time;
  v.median_lead_ns = MedianLead(view, by_key, top_rank, v.uneven_spread_ns);
  std::vector<std::string> ops;
  for (const auto& [op, count] : top->last_by_op) {
    ops.push_back(absl::StrCat(count, " ", std::string(op)));
  }
  const std::string per_step =
      v.others_steady_steps == 0
          ? std::string()
          : absl::StrCat(FormatDuration(static_cast<double>(v.others_steady_lost_ns) /
                                        static_cast<double>(v.others_steady_steps)),
                         " a steady step, ");
  v.verdict = absl::StrFormat(
      "Straggler: rank %d arrives last at %d of %d uneven collectives (%s), by a median of %s; "
      "rank%s %s %s %s waiting for it (%s%.1f%% of their %s).",
      top_rank, v.last_count, v.uneven, absl::StrJoin(ops, ", "), FormatDuration(v.median_lead_ns),
      others.size() == 1 ? "" : "s", RankList(others), others.size() == 1 ? "loses" : "lose",
      FormatDuration(v.others_lost_ns), per_step, 100 * v.others_lost_share, share_of);
}

}  // namespace warpscope
