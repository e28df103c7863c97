// Tests that watch the TraceWriter's write(2) calls through an interposed `write` defined in
// this executable: every write ends on a packet boundary, EINTR and short writes are retried,
// and injected errors (EIO, EBADF) stop writing with one line instead of hurting the program;
// an interposed `fallocate` plays a full disk.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"
#include "tests/writer/packet_stream.h"
#include "tests/writer/writer_test_support.h"

namespace {

// What the interposed write does to descriptors >= 3 while armed.
struct WriteSpy {
  std::atomic<bool> armed{false};
  std::atomic<int> mode{0};           // See Mode.
  std::atomic<uint64_t> fail_after{0};  // kFailAfter: bytes let through before failing.
  std::atomic<int> fail_errno{EIO};
  std::atomic<uint64_t> passed{0};
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> eintr_returned{0};
  std::atomic<uint64_t> short_returned{0};
  // Sizes the kernel accepted, in order (the writer thread is the only caller).
  std::array<std::atomic<uint64_t>, 1 << 16> sizes{};
  std::atomic<size_t> count{0};
  // fallocate: ranges ending past this offset fail with ENOSPC while armed (0: no limit).
  std::atomic<uint64_t> space_limit{0};
  std::atomic<uint64_t> fallocate_calls{0};
};
enum Mode { kPassThrough = 0, kEintrAndShort = 1, kFailAfter = 2 };
WriteSpy g_spy;

}  // namespace

extern "C" ssize_t write(int fd, const void* buf, size_t size) {
  auto real = [&](size_t n) { return static_cast<ssize_t>(syscall(SYS_write, fd, buf, n)); };
  if (fd < 3 || !g_spy.armed.load()) return real(size);
  const uint64_t call = g_spy.calls.fetch_add(1);
  switch (g_spy.mode.load()) {
    case kEintrAndShort:
      if (call % 3 == 0) {
        g_spy.eintr_returned.fetch_add(1);
        errno = EINTR;
        return -1;
      }
      if (call % 3 == 1 && size > 1) {
        g_spy.short_returned.fetch_add(1);
        size = size / 2;
      }
      break;
    case kFailAfter:
      if (g_spy.passed.load() >= g_spy.fail_after.load()) {
        errno = g_spy.fail_errno.load();
        return -1;
      }
      break;
    default:
      break;
  }
  const ssize_t n = real(size);
  if (n > 0) {
    g_spy.passed.fetch_add(static_cast<uint64_t>(n));
    const size_t i = g_spy.count.fetch_add(1);
    if (i < g_spy.sizes.size()) g_spy.sizes[i].store(static_cast<uint64_t>(n));
  }
  return n;
}

extern "C" int fallocate(int fd, int mode, off_t offset, off_t len) {
  if (fd >= 3 && g_spy.armed.load()) {
    g_spy.fallocate_calls.fetch_add(1);
    const uint64_t limit = g_spy.space_limit.load();
    if (limit != 0 && (mode & FALLOC_FL_PUNCH_HOLE) == 0 &&
        static_cast<uint64_t>(offset + len) > limit) {
      errno = ENOSPC;
      return -1;
    }
  }
  return static_cast<int>(syscall(SYS_fallocate, fd, mode, offset, len));
}

namespace warpscope {
namespace {

using ::testing::StartsWith;
using testing::ParsePacketFile;
using testing::TempDir;
using namespace std::chrono_literals;

constexpr uint64_t kBase = 1000;

class SpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A fresh spy for each test: disarmed, no writer thread is running.
    std::destroy_at(&g_spy);
    std::construct_at(&g_spy);
    g_spy.armed = true;
  }
  void TearDown() override { g_spy.armed = false; }

  std::unique_ptr<TraceWriter> Open(const std::string& path, uint32_t flush_ms = 10) {
    TraceWriterOptions options;
    options.path = path;
    options.chunk_bytes = kMinChunkBytes;
    options.flush_interval_ms = flush_ms;
    options.stats_interval_ms = 7;
    HeaderRecord header;
    header.time_base_ns = kBase;
    header.producer = "spy";
    return writer_test::OpenOrDie(options, header);
  }

  // Writes events in bursts with pauses, so that chunk hand-overs, periodic flushes of partial
  // chunks and periodic stats all happen.
  static void WriteBursts(TraceWriter& writer, uint32_t bursts) {
    uint32_t correlation = 0;
    for (uint32_t b = 0; b < bursts; ++b) {
      for (uint32_t i = 0; i < 200 + 37 * b; ++i, ++correlation) {
        TraceWriter::Batch batch(writer);
        const uint64_t name = batch.InternString("kernel_" + std::string(correlation % 97, 'k'));
        batch.Write(KernelRecord{.name_id = name, .start_ns = kBase + correlation,
                                 .end_ns = kBase + correlation + 5,
                                 .correlation_id = correlation});
      }
      std::this_thread::sleep_for(3ms);
    }
  }

  // Writes 30 bursts into `path` while the spy makes writing fail, lets `stopped` look at the
  // writer (which must have stopped), closes it and returns what it printed on stderr.
  std::string WriteUntilStopped(const std::string& path,
                                const std::function<void(TraceWriter&)>& stopped = {}) {
    ::testing::internal::CaptureStderr();
    auto writer = Open(path);
    if (writer != nullptr) {
      WriteBursts(*writer, 30);
      writer->Flush();
      EXPECT_FALSE(writer->healthy());
      if (stopped) stopped(*writer);
      writer->Close(EndReason::kExit, kBase);
    }
    g_spy.armed = false;
    return ::testing::internal::GetCapturedStderr();
  }
};

