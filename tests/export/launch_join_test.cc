// The join of launches to their GPU work (analyzers/analyses/export/launch_join.h) against the
// rules it keeps, worked out here with whole tables in memory: random API calls (runtime calls
// with driver calls beneath some, driver calls alone, ids without calls), their recorded
// stacks, kernels, copies and memsets in random file order, NCCL calls that made some launches. Joined in memory and
// through many runs of a small budget, merged level by level, the answers are the same.
#include "analyzers/analyses/export/launch_join.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"
#include "tests/export/export_fixture.h"
#include "tests/export/trace_event_json.h"

namespace warpscope {
namespace {

using ::warpscope::testing::ExportFixturePath;
using ::warpscope::testing::Load;

constexpr uint32_t kIds = 600;

// Fills the model's tables (kept, so the join reads them) with random events.
void RandomTables(TraceModel& m, uint32_t seed) {
  std::mt19937 rng(seed);
  m.api_calls.clear();
  m.kernels.clear();
  m.memcpys.clear();
  m.memsets.clear();
  m.nccl_calls.clear();
  m.api_stacks.clear();
  for (uint32_t i = 0; i < 2 * kIds; ++i) {
    ApiCallEvent call;
    call.correlation_id = rng() % (kIds + 1);  // 0: a call without an id
    call.domain = rng() % 2 == 0 ? v1::API_DOMAIN_RUNTIME : v1::API_DOMAIN_DRIVER;
    call.start_ns = rng() % 100000;
    call.thread_id = 1 + rng() % 3;
    m.api_calls.push_back(call);
  }
  auto work = [&](StreamWork& w) {
    w.correlation_id = rng() % (kIds + 200);  // some with no call; 0 too
    w.device_id = rng() % 2;
    w.stream_id = 7 + rng() % 3;
    w.start_ns = rng() % 1000 * 100;  // many start together
  };
  for (uint32_t i = 0; i < 3 * kIds; ++i) work(m.kernels.emplace_back());
  for (uint32_t i = 0; i < kIds / 2; ++i) work(m.memcpys.emplace_back());
  for (uint32_t i = 0; i < kIds / 2; ++i) work(m.memsets.emplace_back());
  for (uint32_t i = 0; i < kIds; ++i) {  // some ids with none, some with several
    ApiStack& stack = m.api_stacks.emplace_back();
    stack.correlation_id = rng() % (kIds + 1);
    stack.stack_id = 1 + rng() % 50;
  }
  for (uint32_t i = 0; i < 100; ++i) {
    NcclCall& call = m.nccl_calls.emplace_back();
    call.launch_correlation_id = kIds - 50 + i;  // half with API calls, half without
    call.start_ns = rng() % 100000;
    call.thread_id = 9;
  }
}

// What the join should answer, from whole tables.
struct Expected {
  std::vector<bool> inside;        // per API call
  std::vector<std::optional<uint64_t>> stacks;  // per API call
  std::vector<LaunchOf> launches;  // per GPU work
  std::vector<StandInLaunch> stand_ins;
};

std::vector<const StreamWork*> Work(const TraceModel& m) {
  std::vector<const StreamWork*> out;
  for (const KernelEvent& k : m.kernels) out.push_back(&k);
  for (const MemcpyEvent& c : m.memcpys) out.push_back(&c);
  for (const MemsetEvent& s : m.memsets) out.push_back(&s);
  return out;
}

// Per correlation id, its launching call: a runtime call first, else the first in the file.
std::map<uint32_t, uint32_t> Launching(const TraceModel& m) {
  std::map<uint32_t, uint32_t> out;
  for (uint32_t i = 0; i < m.api_calls.size(); ++i) {
    const ApiCallEvent& c = m.api_calls[i];
    if (c.correlation_id == 0) continue;
    auto [it, added] = out.try_emplace(c.correlation_id, i);
    const bool runtime = c.domain == v1::API_DOMAIN_RUNTIME;
    if (!added && runtime && m.api_calls[it->second].domain != v1::API_DOMAIN_RUNTIME) {
      it->second = i;
    }
  }
  return out;
}

// launch_times.h's rule with every known kernel at hand: the launch of the latest kernel that
// started at or before the work on its stream (of those starting together, the latest launch).
std::vector<StandInLaunch> StandIns(const TraceModel& m, const std::vector<LaunchOf>& launches) {
  const std::vector<const StreamWork*> work = Work(m);
  std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<uint64_t, uint64_t>>> known;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    if (launches[i].kind == LaunchOf::kNone) continue;
    known[{work[i]->device_id, work[i]->stream_id}].emplace_back(work[i]->start_ns,
                                                                 launches[i].ns);
  }
  for (auto& [stream, kernels] : known) std::sort(kernels.begin(), kernels.end());
  std::map<uint32_t, StandInLaunch> first;  // per id, the earliest placed
  for (size_t i = 0; i < work.size(); ++i) {
    if (launches[i].kind != LaunchOf::kNone) continue;
    const StreamWork& w = *work[i];
    StandInLaunch l{w.correlation_id, w.device_id, w.stream_id, true, w.start_ns};
    const auto& kernels = known[{w.device_id, w.stream_id}];
    const std::pair<uint64_t, uint64_t> last{w.start_ns, ~uint64_t{0}};
    auto after = std::upper_bound(kernels.begin(), kernels.end(), last);
    if (after != kernels.begin()) {
      l = {l.correlation_id, l.device_id, l.stream_id, false, std::prev(after)->second};
    }
    auto [it, added] = first.try_emplace(l.correlation_id, l);
    if (!added && l.ns < it->second.ns) it->second = l;
  }
  std::vector<StandInLaunch> out;
  for (const auto& [id, l] : first) out.push_back(l);
  return out;
}

Expected Expect(const TraceModel& m,
                const std::unordered_map<uint32_t, const NcclCall*>& nccl) {
  Expected e;
  const std::map<uint32_t, uint32_t> launching = Launching(m);
  std::map<uint32_t, uint64_t> first_stack;  // per id, its first record's
  for (const ApiStack& a : m.api_stacks) first_stack.try_emplace(a.correlation_id, a.stack_id);
  for (const ApiCallEvent& c : m.api_calls) {
    auto stack = first_stack.find(c.correlation_id);
    e.stacks.push_back(c.correlation_id == 0 || stack == first_stack.end()
                           ? std::nullopt
                           : std::optional<uint64_t>(stack->second));
    auto it = launching.find(c.correlation_id);
    e.inside.push_back(c.domain == v1::API_DOMAIN_DRIVER && it != launching.end() &&
                       m.api_calls[it->second].domain == v1::API_DOMAIN_RUNTIME);
  }
  for (const StreamWork* w : Work(m)) {
    LaunchOf l;
    if (auto it = launching.find(w->correlation_id); it != launching.end()) {
      const ApiCallEvent& c = m.api_calls[it->second];
      l = {LaunchOf::kApiCall, 0, 0, it->second, c.thread_id, c.start_ns};
    } else if (auto n = nccl.find(w->correlation_id); n != nccl.end()) {
      l = {LaunchOf::kNcclCall, 0, 0, 0, n->second->thread_id, n->second->start_ns};
    }
    e.launches.push_back(l);
  }
  e.stand_ins = StandIns(m, e.launches);
  std::map<uint32_t, const StandInLaunch*> by_id;
  for (const StandInLaunch& s : e.stand_ins) by_id[s.correlation_id] = &s;
  const std::vector<const StreamWork*> work = Work(m);
  for (size_t i = 0; i < e.launches.size(); ++i) {
    if (e.launches[i].kind != LaunchOf::kNone) continue;
    const StandInLaunch& s = *by_id.at(work[i]->correlation_id);
    e.launches[i] = {LaunchOf::kStandIn, s.device_id, s.stream_id, 0, 0, s.ns};
  }
  return e;
}

void ExpectJoin(const TraceModel& m, const std::unordered_map<uint32_t, const NcclCall*>& nccl,
                size_t budget) {
  const Expected want = Expect(m, nccl);
  absl::StatusOr<std::unique_ptr<LaunchJoin>> join = LaunchJoin::Of(
      m, {.nccl_launches = &nccl, .stand_ins = true, .budget_bytes = budget});
  ASSERT_TRUE(join.ok()) << join.status();
  for (uint32_t i = 0; i < m.api_calls.size(); ++i) {
    ASSERT_EQ((*join)->StackOf(i), want.stacks[i]) << "call " << i;
    ASSERT_EQ((*join)->InsideRuntimeCall(i), want.inside[i]) << "call " << i;
  }
  for (const auto& [id, call] : nccl) {
    EXPECT_EQ((*join)->HasApiCall(id), Launching(m).count(id) != 0) << id;
  }
  std::vector<StandInLaunch> stand_ins;
  ASSERT_TRUE((*join)->ForEachStandIn([&](const StandInLaunch& l) {
    stand_ins.push_back(l);
  }).ok());
  ASSERT_EQ(stand_ins.size(), want.stand_ins.size());
  for (size_t i = 0; i < stand_ins.size(); ++i) {
    const StandInLaunch& a = stand_ins[i];
    const StandInLaunch& b = want.stand_ins[i];
    EXPECT_EQ(std::tie(a.correlation_id, a.ns, a.at_start, a.device_id, a.stream_id),
              std::tie(b.correlation_id, b.ns, b.at_start, b.device_id, b.stream_id)) << i;
  }
  ASSERT_FALSE(stand_ins.empty());
  for (uint64_t i = 0; i < want.launches.size(); ++i) {
    const LaunchOf a = (*join)->Launch(i);
    const LaunchOf& b = want.launches[i];
    ASSERT_EQ(std::tie(a.kind, a.api_index, a.thread_id, a.ns, a.device_id, a.stream_id),
              std::tie(b.kind, b.api_index, b.thread_id, b.ns, b.device_id, b.stream_id))
        << "work " << i;
  }
  EXPECT_TRUE((*join)->status().ok());
}

TEST(LaunchJoinTest, AsWholeTablesGiveInMemoryAndThroughRuns) {
  TraceModel m = Load(ExportFixturePath());
  for (uint32_t seed : {1u, 2u, 3u}) {
    RandomTables(m, seed);
    std::unordered_map<uint32_t, const NcclCall*> nccl;
    for (const NcclCall& c : m.nccl_calls) nccl[c.launch_correlation_id] = &c;
    ExpectJoin(m, nccl, kJoinSortBudgetBytes);  // no run
    ExpectJoin(m, nccl, 512);                    // hundreds of runs, merged level by level
  }
}

// Chrome's and Perfetto's join: API calls only; work without one has no launch.
TEST(LaunchJoinTest, WithoutNcclCallsOrStandIns) {
  TraceModel m = Load(ExportFixturePath());
  RandomTables(m, 4);
  const std::map<uint32_t, uint32_t> launching = Launching(m);
  absl::StatusOr<std::unique_ptr<LaunchJoin>> join = LaunchJoin::Of(m, {.budget_bytes = 512});
  ASSERT_TRUE(join.ok()) << join.status();
  const std::vector<const StreamWork*> work = Work(m);
  for (uint64_t i = 0; i < work.size(); i += 3) {  // asked for some only
    const LaunchOf l = (*join)->Launch(i);
    auto it = launching.find(work[i]->correlation_id);
    if (it == launching.end()) {
      EXPECT_EQ(l.kind, LaunchOf::kNone) << i;
    } else {
      EXPECT_EQ(l.kind, LaunchOf::kApiCall) << i;
      EXPECT_EQ(l.api_index, it->second) << i;
      EXPECT_EQ(l.ns, m.api_calls[it->second].start_ns) << i;
    }
  }
  EXPECT_TRUE((*join)->status().ok());
}

}  // namespace
}  // namespace warpscope
