// Tests of the TraceWriter's file behaviour: open errors, write errors, bounded buffering with
// drops, periodic and explicit flush, periodic stats, threads, fork, and output name patterns.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "proto/writer/trace_writer.h"
#include "tests/writer/packet_stream.h"  // Also the generated trace classes.

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing::ParsePacketFile;
using testing::ParsePacketStream;
using testing::ReadFileBytes;
using testing::StatValue;
using testing::TempDir;
namespace pb = ::warpscope::v1;
using namespace std::chrono_literals;

constexpr uint64_t kBase = 5'000'000'000ull;

HeaderRecord TestHeader() {
  HeaderRecord h;
  h.tool_version = "0.1.0-test";
  h.pid = 1;
  h.clock_domain = ClockDomain::kMonotonic;
  h.time_base_ns = kBase;
  h.producer = "test";
  return h;
}

TraceWriterOptions Options(const std::string& path) {
  TraceWriterOptions o;
  o.path = path;
  o.stats_interval_ms = 0;
  return o;
}

KernelRecord Kernel(uint32_t correlation, uint64_t name_id = 0) {
  return KernelRecord{.name_id = name_id, .start_ns = kBase + correlation,
                      .end_ns = kBase + correlation + 100, .stream_id = 7,
                      .correlation_id = correlation};
}

size_t CountLines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// ---------------------------------------------------------------------------------------
// Opening

