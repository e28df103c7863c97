// Tests of the TraceWriter under pressure: bounded buffering with drops (a stalled reader
// fills the chunk pool), concurrent writers, and a fork while writing.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"
#include "tests/writer/writer_test_support.h"

namespace warpscope {
namespace {

using namespace writer_test;  // NOLINT(build/namespaces): the helpers all writer tests share.
using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------
// Bounded buffering: a FIFO whose reader does not read stalls the writer thread in write(2),
// so the chunk pool fills deterministically.

class StalledFifo {
 public:
  explicit StalledFifo(const std::string& path) : path_(path) {
    EXPECT_EQ(mkfifo(path.c_str(), 0600), 0);
    read_fd_ = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    EXPECT_GE(read_fd_, 0);
    fcntl(read_fd_, F_SETPIPE_SZ, 4096);
  }
  ~StalledFifo() {
    if (drain_.joinable()) drain_.join();
    if (read_fd_ >= 0) close(read_fd_);
  }
  void StartDraining() {
    drain_ = std::thread([this] {
      fcntl(read_fd_, F_SETFL, 0);  // Blocking: read until the writer closes.
      char buf[65536];
      for (;;) {
        const ssize_t n = read(read_fd_, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        bytes_.append(buf, static_cast<size_t>(n));
      }
    });
  }
  std::string Finish() {
    drain_.join();
    return bytes_;
  }

 private:
  std::string path_;
  int read_fd_ = -1;
  std::thread drain_;
  std::string bytes_;
};

// A writer into a StalledFifo named `name` in a fresh directory, with a pool of two of the
// smallest chunks, so that a stalled reader fills it soon; `tune` changes the other options.
struct StalledWriter {
  explicit StalledWriter(const std::string& name,
                         const std::function<void(TraceWriterOptions&)>& tune = nullptr)
      : path(dir.File(name)), fifo(path) {
    TraceWriterOptions options = Options(path);
    options.force_overwrite = true;  // The FIFO exists.
    options.chunk_bytes = kMinChunkBytes;
    options.max_buffered_bytes = 2 * kMinChunkBytes;
    if (tune) tune(options);
    writer = OpenOrDie(options, FileTestHeader());
  }

