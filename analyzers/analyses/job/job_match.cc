// Matching each collective across the ranks and splitting its time into waiting and moving
// data (job.h), then the time each rank lost waiting.
#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analyzers/measures/collectives.h"
#include "analyzers/analyses/job/job.h"

namespace warpscope {
namespace {

struct Participant {
  size_t rank;        // index into view.ranks
  size_t collective;  // index into its collectives
};

// The rank that arrived last: the shortest duration where every rank must hear from every
// other before it can finish (AllReduce, AllGather, ReduceScatter, AlltoAll); for the others
// (a Broadcast's root finishes as soon as its data leaves) the latest start on a shared clock,
// else none.
void LastArrival(const JobView& view, const std::vector<Participant>& members,
                 MatchedCollective& m) {
  uint64_t earliest = UINT64_MAX, latest = 0;
  std::optional<uint32_t> latest_rank;
  for (const Participant& p : members) {
    const RankDigest& r = view.ranks[p.rank];
    const RankCollective& c = r.collectives[p.collective];
    if (c.duration_ns == m.shortest_ns && !m.last_rank) m.last_rank = r.RankOrIndex();
    const uint64_t start = r.Epoch(c.start_ns);
    earliest = std::min(earliest, start);
    if (start >= latest) {
      latest = start;
      latest_rank = r.RankOrIndex();
    }
  }
  if (view.shared_clock) {
    m.clock_last_rank = latest_rank;
    m.clock_spread_ns = latest - earliest;
  }
  if (!IsSymmetricCollective(m.op)) m.last_rank = m.clock_last_rank;
}

// One instance's figures, and each participant's wait.
MatchedCollective Settle(JobView& view, const std::pair<std::string_view, uint64_t>& key,
                         const std::vector<Participant>& members, size_t* op_mismatches) {
  MatchedCollective m;
  m.comm = key.first;
  m.seq = key.second;
  m.ranks = static_cast<uint32_t>(members.size());
  m.shortest_ns = UINT64_MAX;
  for (const Participant& p : members) {
    const RankCollective& c = view.ranks[p.rank].collectives[p.collective];
    if (m.op.empty()) m.op = c.op;
    if (c.op != m.op) ++*op_mismatches;
    m.bytes = std::max(m.bytes, c.bytes);
    m.shortest_ns = std::min(m.shortest_ns, c.duration_ns);
    m.longest_ns = std::max(m.longest_ns, c.duration_ns);
  }
  LastArrival(view, members, m);
  for (const Participant& p : members) {
    RankCollective& c = view.ranks[p.rank].collectives[p.collective];
    c.wait_ns = c.duration_ns - m.shortest_ns;
  }
  return m;
}

// The time each rank lost waiting (LostToWaiting), per collective and per step.
void LostTime(RankDigest& r,
              const std::map<std::pair<std::string_view, uint64_t>, uint64_t>& moving) {
  std::vector<CollectiveWait> waits;
  waits.reserve(r.collectives.size());
  for (const RankCollective& c : r.collectives) {
    auto transfer = moving.find({c.comm, c.seq});
    waits.push_back({c.comm, c.seq, c.start_ns, c.end_ns(), c.wait_ns,
                     transfer != moving.end() ? transfer->second : c.duration_ns, c.step});
  }
  LostToWaiting(waits, r.compute_busy);
  for (size_t i = 0; i < waits.size(); ++i) {
    RankCollective& c = r.collectives[i];
    c.lost_ns = waits[i].lost_ns;
    c.lost_to_seq = waits[waits[i].lost_to].seq;
    if (c.step < 0 || static_cast<size_t>(c.step) >= r.step_times.size()) continue;
    StepTimes& t = r.step_times[static_cast<size_t>(c.step)];
    t.wait_ns += c.wait_ns;
    t.lost_ns += c.lost_ns;
  }
}

}  // namespace

void MatchCollectives(JobView& view) {
  std::map<std::pair<std::string_view, uint64_t>, std::vector<Participant>> by_key;
  for (size_t r = 0; r < view.ranks.size(); ++r) {
    const std::vector<RankCollective>& cs = view.ranks[r].collectives;
    for (size_t i = 0; i < cs.size(); ++i) by_key[{cs[i].comm, cs[i].seq}].push_back({r, i});
  }
  size_t op_mismatches = 0, alone = 0;
  std::map<std::pair<std::string_view, uint64_t>, uint64_t> moving;  // the data movement's time
  view.collectives.clear();
  view.collectives.reserve(by_key.size());
  for (const auto& [key, members] : by_key) {
    if (members.size() < 2) {
      ++alone;
      continue;
    }
    view.collectives.push_back(Settle(view, key, members, &op_mismatches));
    moving[key] = view.collectives.back().shortest_ns;
  }
  for (RankDigest& r : view.ranks) LostTime(r, moving);
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