TEST(TraceWriterOpen, RefusesToOverwriteAnExistingFileWithoutForce) {
  TempDir dir;
  const std::string path = dir.File("existing.wst");
  { std::ofstream(path) << "keep me"; }
  std::string error;
  auto writer = TraceWriter::Open(Options(path), TestHeader(), &error);
  EXPECT_EQ(writer, nullptr);
  EXPECT_THAT(error, StartsWith("warpscope: "));
  EXPECT_THAT(error, HasSubstr(path));
  EXPECT_THAT(error, HasSubstr("-f/--force-overwrite"));
  EXPECT_THAT(error, HasSubstr("WARPSCOPE_FORCE_OVERWRITE=1"));
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_EQ(ReadFileBytes(path), "keep me");

  TraceWriterOptions forced = Options(path);
  forced.force_overwrite = true;
  writer = TraceWriter::Open(forced, TestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->Close(EndReason::kExit, kBase);
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  ASSERT_EQ(stream.packets.size(), 3u);  // Header, final stats, end: the old bytes are gone.
  EXPECT_TRUE(stream.packets[0].packet.has_header());
}

TEST(TraceWriterOpen, ReportsAnUnusablePathInOneLine) {
  TempDir dir;
  for (const std::string& path : {dir.File("no/such/dir/trace.wst"), dir.path()}) {
    std::string error;
    auto writer = TraceWriter::Open(Options(path), TestHeader(), &error);
    EXPECT_EQ(writer, nullptr) << path;
    EXPECT_THAT(error, StartsWith("warpscope: cannot create trace " + path + ": "));
    EXPECT_THAT(error, Not(HasSubstr("force")));  // Forcing would not help.
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  {
    TraceWriterOptions forced = Options(dir.path());
    forced.force_overwrite = true;
    std::string error;
    EXPECT_EQ(TraceWriter::Open(forced, TestHeader(), &error), nullptr);
    EXPECT_THAT(error, HasSubstr("is a directory"));
  }
  std::string error;
  EXPECT_EQ(TraceWriter::Open(Options(""), TestHeader(), &error), nullptr);
  EXPECT_THAT(error, StartsWith("warpscope: "));
}

TEST(TraceWriterOpen, HeaderLargerThanAChunkGrowsTheChunk) {
  TempDir dir;
  const std::string path = dir.File("bigheader.wst");
  HeaderRecord header = TestHeader();
  for (int i = 0; i < 500; ++i) header.command_line.push_back("--arg" + std::to_string(i) + "=" + std::string(40, 'v'));
  TraceWriterOptions options = Options(path);
  options.chunk_bytes = kMinChunkBytes;
  std::string error;
  auto writer = TraceWriter::Open(options, header, &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->Close(EndReason::kExit, kBase);
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.packets.empty());
  EXPECT_GT(stream.packets[0].size, kMinChunkBytes);
  EXPECT_EQ(stream.packets[0].packet.header().command_line_size(), 500);
}

// ---------------------------------------------------------------------------------------
// Write errors

// The header is written when the trace is opened: a file that cannot take it (a full disk,
// here /dev/full) is one clear error and no writer, before the program runs on unprofiled.
TEST(TraceWriterErrors, DiskFullAtOpenIsOneClearError) {
  TraceWriterOptions options = Options("/dev/full");
  options.force_overwrite = true;  // /dev/full exists.
  ::testing::internal::CaptureStderr();
  std::string error;
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(writer, nullptr);
  EXPECT_EQ(error, "warpscope: cannot write trace /dev/full: No space left on device; tracing is off");
  EXPECT_EQ(err, "");  // the caller prints `error`
}

// A full file system (here: RLIMIT_FSIZE, which the kernel enforces like a full disk) cuts
// the trace at a packet boundary and, when there is room for them, ends it with the final
// statistics, so a reader sees a whole trace that counts what it lost.
TEST(TraceWriterErrors, FileSizeLimitLeavesWholePacketsBeforeTheCut) {
  TempDir dir;
  const std::string path = dir.File("limited.wst");
  constexpr rlim_t kLimit = 72 * 1024;  // 4.5 chunks: the fifth is cut back, its room ends the trace
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct sigaction ignore {}, saved_action {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGXFSZ, &ignore, &saved_action);
  rlimit limited = saved;
  limited.rlim_cur = kLimit;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);

  ::testing::internal::CaptureStderr();
  std::string error;
  TraceWriterOptions options = Options(path);
  options.chunk_bytes = 16 * 1024;
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
  uint32_t written = 0;
  if (writer != nullptr) {
    for (uint32_t i = 0; i < 20000; ++i) written += writer->Write(Kernel(i)) ? 1 : 0;
    writer->Flush();
    EXPECT_FALSE(writer->healthy());
    writer->Close(EndReason::kExit, kBase);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  setrlimit(RLIMIT_FSIZE, &saved);
  sigaction(SIGXFSZ, &saved_action, nullptr);
  ASSERT_NE(writer, nullptr) << error;

  EXPECT_EQ(CountLines(err), 1u) << err;
  EXPECT_THAT(err, StartsWith("warpscope: no space left for trace " + path + " (File too large)"));
  EXPECT_GT(writer->Counter(kStatDroppedWriteError), 0u);
  const std::string bytes = ReadFileBytes(path);
  EXPECT_LE(bytes.size(), kLimit);
  const testing::PacketStream stream = ParsePacketStream(bytes);
  EXPECT_FALSE(stream.malformed);
  ASSERT_GE(stream.packets.size(), 3u);
  EXPECT_TRUE(stream.packets[0].packet.has_header());
  // The last chunk did not fit whole: the file was cut back to the chunk before it, which
  // left room for the final Stats and EndOfTrace.
  ASSERT_TRUE(stream.packets.back().packet.has_end_of_trace());
  const auto& stats = stream.packets[stream.packets.size() - 2].packet;
  ASSERT_TRUE(stats.has_stats());
  EXPECT_TRUE(stats.stats().final());
  uint64_t dropped_in_file = 0;
  for (const auto& c : stats.stats().counters()) {
    if (c.name() == kStatDroppedWriteError) dropped_in_file = c.value();
  }
  EXPECT_GT(dropped_in_file, 0u);
  size_t kernels = 0;
  for (const auto& p : stream.packets) kernels += p.packet.has_kernel() ? 1 : 0;
  EXPECT_GT(kernels, 1000u);
  EXPECT_LT(kernels, written);
}

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

TEST(TraceWriterBuffering, PoolExhaustionDropsCountsAndKeepsTheFileParseable) {
  TempDir dir;
  const std::string path = dir.File("fifo.wst");
  StalledFifo fifo(path);
  TraceWriterOptions options = Options(path);
  options.force_overwrite = true;  // The FIFO exists.
  options.chunk_bytes = kMinChunkBytes;
  options.max_buffered_bytes = 2 * kMinChunkBytes;
  options.flush_interval_ms = 10;
  std::string error;
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;

  const uint64_t name = writer->InternString("before_stall");
  ASSERT_NE(name, 0u);
  uint32_t accepted = 0, dropped = 0, correlation = 0;
  std::set<uint32_t> accepted_ids;
  // Writes until the pool has been full for a while (the writer thread is stuck on the pipe).
  for (int consecutive_drops = 0; consecutive_drops < 2000; ++correlation) {
    if (writer->Write(Kernel(correlation, name))) {
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
  EXPECT_EQ(writer->Counter(kStatDroppedBufferFull), dropped);
  // An intern packet that cannot be written is not remembered, so nothing refers to it.
  EXPECT_EQ(writer->InternString("during_stall"), 0u);
  EXPECT_EQ(writer->InternString("during_stall"), 0u);
  EXPECT_EQ(writer->InternLaunchConfig(LaunchConfigRecord{.grid_x = 9}), 0u);
  EXPECT_EQ(writer->InternThread(99), 0u);
  const uint64_t drops_while_stalled = writer->Counter(kStatDroppedBufferFull);

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
  ASSERT_TRUE(writer->Write(Kernel(correlation, late)));
  accepted_ids.insert(correlation);
  writer->Close(EndReason::kExit, kBase);
  const std::string bytes = fifo.Finish();

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
  EXPECT_GE(StatValue(*final_stats, std::string(kStatDroppedBufferFull)), drops_while_stalled);
  EXPECT_GE(StatValue(*final_stats, std::string(kStatBufferHighWater)), kMinChunkBytes);
  for (const auto& c : final_stats->counters()) {
    if (c.name() == kStatDroppedBufferFull) {
      EXPECT_EQ(c.severity(), pb::SEVERITY_DATA_LOSS);
    }
  }
  EXPECT_TRUE(stream.packets.back().packet.has_end_of_trace());
}

TEST(TraceWriterBuffering, CloseGivesUpOnAWriterThatMakesNoProgress) {
  TempDir dir;
  const std::string path = dir.File("stuck.wst");
  StalledFifo fifo(path);
  TraceWriterOptions options = Options(path);
  options.force_overwrite = true;
  options.chunk_bytes = kMinChunkBytes;
  options.max_buffered_bytes = 2 * kMinChunkBytes;
  options.close_timeout_ms = 200;
  std::string error;
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (uint32_t i = 0; i < 10000; ++i) writer->Write(Kernel(i));  // Fills pipe and pool.
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  writer->Close(EndReason::kExit, kBase);
  const auto took = std::chrono::steady_clock::now() - start;
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(took, 5s);
  EXPECT_GE(took, 200ms);
  EXPECT_EQ(err, "warpscope: writing trace " + path +
                     " makes no progress; giving up, the trace may be incomplete\n");
  EXPECT_FALSE(writer->healthy());
  writer->Flush();  // Returns at once.
  EXPECT_FALSE(writer->Write(Kernel(1)));
  writer.reset();  // Leaves the internals to the writer thread, which is still in write(2).
  fifo.StartDraining();  // Lets that thread finish; it closes the file, so the reader ends.
  const testing::PacketStream stream = ParsePacketStream(fifo.Finish());
  EXPECT_FALSE(stream.malformed);
  EXPECT_FALSE(stream.truncated);
}

TEST(TraceWriterBuffering, CountingInsideABatchWhileCloseWaitsDoesNotDeadlock) {
  TempDir dir;
  const std::string path = dir.File("count.wst");
  StalledFifo fifo(path);
  TraceWriterOptions options = Options(path);
  options.force_overwrite = true;
  options.chunk_bytes = kMinChunkBytes;
  options.max_buffered_bytes = 2 * kMinChunkBytes;
  std::string error;
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (uint32_t i = 0; i < 10000; ++i) writer->Write(Kernel(i));  // Close will have to wait.
  std::atomic<bool> done{false};
  std::thread counter([&] {
    while (!done) {
      TraceWriter::Batch batch(*writer);
      writer->AddToCounter("test.inside_batch", 1, Severity::kInfo);
    }
  });
  std::thread closer([&] { writer->Close(EndReason::kExit, kBase); });
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

// ---------------------------------------------------------------------------------------
// Flushing

TEST(TraceWriterFlush, PeriodicFlushMakesDataVisibleWithoutClose) {
  TempDir dir;
  const std::string path = dir.File("periodic.wst");
  TraceWriterOptions options = Options(path);
  options.flush_interval_ms = 20;
  std::string error;
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (uint32_t i = 0; i < 100; ++i) ASSERT_TRUE(writer->Write(Kernel(i)));
  // Far less than a chunk: only the periodic flush can put it in the file.
  size_t kernels = 0;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (kernels < 100 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    const testing::PacketStream stream = ParsePacketFile(path);
    ASSERT_FALSE(stream.malformed);
    ASSERT_FALSE(stream.truncated);
    kernels = 0;
    for (const auto& p : stream.packets) kernels += p.packet.has_kernel() ? 1 : 0;
  }
  EXPECT_EQ(kernels, 100u);
  writer->Close(EndReason::kExit, kBase);
}

TEST(TraceWriterFlush, FlushWaitsUntilEverythingIsInTheFile) {
  TempDir dir;
  const std::string path = dir.File("flush.wst");
  TraceWriterOptions options = Options(path);
  options.flush_interval_ms = 1000;
  options.chunk_bytes = kMinChunkBytes;
  std::string error;
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (int round = 1; round <= 3; ++round) {
    for (uint32_t i = 0; i < 1000; ++i) ASSERT_TRUE(writer->Write(Kernel(i)));
    writer->Flush();
    const testing::PacketStream stream = ParsePacketFile(path);
    ASSERT_FALSE(stream.truncated);
    size_t kernels = 0;
    for (const auto& p : stream.packets) kernels += p.packet.has_kernel() ? 1 : 0;
    EXPECT_EQ(kernels, 1000u * round);
    EXPECT_EQ(writer->Counter(kStatBytesWritten), ReadFileBytes(path).size());
  }
  writer->Close(EndReason::kExit, kBase);
}

TEST(TraceWriterFlush, KilledProcessLeavesAReadableFile) {
  TempDir dir;
  const std::string path = dir.File("killed.wst");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    TraceWriterOptions options = Options(path);
    options.chunk_bytes = kMinChunkBytes;
    options.flush_interval_ms = 10;
    std::string error;
    auto writer = TraceWriter::Open(options, TestHeader(), &error);
    if (writer == nullptr) _exit(2);
    for (uint32_t i = 0; i < 5000; ++i) {
      TraceWriter::Batch batch(*writer);
      batch.InternString("name" + std::to_string(i % 300));
      batch.Write(Kernel(i));
    }
    if (write(ready[1], "x", 1) != 1) _exit(3);
    for (;;) pause();  // Never closes: only the periodic flush writes the tail.
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  // The child never closes: only the periodic flush can bring the tail to the file.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    size_t kernels = 0;
    for (const auto& p : ParsePacketFile(path).packets) kernels += p.packet.has_kernel() ? 1 : 0;
    if (kernels == 5000 || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(10ms);
  }
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));

  const testing::PacketStream stream = ParsePacketFile(path);
  EXPECT_FALSE(stream.malformed);
  EXPECT_FALSE(stream.truncated);
  ASSERT_FALSE(stream.packets.empty());
  EXPECT_TRUE(stream.packets[0].packet.has_header());
  EXPECT_FALSE(stream.packets.back().packet.has_end_of_trace());
  size_t kernels = 0;
  for (const auto& p : stream.packets) kernels += p.packet.has_kernel() ? 1 : 0;
  EXPECT_EQ(kernels, 5000u);
}

TEST(TraceWriterStats, PeriodicStatsAreCumulativeAndCountTheBytesBeforeThem) {
  TempDir dir;
  const std::string path = dir.File("stats.wst");
  TraceWriterOptions options = Options(path);
  options.stats_interval_ms = 20;
  std::string error;
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (int round = 0; round < 5; ++round) {
    for (uint32_t i = 0; i < 100; ++i) writer->Write(Kernel(i));
    std::this_thread::sleep_for(30ms);
  }
  writer->Close(EndReason::kExit, kBase + 1);
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  uint64_t previous_events = 0;
  int periodic = 0, final_count = 0;
  for (const auto& p : stream.packets) {
    if (!p.packet.has_stats()) continue;
    const pb::Stats& s = p.packet.stats();
    (s.final() ? final_count : periodic)++;
    EXPECT_EQ(StatValue(s, std::string(kStatBytesWritten)), p.offset);
    const uint64_t events = StatValue(s, std::string(kStatEventsWritten));
    EXPECT_GE(events, previous_events);
    previous_events = events;
  }
  EXPECT_GE(periodic, 3);
  EXPECT_EQ(final_count, 1);
  EXPECT_EQ(previous_events, 500u);
  EXPECT_TRUE(stream.packets[stream.packets.size() - 2].packet.stats().final());
}

// ---------------------------------------------------------------------------------------
// Lifecycle

TEST(TraceWriterLifecycle, CloseIsIdempotentAndLaterWritesAreCounted) {
  TempDir dir;
  const std::string path = dir.File("close.wst");
  std::string error;
  auto writer = TraceWriter::Open(Options(path), TestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  ASSERT_TRUE(writer->Write(Kernel(1)));
  writer->Close(EndReason::kDetach, kBase + 10);
  writer->Close(EndReason::kSignal, kBase + 20);
  EXPECT_FALSE(writer->Write(Kernel(2)));
  EXPECT_EQ(writer->InternString("late"), 0u);
  EXPECT_FALSE(writer->WriteNotice(Severity::kInfo, "x", "y", kBase));
  writer->Flush();
  EXPECT_EQ(writer->Counter(kStatDroppedAfterClose), 3u);
  EXPECT_TRUE(writer->healthy());
  writer.reset();
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_EQ(stream.packets.size(), 4u);
  EXPECT_EQ(stream.packets[3].packet.end_of_trace().reason(), pb::END_REASON_DETACH);
  EXPECT_EQ(stream.packets[3].packet.end_of_trace().timestamp_ns(), 10u);
}

TEST(TraceWriterLifecycle, DestructorClosesWithReasonExit) {
  TempDir dir;
  const std::string path = dir.File("dtor.wst");
  {
    std::string error;
    auto writer = TraceWriter::Open(Options(path), TestHeader(), &error);
    ASSERT_NE(writer, nullptr) << error;
    writer->Write(Kernel(1));
  }
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.packets.empty());
  EXPECT_EQ(stream.packets.back().packet.end_of_trace().reason(), pb::END_REASON_EXIT);
  EXPECT_TRUE(stream.packets[stream.packets.size() - 2].packet.stats().final());
}

TEST(TraceWriterThreads, ConcurrentWritersLoseNothing) {
  TempDir dir;
  const std::string path = dir.File("threads.wst");
  TraceWriterOptions options = Options(path);
  options.chunk_bytes = 64 * 1024;
  options.stats_interval_ms = 5;
  std::string error;
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
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
                                      .start_ns = kBase, .end_ns = kBase + 1,
                                      .thread_id = thread_id, .correlation_id = correlation});
          writer->Write(NvtxMarkRecord{.name_id = own, .timestamp_ns = kBase,
                                       .thread_id = thread_id});
        }
        if (i % 2 == 0) {
          writer->Write(Kernel(correlation, 0));
        } else {
          TraceWriter::Batch batch(*writer);
          batch.Write(Kernel(correlation, 0));
          writer->AddToCounter("test.per_thread", 1, Severity::kInfo);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  writer->Close(EndReason::kExit, kBase);
  EXPECT_EQ(writer->Counter(kStatDroppedBufferFull), 0u);

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
  auto writer = TraceWriter::Open(options, TestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (uint32_t i = 0; i < 1000; ++i) ASSERT_TRUE(writer->Write(Kernel(i)));

  // Another thread holds the writer's lock while the process forks, as a collector thread
  // inside a Batch might.
  std::atomic<bool> holding{false}, release{false};
  std::thread holder([&] {
    TraceWriter::Batch batch(*writer);
    batch.Write(Kernel(1000));
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
    failures += writer->Write(Kernel(5000)) ? 1 : 0;
    failures += writer->InternString("child") != 0 ? 1 : 0;
    failures += writer->healthy() ? 1 : 0;
    writer->AddToCounter("child.counter", 1, Severity::kInfo);
    writer->Flush();
    writer->Close(EndReason::kExit, kBase);
    writer.reset();
    _exit(failures == 0 ? 0 : 1);
  }
  release = true;
  holder.join();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);

  for (uint32_t i = 1001; i < 1100; ++i) ASSERT_TRUE(writer->Write(Kernel(i)));
  writer->Close(EndReason::kExit, kBase);
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

// ---------------------------------------------------------------------------------------
// Output names

class ExpandTest : public ::testing::Test {
 protected:
  bool Expand(std::string_view pattern, std::string* out, std::string* error) {
    return ExpandOutputPattern(
        pattern, 4242, "node1.cluster",
        [this](const char* name) -> const char* {
          auto it = env_.find(name);
          return it == env_.end() ? nullptr : it->second.c_str();
        },
        [this](const std::string& path) { return existing_.count(path) > 0; }, out, error);
  }
  std::string ExpandOk(std::string_view pattern) {
    std::string out, error;
    EXPECT_TRUE(Expand(pattern, &out, &error)) << pattern << ": " << error;
    EXPECT_EQ(error, "");
    return out;
  }
  std::string ExpandError(std::string_view pattern) {
    std::string out, error;
    EXPECT_FALSE(Expand(pattern, &out, &error)) << pattern << " gave " << out;
    EXPECT_THAT(error, StartsWith("warpscope: "));
    EXPECT_EQ(error.find('\n'), std::string::npos);
    return error;
  }
  std::map<std::string, std::string> env_ = {{"RANK", "3"}, {"EMPTY", ""}, {"JOB", "run.7"}};
  std::set<std::string> existing_;
};

TEST_F(ExpandTest, SubstitutesEscapes) {
  EXPECT_EQ(ExpandOk("trace"), "trace.wst");
  EXPECT_EQ(ExpandOk("trace.wst"), "trace.wst");
  EXPECT_EQ(ExpandOk("trace.pb"), "trace.pb");
  EXPECT_EQ(ExpandOk("trace_%p"), "trace_4242.wst");
  EXPECT_EQ(ExpandOk("/tmp/x/%h_%p.wst"), "/tmp/x/node1.cluster_4242.wst");
  EXPECT_EQ(ExpandOk("rank%q{RANK}"), "rank3.wst");
  EXPECT_EQ(ExpandOk("rank%q{UNSET}_x"), "rank_x.wst");
  EXPECT_EQ(ExpandOk("rank%q{EMPTY}"), "rank.wst");
  EXPECT_EQ(ExpandOk("100%%"), "100%.wst");
  EXPECT_EQ(ExpandOk("%%p"), "%p.wst");
  EXPECT_EQ(ExpandOk("%q{RANK}%q{RANK}"), "33.wst");
}

TEST_F(ExpandTest, ExtensionIsDecidedByTheLiteralLastComponent) {
  // Dots that come from substitutions or from directories do not count as an extension.
  EXPECT_EQ(ExpandOk("trace_%h"), "trace_node1.cluster.wst");
  EXPECT_EQ(ExpandOk("job_%q{JOB}"), "job_run.7.wst");
  EXPECT_EQ(ExpandOk("out.d/trace"), "out.d/trace.wst");
  EXPECT_EQ(ExpandOk(".hidden"), ".hidden.wst");
  EXPECT_EQ(ExpandOk("trace."), "trace.");
}

TEST_F(ExpandTest, SequenceNumberPicksTheFirstFreeName) {
  EXPECT_EQ(ExpandOk("run_%n"), "run_1.wst");
  existing_ = {"run_1.wst", "run_2.wst", "run_4.wst"};
  EXPECT_EQ(ExpandOk("run_%n"), "run_3.wst");
  // Several %n take the same number; the check is on the full name.
  existing_ = {"a1/b1.wst"};
  EXPECT_EQ(ExpandOk("a%n/b%n"), "a2/b2.wst");
  existing_ = {"r3_1.wst"};
  EXPECT_EQ(ExpandOk("r%q{RANK}_%n"), "r3_2.wst");
}

TEST_F(ExpandTest, RejectsMalformedPatterns) {
  EXPECT_THAT(ExpandError("trace_%x"), HasSubstr("unknown escape %x"));
  EXPECT_THAT(ExpandError("trace_%"), HasSubstr("lone '%'"));
  EXPECT_THAT(ExpandError("trace_%q"), HasSubstr("unterminated %q{"));
  EXPECT_THAT(ExpandError("trace_%qRANK"), HasSubstr("unterminated %q{"));
  EXPECT_THAT(ExpandError("trace_%q{RANK"), HasSubstr("unterminated %q{"));
  EXPECT_THAT(ExpandError("trace_%q{}"), HasSubstr("empty %q{}"));
}

TEST_F(ExpandTest, SequenceNumberRunsOut) {
  std::string out, error;
  const bool ok = ExpandOutputPattern(
      "t%n", 1, "h", [](const char*) -> const char* { return nullptr; },
      [](const std::string&) { return true; }, &out, &error);
  EXPECT_FALSE(ok);
  EXPECT_THAT(error, HasSubstr("%n found no free number"));
}

}  // namespace
}  // namespace warpscope
