// The per-thread call log: order within a thread, no entry lost or read twice while threads
// append during drains, chunks recycled, the memory bound, threads that end.
#include "collectors/api_calls/call_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <vector>

namespace warpscope {
namespace {

LoggedCall Call(uint32_t correlation) {
  LoggedCall c;
  c.correlation_id = correlation;
  c.start_ns = correlation * 10;
  c.end_ns = correlation * 10 + 5;
  return c;
}

// Everything a drain hands over, by thread.
std::map<uint32_t, std::vector<uint32_t>> DrainAll(CallLog& log) {
  std::map<uint32_t, std::vector<uint32_t>> out;
  log.Drain([&](uint32_t tid, std::span<const LoggedCall> calls) {
    for (const LoggedCall& c : calls) out[tid].push_back(c.correlation_id);
  });
  return out;
}

TEST(CallLog, HandsOverEachCallOnceInOrder) {
  CallLog log(64 << 20);
  for (uint32_t i = 1; i <= 3000; ++i) ASSERT_TRUE(log.Append(7, Call(i)));
  auto first = DrainAll(log);
  ASSERT_EQ(first[7].size(), 3000u);
  for (uint32_t i = 0; i < 3000; ++i) EXPECT_EQ(first[7][i], i + 1);
  EXPECT_TRUE(DrainAll(log).empty());  // nothing twice
  ASSERT_TRUE(log.Append(7, Call(3001)));
  auto second = DrainAll(log);
  EXPECT_EQ(second[7], std::vector<uint32_t>{3001});
  EXPECT_EQ(log.counts().logged, 3001u);
  EXPECT_EQ(log.counts().dropped, 0u);
  EXPECT_EQ(log.counts().threads, 1u);
}

TEST(CallLog, ThreadsAppendingWhileDrainingLoseNothing) {
  CallLog log(64 << 20);
  constexpr int kThreads = 4;
  constexpr uint32_t kCalls = 50000;  // many chunks each
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 1; i <= kCalls; ++i) log.Append(100 + t, Call(i));
      running.fetch_sub(1);
    });
  }
  std::map<uint32_t, std::vector<uint32_t>> seen;
  auto merge = [&] {
    for (auto& [tid, ids] : DrainAll(log)) seen[tid].insert(seen[tid].end(), ids.begin(), ids.end());
  };
  while (running.load() > 0) merge();
  for (std::thread& t : threads) t.join();
  merge();
  ASSERT_EQ(seen.size(), static_cast<size_t>(kThreads));
  for (auto& [tid, ids] : seen) {
    ASSERT_EQ(ids.size(), kCalls) << tid;
    for (uint32_t i = 0; i < kCalls; ++i) ASSERT_EQ(ids[i], i + 1) << tid;
  }
  EXPECT_EQ(log.counts().dropped, 0u);
}

TEST(CallLog, ReadChunksAreReused) {
  CallLog log(64 << 20);
  constexpr uint32_t kCalls = 10 * CallLog::kChunkEntries;
  // Two rounds to reach the steady state: the last chunk read stays until its successor exists.
  for (int round = 0; round < 2; ++round) {
    for (uint32_t i = 1; i <= kCalls; ++i) log.Append(3, Call(i));
    DrainAll(log);
  }
  const size_t held = log.bytes_held();
  for (int round = 0; round < 5; ++round) {
    for (uint32_t i = 1; i <= kCalls; ++i) log.Append(3, Call(i));
    ASSERT_EQ(DrainAll(log)[3].size(), kCalls);
  }
  EXPECT_EQ(log.bytes_held(), held);  // memory follows what is unread, not what was logged
}

TEST(CallLog, DropsAndCountsPastItsMemoryBound) {
  // Room for about two chunks: the first chunk of the thread, then one more.
  CallLog log(2 * CallLog::kChunkEntries * sizeof(LoggedCall) + 4096);
  uint32_t appended = 0;
  for (uint32_t i = 1; i <= 10 * CallLog::kChunkEntries; ++i) appended += log.Append(1, Call(i));
  EXPECT_LT(appended, 10 * CallLog::kChunkEntries);
  EXPECT_EQ(log.counts().dropped, 10 * CallLog::kChunkEntries - appended);
  EXPECT_EQ(DrainAll(log)[1].size(), appended);
  // Drained chunks are free again: appending works once more.
  EXPECT_TRUE(log.Append(1, Call(1)));
}

TEST(CallLog, EndedThreadsAreDrainedThenForgotten) {
  CallLog log(64 << 20);
  std::thread([&] {
    for (uint32_t i = 1; i <= 10; ++i) log.Append(55, Call(i));
  }).join();
  auto out = DrainAll(log);
  EXPECT_EQ(out[55].size(), 10u);  // appended before the thread ended: drained
  EXPECT_TRUE(DrainAll(log).empty());
  const size_t held = log.bytes_held();
  // A new thread gets a chain of its own, reusing the freed chunk.
  std::thread([&] { log.Append(56, Call(1)); }).join();
  EXPECT_EQ(DrainAll(log)[56].size(), 1u);
  EXPECT_EQ(log.bytes_held(), held);
  EXPECT_EQ(log.counts().threads, 2u);
}

// Appends from a thread-local's destructor, which may run after the log's own handle of the
// thread was destroyed (as a CUDA call in the program's thread-local destructors, or in an
// atexit handler of the main thread, would).
struct AppendAtThreadExit {
  CallLog* log = nullptr;
  ~AppendAtThreadExit() {
    if (log != nullptr) {
      for (uint32_t i = 100; i < 103; ++i) log->Append(77, Call(i));
    }
  }
};

TEST(CallLog, CallsAfterTheThreadsHandleEndedAreKept) {
  CallLog log(64 << 20);
  for (int order = 0; order < 2; ++order) {
    std::thread([&, order] {
      // Constructed before or after the log's handle: destroyed after or before it.
      thread_local AppendAtThreadExit late;
      if (order == 0) late.log = &log;
      log.Append(77, Call(1));
      if (order == 1) late.log = &log;
    }).join();
  }
  std::vector<uint32_t> seen = DrainAll(log)[77];
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<uint32_t>{1, 1, 100, 100, 101, 101, 102, 102}));
  EXPECT_EQ(log.counts().dropped, 0u);
}

TEST(CallLog, AThreadAtTheBoundStillLogsAndOthersAreNotStarved) {
  // No room beyond each thread's own chunk.
  CallLog log(1);
  uint32_t appended = 0;
  for (uint32_t i = 1; i <= 3 * CallLog::kChunkEntries; ++i) appended += log.Append(1, Call(i));
  EXPECT_GE(appended, CallLog::kChunkEntries);
  EXPECT_EQ(log.counts().dropped, 3 * CallLog::kChunkEntries - appended);
  // Another thread has its own first chunk, bound or not.
  std::thread([&] { EXPECT_TRUE(log.Append(2, Call(1))); }).join();
  auto out = DrainAll(log);
  EXPECT_EQ(out[1].size(), appended);
  EXPECT_EQ(out[2].size(), 1u);
  // Drained: the thread logs again.
  for (uint32_t i = 1; i <= CallLog::kChunkEntries; ++i) log.Append(1, Call(i));
  EXPECT_EQ(DrainAll(log)[1].size(), CallLog::kChunkEntries);
}

TEST(CallLog, AbandonedLogTakesNothing) {
  CallLog log(64 << 20);
  log.Append(1, Call(1));
  log.Abandon();
  EXPECT_FALSE(log.Append(1, Call(2)));
  EXPECT_TRUE(DrainAll(log).empty());
}

}  // namespace
}  // namespace warpscope
