// Tests of the flight recorder (TraceWriterOptions::ring_ns, TraceWriter::DumpRing): no file
// until a dump, what a dump holds and in which order, events let go by age and by the memory
// bound, and dump paths that must be refused.
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <vector>

#include "proto/writer/trace_writer.h"
#include "tests/writer/trace_file_checks.h"
#include "tests/writer/writer_test_support.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace writer_test;  // NOLINT(build/namespaces): the helpers all writer tests share.

// A ring on a synthetic clock that the test moves.
struct Ring {
  explicit Ring(const TempDir& dir, uint64_t ring_ns = 1'000'000, bool force = false) {
    TraceWriterOptions o = Options(dir.File("ring_%w.wst"));
    o.ring_ns = ring_ns;
    o.force_overwrite = force;
    o.ring_clock = [this] { return now.load(); };
    writer = OpenOrDie(o, FileTestHeader());
  }
  std::atomic<uint64_t> now{kFileTestBase + 1000};
  std::unique_ptr<TraceWriter> writer;
};

size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

std::vector<uint32_t> Correlations(const CheckedFile& f) {
  std::vector<uint32_t> out;
  for (const pb::TracePacket* p : f.kernels) out.push_back(p->kernel().correlation_id());
  return out;
}

std::vector<uint32_t> Range(uint32_t first, uint32_t last) {
  std::vector<uint32_t> out;
  for (uint32_t i = first; i <= last; ++i) out.push_back(i);
  return out;
}

TEST(TraceWriterRing, MakesNoFileUntilADump) {
  TempDir dir;
  {
    Ring ring(dir);
    ASSERT_NE(ring.writer->InternString("k"), 0u);
    for (uint32_t i = 1; i <= 1000; ++i) ASSERT_TRUE(ring.writer->Write(FileTestKernel(i)));
    ring.writer->Flush();
    EXPECT_EQ(FilesIn(dir.path()), 0u);
    ring.writer->Close(EndReason::kExit, kFileTestBase + 5000);
    EXPECT_EQ(FilesIn(dir.path()), 0u);
  }
  EXPECT_EQ(FilesIn(dir.path()), 0u);
}

TEST(TraceWriterRing, ADumpHoldsDefinitionsTheWindowAndItsEnd) {
  TempDir dir;
  Ring ring(dir);
  TraceWriter& w = *ring.writer;
  const uint64_t name = w.InternString("gemm");
  const uint64_t thread = w.InternThread(5, 6, "main");
  const uint64_t api = w.InternString("cudaLaunchKernel");
  for (uint32_t i = 1; i <= 100; ++i) {
    ASSERT_TRUE(w.Write(ApiCallRecord{.name_id = api, .start_ns = kFileTestBase + i,
                                      .end_ns = kFileTestBase + i + 1, .thread_id = thread,
                                      .correlation_id = i}));
    ASSERT_TRUE(w.Write(FileTestKernel(i, name)));
  }
  const std::string path = dir.File("dump1.wst");
  std::string error;
  ASSERT_TRUE(w.DumpRing(path, CaptureTrigger::kCrash, 7, kFileTestBase + 9000, &error)) << error;

  const CheckedFile f = CheckTraceFile(path);
  EXPECT_EQ(Correlations(f), Range(1, 100));
  EXPECT_EQ(f.end->end_of_trace().reason(), pb::END_REASON_DUMP);
  EXPECT_EQ(f.end->end_of_trace().timestamp_ns(), 9000u);
  // Header, the definitions, the window's begin, the events, its end, Stats, EndOfTrace.
  const auto& packets = f.stream.packets;
  ASSERT_GE(packets.size(), 8u);
  EXPECT_TRUE(packets[1].packet.has_interned_string());
  EXPECT_TRUE(packets[2].packet.has_thread());
  EXPECT_TRUE(packets[3].packet.has_interned_string());
  const pb::CaptureWindowEdge& begin = packets[4].packet.capture_window();
  EXPECT_TRUE(begin.begin());
  EXPECT_EQ(begin.window_id(), 7u);
  EXPECT_EQ(begin.trigger(), pb::CAPTURE_TRIGGER_FLIGHT_RECORDER);
  EXPECT_EQ(begin.timestamp_ns(), 1000u);  // The ring clock when the first chunk was taken.
  EXPECT_TRUE(packets[5].packet.has_api_call());
  const pb::CaptureWindowEdge& end = packets[packets.size() - 3].packet.capture_window();
  EXPECT_FALSE(end.begin());
  EXPECT_EQ(end.window_id(), 7u);
  EXPECT_EQ(end.trigger(), pb::CAPTURE_TRIGGER_CRASH);
  EXPECT_EQ(end.timestamp_ns(), 9000u);
  EXPECT_TRUE(packets[packets.size() - 2].packet.stats().final());
  EXPECT_EQ(StatValue(*f.final_stats, "writer.ring_dumps"), 1u);
  EXPECT_EQ(w.Counter("writer.ring_dumps"), 1u);
  EXPECT_GT(w.Counter("writer.ring_held_high_water_bytes"), 0u);

  // The next dump holds only what came after, with every definition again.
  ring.now = kFileTestBase + 2000;
  for (uint32_t i = 101; i <= 150; ++i) ASSERT_TRUE(w.Write(FileTestKernel(i, name)));
  const std::string path2 = dir.File("dump2.wst");
  ASSERT_TRUE(w.DumpRing(path2, CaptureTrigger::kSlowStep, 8, kFileTestBase + 9500, &error))
      << error;
  const CheckedFile f2 = CheckTraceFile(path2);
  EXPECT_EQ(Correlations(f2), Range(101, 150));
  EXPECT_EQ(f2.strings.at(f2.kernels[0]->kernel().name_id()), "gemm");
  EXPECT_EQ(f2.stream.packets[4].packet.capture_window().timestamp_ns(), 2000u);
  EXPECT_EQ(StatValue(*f2.final_stats, "writer.ring_dumps"), 2u);
  w.Close(EndReason::kExit, kFileTestBase + 10000);
  EXPECT_EQ(FilesIn(dir.path()), 2u);
}