  TempDir dir;
  std::string path;
  StalledFifo fifo;
  std::unique_ptr<TraceWriter> writer;
};

// The file of PoolExhaustionDropsCountsAndKeepsTheFileParseable: whole packets, every kernel
// that Write accepted and no other, names defined before use, and the drops in the final stats.
void ExpectWholeFileWithTheAcceptedKernels(const std::string& bytes,
                                           const std::set<uint32_t>& accepted_ids,
                                           uint64_t drops_while_stalled) {
  const testing::PacketStream stream = ParsePacketStream(bytes);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  std::set<uint64_t> strings;
  std::set<uint32_t> kernels;
  const pb::Stats* final_stats = nullptr;
  for (const auto& p : stream.packets) {
    if (p.packet.has_interned_string()) {
      strings.insert(p.packet.interned_string().id());
      EXPECT_NE(p.packet.interned_string().value(), "") << "only written strings";
    }
    if (p.packet.has_kernel()) {
      EXPECT_TRUE(strings.count(p.packet.kernel().name_id()));
      EXPECT_TRUE(kernels.insert(p.packet.kernel().correlation_id()).second);
    }
    if (p.packet.has_stats() && p.packet.stats().final()) final_stats = &p.packet.stats();
  }
  EXPECT_EQ(kernels, accepted_ids);
  ASSERT_NE(final_stats, nullptr);
  EXPECT_GE(StatValue(*final_stats, std::string(stats::kWriterDroppedBufferFull.name)),
            drops_while_stalled);
  EXPECT_GE(StatValue(*final_stats, std::string(stats::kWriterBufferHighWater.name)),
            kMinChunkBytes);
  for (const auto& c : final_stats->counters()) {
    if (c.name() == stats::kWriterDroppedBufferFull.name) {
      EXPECT_EQ(c.severity(), pb::SEVERITY_DATA_LOSS);
    }
  }
  EXPECT_TRUE(stream.packets.back().packet.has_end_of_trace());
}

TEST(TraceWriterBuffering, PoolExhaustionDropsCountsAndKeepsTheFileParseable) {
  StalledWriter stalled("fifo.wst", [](TraceWriterOptions& o) { o.flush_interval_ms = 10; });
  ASSERT_NE(stalled.writer, nullptr);
  auto& writer = stalled.writer;
  StalledFifo& fifo = stalled.fifo;

  const uint64_t name = writer->InternString("before_stall");
  ASSERT_NE(name, 0u);
  uint32_t accepted = 0, dropped = 0, correlation = 0;
  std::set<uint32_t> accepted_ids;
  // Writes until the pool has been full for a while (the writer thread is stuck on the pipe).
  for (int consecutive_drops = 0; consecutive_drops < 2000; ++correlation) {
    if (writer->Write(FileTestKernel(correlation, name))) {
      ++accepted;
      accepted_ids.insert(correlation);
      consecutive_drops = 0;
    } else {
      ++dropped;
      ++consecutive_drops;
    }
    if (correlation > 10'000'000) FAIL() << "the pool never filled";
  }
  EXPECT_GT(accepted, 100u);
  EXPECT_EQ(writer->Counter(stats::kWriterDroppedBufferFull.name), dropped);
  // An intern packet that cannot be written is not remembered, so nothing refers to it.
  EXPECT_EQ(writer->InternString("during_stall"), 0u);
  EXPECT_EQ(writer->InternString("during_stall"), 0u);
  EXPECT_EQ(writer->InternLaunchConfig(LaunchConfigRecord{.grid_x = 9}), 0u);
  EXPECT_EQ(writer->InternThread(99), 0u);
  const uint64_t drops_while_stalled = writer->Counter(stats::kWriterDroppedBufferFull.name);

  fifo.StartDraining();
  // Once the writer thread moves again, writing works again.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  uint64_t late = 0;
  while (late == 0 && std::chrono::steady_clock::now() < deadline) {
    late = writer->InternString("during_stall");
    if (late == 0) std::this_thread::sleep_for(1ms);
  }
  ASSERT_NE(late, 0u);
  ++correlation;
  ASSERT_TRUE(writer->Write(FileTestKernel(correlation, late)));
  accepted_ids.insert(correlation);
  writer->Close(EndReason::kExit, kFileTestBase);
  const std::string bytes = fifo.Finish();

  ExpectWholeFileWithTheAcceptedKernels(bytes, accepted_ids, drops_while_stalled);
}

TEST(TraceWriterBuffering, CloseGivesUpOnAWriterThatMakesNoProgress) {
  StalledWriter stalled("stuck.wst", [](TraceWriterOptions& o) { o.close_timeout_ms = 200; });
  ASSERT_NE(stalled.writer, nullptr);
  auto& writer = stalled.writer;
  StalledFifo& fifo = stalled.fifo;
  for (uint32_t i = 0; i < 10000; ++i) writer->Write(FileTestKernel(i));  // Fills pipe and pool.
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  writer->Close(EndReason::kExit, kFileTestBase);
  const auto took = std::chrono::steady_clock::now() - start;
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(took, 5s);
  EXPECT_GE(took, 200ms);
  EXPECT_EQ(err, "warpscope: writing trace " + stalled.path +
                     " makes no progress; giving up, the trace may be incomplete\n");
  EXPECT_FALSE(writer->healthy());
  writer->Flush();  // Returns at once.
  EXPECT_FALSE(writer->Write(FileTestKernel(1)));
  writer.reset();  // Leaves the internals to the writer thread, which is still in write(2).
  fifo.StartDraining();  // Lets that thread finish; it closes the file, so the reader ends.
  const testing::PacketStream stream = ParsePacketStream(fifo.Finish());
  EXPECT_FALSE(stream.malformed);
  EXPECT_FALSE(stream.truncated);
}

TEST(TraceWriterBuffering, CountingInsideABatchWhileCloseWaitsDoesNotDeadlock) {
  StalledWriter stalled("count.wst");
  ASSERT_NE(stalled.writer, nullptr);
  auto& writer = stalled.writer;
  StalledFifo& fifo = stalled.fifo;
  for (uint32_t i = 0; i < 10000; ++i) writer->Write(FileTestKernel(i));  // Close will have to wait.
  std::atomic<bool> done{false};
  std::thread counter([&] {
    while (!done) {
      TraceWriter::Batch batch(*writer);
      writer->AddToCounter("test.inside_batch", 1, Severity::kInfo);
    }
  });
  std::thread closer([&] { writer->Close(EndReason::kExit, kFileTestBase); });
  std::this_thread::sleep_for(100ms);
  fifo.StartDraining();
  closer.join();  // With the deadlock this never returns (the test times out).
  done = true;
  counter.join();
  const testing::PacketStream stream = ParsePacketStream(fifo.Finish());
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.packets.empty());
  EXPECT_TRUE(stream.packets.back().packet.has_end_of_trace());
}

TEST(TraceWriterThreads, ConcurrentWritersLoseNothing) {
  TempDir dir;
  const std::string path = dir.File("threads.wst");
  TraceWriterOptions options = Options(path);
  options.chunk_bytes = 64 * 1024;
  options.stats_interval_ms = 5;
  std::string error;
  auto writer = TraceWriter::Open(options, FileTestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  constexpr uint32_t kThreads = 4;
  constexpr uint32_t kPerThread = 100000;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const uint64_t thread_id = writer->InternThread(1000 + t, t, "worker");
      for (uint32_t i = 0; i < kPerThread; ++i) {
        const uint32_t correlation = t * kPerThread + i;
        if (i % 1000 == 0) {
          // Shared and private names interned concurrently.
          const uint64_t shared = writer->InternString("shared_" + std::to_string(i / 1000));
          const uint64_t own = writer->InternString("t" + std::to_string(t) + "_" +
                                                    std::to_string(i));
          writer->Write(ApiCallRecord{.domain = ApiDomain::kRuntime, .name_id = shared,
                                      .start_ns = kFileTestBase, .end_ns = kFileTestBase + 1,
                                      .thread_id = thread_id, .correlation_id = correlation});
          writer->Write(NvtxMarkRecord{.name_id = own, .timestamp_ns = kFileTestBase,
                                       .thread_id = thread_id});
        }
        if (i % 2 == 0) {
          writer->Write(FileTestKernel(correlation, 0));
        } else {
          TraceWriter::Batch batch(*writer);
          batch.Write(FileTestKernel(correlation, 0));
          writer->AddToCounter("test.per_thread", 1, Severity::kInfo);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  writer->Close(EndReason::kExit, kFileTestBase);
  EXPECT_EQ(writer->Counter(stats::kWriterDroppedBufferFull.name), 0u);

  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  std::vector<bool> seen(kThreads * kPerThread, false);
  std::map<uint64_t, std::string> strings;
  std::set<uint64_t> threads_seen;
  size_t kernels = 0;
  for (const auto& p : stream.packets) {
    const pb::TracePacket& packet = p.packet;
    if (packet.has_interned_string()) {
      EXPECT_TRUE(strings.emplace(packet.interned_string().id(), packet.interned_string().value()).second);
    } else if (packet.has_thread()) {
      threads_seen.insert(packet.thread().id());
    } else if (packet.has_kernel()) {
      const uint32_t c = packet.kernel().correlation_id();
      ASSERT_LT(c, seen.size());
      EXPECT_FALSE(seen[c]);
      seen[c] = true;
      ++kernels;
    } else if (packet.has_api_call()) {
      EXPECT_TRUE(strings.count(packet.api_call().name_id()));
      EXPECT_TRUE(threads_seen.count(packet.api_call().thread_id()));
    } else if (packet.has_nvtx_mark()) {
      EXPECT_TRUE(strings.count(packet.nvtx_mark().name_id()));
    }
  }
  EXPECT_EQ(kernels, kThreads * kPerThread);
  EXPECT_EQ(threads_seen.size(), kThreads);
  // 100 shared names, 400 private ones, each once.
  EXPECT_EQ(strings.size(), 100u + 400u);
  const pb::Stats& final_stats = stream.packets[stream.packets.size() - 2].packet.stats();
  EXPECT_EQ(StatValue(final_stats, "test.per_thread"), kThreads * kPerThread / 2);
  EXPECT_EQ(StatValue(final_stats, "writer.events_written.kernel"), kThreads * kPerThread);
}

TEST(TraceWriterFork, ChildAbandonsWithoutTouchingTheFileOrTheLock) {
  TempDir dir;
  const std::string path = dir.File("fork.wst");
  TraceWriterOptions options = Options(path);
  options.flush_interval_ms = 1000;  // Keep events buffered across the fork.
  std::string error;
  auto writer = TraceWriter::Open(options, FileTestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (uint32_t i = 0; i < 1000; ++i) ASSERT_TRUE(writer->Write(FileTestKernel(i)));

  // Another thread holds the writer's lock while the process forks, as a collector thread
  // inside a Batch might.
  std::atomic<bool> holding{false}, release{false};
  std::thread holder([&] {
    TraceWriter::Batch batch(*writer);
    batch.Write(FileTestKernel(1000));
    holding = true;
    while (!release) std::this_thread::sleep_for(1ms);
  });
  while (!holding) std::this_thread::sleep_for(1ms);

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(10);  // A hang (a lock taken, a join) ends in SIGALRM instead of a stuck test.
    writer->AbandonAfterFork();
    int failures = 0;
    failures += writer->Write(FileTestKernel(5000)) ? 1 : 0;
    failures += writer->InternString("child") != 0 ? 1 : 0;
    failures += writer->healthy() ? 1 : 0;
    writer->AddToCounter("child.counter", 1, Severity::kInfo);
    writer->Flush();
    writer->Close(EndReason::kExit, kFileTestBase);
    writer.reset();
    _exit(failures == 0 ? 0 : 1);
  }
  release = true;
  holder.join();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);

  for (uint32_t i = 1001; i < 1100; ++i) ASSERT_TRUE(writer->Write(FileTestKernel(i)));
  writer->Close(EndReason::kExit, kFileTestBase);
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  std::set<uint32_t> kernels;
  int headers = 0, ends = 0;
  for (const auto& p : stream.packets) {
    headers += p.packet.has_header();
    ends += p.packet.has_end_of_trace();
    if (p.packet.has_kernel()) {
      EXPECT_TRUE(kernels.insert(p.packet.kernel().correlation_id()).second) << "duplicated";
    }
  }
  EXPECT_EQ(headers, 1);
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(kernels.size(), 1100u);
  EXPECT_EQ(kernels.count(5000), 0u);
}

}  // namespace
}  // namespace warpscope