TEST_F(SpyTest, EveryWriteEndsOnAPacketBoundary) {
  TempDir dir;
  const std::string path = dir.File("boundaries.wst");
  auto writer = Open(path);
  ASSERT_NE(writer, nullptr);
  WriteBursts(*writer, 40);
  writer->Close(EndReason::kExit, kBase);
  g_spy.armed = false;

  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  std::set<uint64_t> boundaries = {0};
  for (const auto& p : stream.packets) boundaries.insert(p.offset + p.size);
  const size_t writes = g_spy.count.load();
  ASSERT_LT(writes, g_spy.sizes.size());
  EXPECT_GT(writes, 40u);  // Partial flushes happened, not one write at Close.
  uint64_t offset = 0;
  size_t partial_chunk_writes = 0;
  for (size_t i = 0; i < writes; ++i) {
    const uint64_t size = g_spy.sizes[i].load();
    EXPECT_LE(size, kMinChunkBytes);
    partial_chunk_writes += size < kMinChunkBytes - 200 ? 1 : 0;
    offset += size;
    EXPECT_TRUE(boundaries.count(offset)) << "write " << i << " ends inside a packet at " << offset;
  }
  EXPECT_EQ(offset, stream.consumed);
  EXPECT_GT(partial_chunk_writes, 10u);
}

TEST_F(SpyTest, InterruptedAndShortWritesAreRetried) {
  TempDir dir;
  const std::string path = dir.File("eintr.wst");
  g_spy.mode = kEintrAndShort;
  ::testing::internal::CaptureStderr();
  auto writer = Open(path);
  ASSERT_NE(writer, nullptr);
  WriteBursts(*writer, 20);
  writer->Close(EndReason::kExit, kBase);
  g_spy.armed = false;
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(writer->healthy());
  EXPECT_GT(g_spy.eintr_returned.load(), 10u);
  EXPECT_GT(g_spy.short_returned.load(), 10u);

  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  uint32_t next = 0;
  for (const auto& p : stream.packets) {
    if (p.packet.has_kernel()) {
      EXPECT_EQ(p.packet.kernel().correlation_id(), next++);
    }
  }
  EXPECT_EQ(next, 20 * 200 + 37 * (19 * 20 / 2));
  EXPECT_TRUE(stream.packets.back().packet.has_end_of_trace());
}

class SpyErrorTest : public SpyTest, public ::testing::WithParamInterface<int> {};

TEST_P(SpyErrorTest, ErrorStopsWritingWithOneLine) {
  TempDir dir;
  const std::string path = dir.File("error.wst");
  g_spy.mode = kFailAfter;
  g_spy.fail_after = 20000;
  g_spy.fail_errno = GetParam();
  const std::string err = WriteUntilStopped(path, [](TraceWriter& writer) {
    EXPECT_FALSE(writer.Write(KernelRecord{}));
    EXPECT_GT(writer.Counter(stats::kWriterDroppedWriteError.name), 0u);
  });
  if (GetParam() == ENOSPC) {
    EXPECT_THAT(err, StartsWith("warpscope: no space left for trace " + path +
                                " (No space left on device) after "));
  } else {
    EXPECT_EQ(err, "warpscope: cannot write trace " + path + ": " + strerror(GetParam()) +
                       "; tracing stopped, the program continues\n");
  }
  const testing::PacketStream stream = ParsePacketFile(path);
  EXPECT_FALSE(stream.malformed);
  EXPECT_FALSE(stream.truncated);  // Failed writes wrote nothing, so the cut is clean.
  EXPECT_GE(stream.consumed, 20000u - kMinChunkBytes);
  EXPECT_LE(stream.consumed, 20000u + kMinChunkBytes);
}

// The blocks for each write and a tail reserve are allocated before writing: when that
// allocation fails the disk is full, nothing more is written, and Close ends the trace in the
// reserve with the final statistics (which count what was lost) and EndOfTrace.
TEST_F(SpyTest, FullDiskEndsTheTraceWithItsStatisticsInTheReserve) {
  TempDir dir;
  const std::string path = dir.File("full.wst");
  g_spy.space_limit = 300 << 10;  // 300 KiB: the 256 KiB reserve leaves ~44 KiB of events
  const std::string err = WriteUntilStopped(path);
  EXPECT_THAT(err, StartsWith("warpscope: no space left for trace " + path +
                              " (No space left on device) after "));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
  EXPECT_GT(g_spy.fallocate_calls.load(), 2u);

  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  EXPECT_LE(stream.consumed, 300u << 10);
  ASSERT_GE(stream.packets.size(), 3u);
  EXPECT_TRUE(stream.packets.front().packet.has_header());
  ASSERT_TRUE(stream.packets.back().packet.has_end_of_trace());
  const auto& stats = stream.packets[stream.packets.size() - 2].packet;
  ASSERT_TRUE(stats.has_stats());
  EXPECT_TRUE(stats.stats().final());
  std::map<std::string, uint64_t> counters;
  for (const auto& c : stats.stats().counters()) counters[c.name()] = c.value();
  EXPECT_GT(counters[std::string(stats::kWriterDroppedWriteError.name)], 0u);
  EXPECT_EQ(counters[std::string(stats::kWriterWriteErrors.name)], 1u);
  // The Stats packet says how many bytes precede it: exactly what the file holds before it.
  EXPECT_EQ(counters[std::string(stats::kWriterBytesWritten.name)],
            stream.packets[stream.packets.size() - 2].offset);
}

INSTANTIATE_TEST_SUITE_P(Errnos, SpyErrorTest, ::testing::Values(EIO, EBADF, ENOSPC, EPIPE));

}  // namespace
}  // namespace warpscope