// Chunks whose last commit is older than ring_ns are let go (at the flush interval, or on
// Flush); that is not eviction.
TEST(TraceWriterRing, LetsGoOfEventsOlderThanTheRing) {
  TempDir dir;
  Ring ring(dir, /*ring_ns=*/1000);
  TraceWriter& w = *ring.writer;
  for (uint32_t i = 1; i <= 10; ++i) ASSERT_TRUE(w.Write(FileTestKernel(i)));
  w.Flush();  // Hands the chunk to the ring at now.
  ring.now += 500;
  for (uint32_t i = 11; i <= 20; ++i) ASSERT_TRUE(w.Write(FileTestKernel(i)));
  w.Flush();
  ring.now += 600;  // The first chunk is now 1100 ns old, the second 600.
  w.Flush();
  for (uint32_t i = 21; i <= 30; ++i) ASSERT_TRUE(w.Write(FileTestKernel(i)));
  std::string error;
  const std::string path = dir.File("aged.wst");
  ASSERT_TRUE(w.DumpRing(path, CaptureTrigger::kControl, 1, ring.now, &error)) << error;
  EXPECT_EQ(Correlations(CheckTraceFile(path)), Range(11, 30));
  EXPECT_EQ(w.Counter("writer.ring_evicted_events"), 0u);
}

// When the memory bound is reached the oldest chunk is reused: nothing is refused or counted
// as dropped, the dump holds the newest events without a gap, and evicted + held = written.
TEST(TraceWriterRing, ReusesTheOldestChunkWhenMemoryRunsOut) {
  TempDir dir;
  TraceWriterOptions o = Options(dir.File("ring.wst"));
  o.ring_ns = uint64_t{1} << 62;  // Nothing ages out.
  o.chunk_bytes = kMinChunkBytes;
  o.max_buffered_bytes = 4 * kMinChunkBytes;
  auto w = OpenOrDie(o, FileTestHeader());
  const uint64_t name = w->InternString("kernel");  // Kept out of the ring: never evicted.
  constexpr uint32_t kWritten = 5000;
  for (uint32_t i = 1; i <= kWritten; ++i) ASSERT_TRUE(w->Write(FileTestKernel(i, name)));
  EXPECT_EQ(w->Counter("writer.events_dropped.buffer_full"), 0u);
  const uint64_t evicted = w->Counter("writer.ring_evicted_events");
  EXPECT_GT(evicted, 0u);
  EXPECT_LE(w->Counter("writer.ring_held_high_water_bytes"), 4 * kMinChunkBytes);
  std::string error;
  const std::string path = dir.File("dump.wst");
  ASSERT_TRUE(w->DumpRing(path, CaptureTrigger::kLimit, 3, kFileTestBase + 1, &error)) << error;
  const CheckedFile f = CheckTraceFile(path);
  ASSERT_FALSE(f.kernels.empty());
  EXPECT_EQ(Correlations(f), Range(static_cast<uint32_t>(evicted) + 1, kWritten));
  EXPECT_EQ(f.strings.at(f.kernels[0]->kernel().name_id()), "kernel");
  EXPECT_EQ(StatValue(*f.final_stats, "writer.ring_evicted_events"), evicted);
}

