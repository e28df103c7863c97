// Matching each collective across the ranks and splitting its time into waiting and moving
// data (job.h).
#include "analyzers/analyses/job/job.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace warpscope {
namespace {

struct Participant {
  size_t rank;        // index into view.ranks
  size_t collective;  // index into its collectives
};

// How much of [begin, end) the merged intervals cover.
uint64_t BusyWithin(const std::vector<TimeInterval>& busy, uint64_t begin, uint64_t end) {
  auto it = std::lower_bound(busy.begin(), busy.end(), begin,
                             [](const TimeInterval& t, uint64_t b) { return t.end_ns <= b; });
  uint64_t covered = 0;
  for (; it != busy.end() && it->begin_ns < end; ++it) {
    covered += std::min(it->end_ns, end) - std::max(it->begin_ns, begin);
  }
  return covered;
}

// Fills in one instance's figures and each participant's wait and lateness.
MatchedCollective Settle(JobView& view, const std::pair<std::string, uint64_t>& key,
                         const std::vector<Participant>& members, size_t* op_mismatches) {
  MatchedCollective m;
  m.comm = key.first;
  m.seq = key.second;
  m.ranks = static_cast<uint32_t>(members.size());
  m.shortest_ns = UINT64_MAX;
  uint64_t earliest = UINT64_MAX, latest = 0;
  for (const Participant& p : members) {
    const RankDigest& r = view.ranks[p.rank];
    const RankCollective& c = r.collectives[p.collective];
    if (m.op.empty()) m.op = c.op;
    if (c.op != m.op) ++*op_mismatches;
    m.bytes = std::max(m.bytes, c.bytes);
    if (c.duration_ns < m.shortest_ns) {
      m.shortest_ns = c.duration_ns;
      m.last_rank = r.RankOrIndex();
    }
    m.longest_ns = std::max(m.longest_ns, c.duration_ns);
    const uint64_t start = r.Epoch(c.start_ns);
    earliest = std::min(earliest, start);
    if (start >= latest) {
      latest = start;
      if (view.shared_clock) m.clock_last_rank = r.RankOrIndex();
    }
  }
  if (view.shared_clock) m.clock_spread_ns = latest - earliest;
  for (const Participant& p : members) {
    RankDigest& r = view.ranks[p.rank];
    RankCollective& c = r.collectives[p.collective];
    c.matched = members.size() > 1;
    c.wait_ns = c.duration_ns - m.shortest_ns;
    c.lateness_ns = m.longest_ns - c.duration_ns;
    c.idle_wait_ns = c.wait_ns - BusyWithin(r.compute_busy, c.start_ns, c.start_ns + c.wait_ns);
    if (c.step >= 0 && static_cast<size_t>(c.step) < r.step_times.size()) {
      StepTimes& t = r.step_times[static_cast<size_t>(c.step)];
      t.wait_ns += c.wait_ns;
      t.idle_wait_ns += c.idle_wait_ns;
    }
  }
  return m;
}

}  // namespace

void MatchCollectives(JobView& view) {
  std::map<std::pair<std::string, uint64_t>, std::vector<Participant>> by_key;
  for (size_t r = 0; r < view.ranks.size(); ++r) {
    const std::vector<RankCollective>& cs = view.ranks[r].collectives;
    for (size_t i = 0; i < cs.size(); ++i) by_key[{cs[i].comm, cs[i].seq}].push_back({r, i});
  }
  size_t op_mismatches = 0, alone = 0;
  view.collectives.clear();
  view.collectives.reserve(by_key.size());
  for (const auto& [key, members] : by_key) {
    if (members.size() < 2) {
      ++alone;
      continue;
    }
    view.collectives.push_back(Settle(view, key, members, &op_mismatches));
  }
  std::stable_sort(view.collectives.begin(), view.collectives.end(),
                   [](const MatchedCollective& a, const MatchedCollective& b) {
                     return std::make_pair(a.comm, a.seq) < std::make_pair(b.comm, b.seq);
                   });
  if (op_mismatches > 0) {
    view.problems.push_back(absl::StrCat(
        op_mismatches, " collective(s) matched by communicator and order ran a different "
                       "operation on some ranks: the traces may cover different parts of the "
                       "run (capture windows), or a rank's collectives were dropped"));
  }
  if (alone > 0 && view.ranks.size() > 1) {
    view.problems.push_back(absl::StrCat(
        alone, " collective(s) appear in one trace only (a communicator of one rank, or the "
               "other ranks' traces end earlier): no waiting is counted for them"));
  }
}

}  // namespace warpscope