// A link at the dump's name is never written through: an existing file without
// force_overwrite, refused as a link with it.
TEST(TraceWriterRing, RefusesADumpThroughASymbolicLinkAndKeepsTheEvents) {
  TempDir dir;
  Ring ring(dir, 1'000'000, /*force=*/true);
  TraceWriter& w = *ring.writer;
  for (uint32_t i = 1; i <= 20; ++i) ASSERT_TRUE(w.Write(FileTestKernel(i)));
  const std::string victim = dir.File("victim.txt");
  const std::string link = dir.File("dump.wst");
  { std::ofstream(victim) << "precious"; }
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  std::string error;
  EXPECT_FALSE(w.DumpRing(link, CaptureTrigger::kCrash, 1, kFileTestBase + 50, &error));
  EXPECT_THAT(error, StartsWith("warpscope: "));
  EXPECT_THAT(error, HasSubstr("symbolic link"));
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_EQ(ReadFileBytes(victim), "precious");
  {
    Ring plain(dir);
    ASSERT_TRUE(plain.writer->Write(FileTestKernel(1)));
    EXPECT_FALSE(plain.writer->DumpRing(link, CaptureTrigger::kCrash, 1, kFileTestBase, &error));
    EXPECT_THAT(error, HasSubstr(link));
    EXPECT_EQ(ReadFileBytes(victim), "precious");
  }

  const std::string bad = dir.File("no/such/folder/dump.wst");
  EXPECT_FALSE(w.DumpRing(bad, CaptureTrigger::kCrash, 1, kFileTestBase + 50, &error));
  EXPECT_THAT(error, StartsWith("warpscope: "));
  EXPECT_THAT(error, HasSubstr(bad));
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_EQ(w.Counter("writer.ring_dumps"), 0u);

  // Nothing was let go: a dump to a good name holds everything.
  const std::string good = dir.File("good.wst");
  ASSERT_TRUE(w.DumpRing(good, CaptureTrigger::kCrash, 1, kFileTestBase + 50, &error)) << error;
  EXPECT_EQ(Correlations(CheckTraceFile(good)), Range(1, 20));
}

TEST(TraceWriterRing, DumpAndNextFileNeedTheirMode) {
  TempDir dir;
  Ring ring(dir);
  std::string error;
  EXPECT_FALSE(ring.writer->StartNextFile(dir.File("next.wst"), kFileTestBase, &error));
  EXPECT_THAT(error, StartsWith("warpscope: "));
  auto plain = OpenOrDie(Options(dir.File("plain.wst")), FileTestHeader());
  EXPECT_FALSE(plain->DumpRing(dir.File("dump.wst"), CaptureTrigger::kCrash, 1, 0, &error));
  EXPECT_THAT(error, HasSubstr("flight-recorder"));
  ring.writer->Close(EndReason::kExit, kFileTestBase);
  EXPECT_FALSE(ring.writer->DumpRing(dir.File("late.wst"), CaptureTrigger::kCrash, 1, 0, &error));
  EXPECT_THAT(error, HasSubstr("closed"));
}

// Writers on other threads while dumps are written: every event is in exactly one dump or
// was evicted, and each thread's events keep their order.
TEST(TraceWriterRing, WritersGoOnWhileADumpIsWritten) {
  TempDir dir;
  Ring ring(dir, uint64_t{1} << 62);
  TraceWriter& w = *ring.writer;
  KernelWriters writers(w, /*threads=*/3, /*per_thread=*/20000);
  std::string error;
  for (const std::string name : {"0", "1", "2"}) {
    ASSERT_TRUE(w.DumpRing(dir.File(name + ".wst"), CaptureTrigger::kControl, 1,
                           kFileTestBase + 1, &error))
        << error;
  }
  writers.Join();
  ASSERT_TRUE(w.DumpRing(dir.File("last.wst"), CaptureTrigger::kControl, 9, kFileTestBase + 1,
                         &error))
      << error;
  for (const std::string name : {"0", "1", "2", "last"}) {
    writers.ExpectInOrder(CheckTraceFile(dir.File(name + ".wst")));
  }
  EXPECT_EQ(writers.refused(), w.Counter("writer.events_dropped.buffer_full"));
  EXPECT_EQ(writers.found() + writers.refused() + w.Counter("writer.ring_evicted_events"),
            writers.written());
}

}  // namespace
}  // namespace warpscope

namespace warpscope {
namespace {

// The out-of-memory dump: the live blocks older than the ring's oldest event are written back
// with their stacks (between the definitions and the begin edge); a block whose own ALLOCATE
// is still held, and a stack of no block written, are not written twice.
TEST(TraceWriterRing, ADumpWritesTheLiveBlocksTheRingLetGo) {
  TempDir dir;
  Ring ring(dir);
  TraceWriter& w = *ring.writer;
  const uint64_t name = w.InternString("cudaMalloc");
  const MemoryRecord old_block{.operation = MemoryOperation::kAllocate,
                               .memory_kind = MemoryKind::kDevice,
                               .address = 0x1000,
                               .bytes = 1 << 30,
                               .timestamp_ns = kFileTestBase + 10,
                               .device_id = 2,
                               .correlation_id = 11};
  MemoryRecord held_block = old_block;
  held_block.address = 0x2000;
  held_block.timestamp_ns = kFileTestBase + 5000;  // after the ring's oldest event (1000)
  held_block.correlation_id = 12;
  ASSERT_TRUE(w.Write(held_block));
  const MemoryRecord failed{.operation = MemoryOperation::kAllocateFailed,
                            .bytes = 1ull << 40,
                            .timestamp_ns = kFileTestBase + 6000,
                            .correlation_id = 13,
                            .result = 2};
  ASSERT_TRUE(w.Write(failed));
  const std::vector<MemoryRecord> blocks = {old_block, held_block};
  const std::vector<ApiStackRecord> stacks = {
      {.correlation_id = 11, .stack_id = 77, .timestamp_ns = kFileTestBase + 9, .name_id = name},
      {.correlation_id = 12, .stack_id = 78, .timestamp_ns = kFileTestBase + 4999}};
  const std::string path = dir.File("oom.wst");
  std::string error;
  ASSERT_TRUE(
      w.DumpRing(path, CaptureTrigger::kError, 1, kFileTestBase + 9000, &error, {blocks, stacks}))
      << error;
  const CheckedFile f = CheckTraceFile(path);
  std::vector<const pb::TracePacket*> memory, api_stacks;
  size_t begin_at = 0, first_memory_at = 0;
  const auto& packets = f.stream.packets;
  for (size_t i = 0; i < packets.size(); ++i) {
    const pb::TracePacket& p = packets[i].packet;
    if (p.has_memory()) {
      if (memory.empty()) first_memory_at = i;
      memory.push_back(&p);
    }
    if (p.has_api_stack()) api_stacks.push_back(&p);
    if (p.has_capture_window() && p.capture_window().begin()) begin_at = i;
  }
  ASSERT_EQ(memory.size(), 3u);  // the old block written back, then the ring's two
  EXPECT_LT(first_memory_at, begin_at);
  const pb::MemoryEvent& back = memory[0]->memory();
  EXPECT_EQ(back.operation(), pb::MEMORY_OPERATION_ALLOCATE);
  EXPECT_EQ(back.address(), 0x1000u);
  EXPECT_EQ(back.bytes(), 1u << 30);
  EXPECT_EQ(back.timestamp_ns(), 10u);  // its own time
  EXPECT_EQ(back.device_id(), 2u);
  EXPECT_EQ(memory[1]->memory().address(), 0x2000u);
  EXPECT_EQ(memory[2]->memory().operation(), pb::MEMORY_OPERATION_ALLOCATE_FAILED);
  ASSERT_EQ(api_stacks.size(), 1u);
  EXPECT_EQ(api_stacks[0]->api_stack().correlation_id(), 11u);
  EXPECT_EQ(api_stacks[0]->api_stack().stack_id(), 77u);
  EXPECT_EQ(f.strings.at(api_stacks[0]->api_stack().name_id()), "cudaMalloc");
  w.Close(EndReason::kExit, kFileTestBase + 10000);
}

}  // namespace
}  // namespace warpscope
