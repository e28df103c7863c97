// Tests of the TraceWriter's file behaviour: open errors, write errors, periodic and explicit
// flush, periodic stats, the lifecycle, a trace without work removed at its end, and a taken
// name left for another. Bounded buffering, threads and fork are in
// trace_writer_buffering_test.cc; output names in output_name_test.cc.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"
#include "tests/writer/writer_test_support.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using namespace writer_test;  // NOLINT(build/namespaces): the helpers all writer tests share.
using namespace std::chrono_literals;

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
  auto writer = TraceWriter::Open(Options(path), FileTestHeader(), &error);
  EXPECT_EQ(writer, nullptr);
  EXPECT_THAT(error, StartsWith("warpscope: "));
  EXPECT_THAT(error, HasSubstr(path));
  EXPECT_THAT(error, HasSubstr("-f/--force-overwrite"));
  EXPECT_THAT(error, HasSubstr("WARPSCOPE_FORCE_OVERWRITE=1"));
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_EQ(ReadFileBytes(path), "keep me");

  TraceWriterOptions forced = Options(path);
  forced.force_overwrite = true;
  writer = TraceWriter::Open(forced, FileTestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->Close(EndReason::kExit, kFileTestBase);
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  ASSERT_EQ(stream.packets.size(), 3u);  // Header, final stats, end: the old bytes are gone.
  EXPECT_TRUE(stream.packets[0].packet.has_header());
}

// A symbolic link at the trace's name (planted in a shared directory) is never written
// through: without -f it is an existing file; with -f it is refused in one line, and what it
// points at keeps its bytes.
TEST(TraceWriterOpen, NeverWritesThroughASymbolicLink) {
  TempDir dir;
  const std::string victim = dir.File("victim.txt");
  const std::string link = dir.File("warpscope_1234.wst");
  { std::ofstream(victim) << "precious"; }
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  for (bool force : {false, true}) {
    TraceWriterOptions options = Options(link);
    options.force_overwrite = force;
    std::string error;
    EXPECT_EQ(TraceWriter::Open(options, FileTestHeader(), &error), nullptr) << force;
    EXPECT_THAT(error, StartsWith("warpscope: "));
    EXPECT_THAT(error, HasSubstr(link));
    EXPECT_EQ(error.find('\n'), std::string::npos);
    if (force) {
      EXPECT_THAT(error, HasSubstr("is a symbolic link"));
    }
    EXPECT_EQ(ReadFileBytes(victim), "precious");
  }
  // A dangling link is not followed to create its target either.
  const std::string dangling = dir.File("dangling.wst");
  ASSERT_EQ(::symlink(dir.File("created_through_link").c_str(), dangling.c_str()), 0);
  TraceWriterOptions forced = Options(dangling);
  forced.force_overwrite = true;
  std::string error;
  EXPECT_EQ(TraceWriter::Open(forced, FileTestHeader(), &error), nullptr);
  struct stat st {};
  EXPECT_NE(::stat(dir.File("created_through_link").c_str(), &st), 0);
}

TEST(TraceWriterOpen, ReportsAnUnusablePathInOneLine) {
  TempDir dir;
  for (const std::string& path : {dir.File("no/such/dir/trace.wst"), dir.path()}) {
    std::string error;
    auto writer = TraceWriter::Open(Options(path), FileTestHeader(), &error);
    EXPECT_EQ(writer, nullptr) << path;
    EXPECT_THAT(error, StartsWith("warpscope: cannot create trace " + path + ": "));
    EXPECT_THAT(error, Not(HasSubstr("force")));  // Forcing would not help.
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  {
    TraceWriterOptions forced = Options(dir.path());
    forced.force_overwrite = true;
    std::string error;
    EXPECT_EQ(TraceWriter::Open(forced, FileTestHeader(), &error), nullptr);
    EXPECT_THAT(error, HasSubstr("is a directory"));
  }
  std::string error;
  EXPECT_EQ(TraceWriter::Open(Options(""), FileTestHeader(), &error), nullptr);
  EXPECT_THAT(error, StartsWith("warpscope: "));
}

TEST(TraceWriterOpen, HeaderLargerThanAChunkGrowsTheChunk) {
  TempDir dir;
  const std::string path = dir.File("bigheader.wst");
  HeaderRecord header = FileTestHeader();
  for (int i = 0; i < 500; ++i) header.command_line.push_back("--arg" + std::to_string(i) + "=" + std::string(40, 'v'));
  TraceWriterOptions options = Options(path);
  options.chunk_bytes = kMinChunkBytes;
  std::string error;
  auto writer = TraceWriter::Open(options, header, &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->Close(EndReason::kExit, kFileTestBase);
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
  auto writer = TraceWriter::Open(options, FileTestHeader(), &error);
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
  auto writer = TraceWriter::Open(options, FileTestHeader(), &error);
  uint32_t written = 0;
  if (writer != nullptr) {
    for (uint32_t i = 0; i < 20000; ++i) written += writer->Write(FileTestKernel(i)) ? 1 : 0;
    writer->Flush();
    EXPECT_FALSE(writer->healthy());
    writer->Close(EndReason::kExit, kFileTestBase);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  setrlimit(RLIMIT_FSIZE, &saved);
  sigaction(SIGXFSZ, &saved_action, nullptr);
  ASSERT_NE(writer, nullptr) << error;

  EXPECT_EQ(CountLines(err), 1u) << err;
  EXPECT_THAT(err, StartsWith("warpscope: no space left for trace " + path + " (File too large)"));
  EXPECT_GT(writer->Counter(stats::kWriterDroppedWriteError.name), 0u);
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
    if (c.name() == stats::kWriterDroppedWriteError.name) dropped_in_file = c.value();
  }
  EXPECT_GT(dropped_in_file, 0u);
  size_t kernels = 0;
  for (const auto& p : stream.packets) kernels += p.packet.has_kernel() ? 1 : 0;
  EXPECT_GT(kernels, 1000u);
  EXPECT_LT(kernels, written);
}

// ---------------------------------------------------------------------------------------
// Flushing

TEST(TraceWriterFlush, PeriodicFlushMakesDataVisibleWithoutClose) {
  TempDir dir;
  const std::string path = dir.File("periodic.wst");
  TraceWriterOptions options = Options(path);
  options.flush_interval_ms = 20;
  std::string error;
  auto writer = TraceWriter::Open(options, FileTestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (uint32_t i = 0; i < 100; ++i) ASSERT_TRUE(writer->Write(FileTestKernel(i)));
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
  writer->Close(EndReason::kExit, kFileTestBase);
}

TEST(TraceWriterFlush, FlushWaitsUntilEverythingIsInTheFile) {
  TempDir dir;
  const std::string path = dir.File("flush.wst");
  TraceWriterOptions options = Options(path);
  options.flush_interval_ms = 1000;
  options.chunk_bytes = kMinChunkBytes;
  std::string error;
  auto writer = TraceWriter::Open(options, FileTestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (int round = 1; round <= 3; ++round) {
    for (uint32_t i = 0; i < 1000; ++i) ASSERT_TRUE(writer->Write(FileTestKernel(i)));
    writer->Flush();
    const testing::PacketStream stream = ParsePacketFile(path);
    ASSERT_FALSE(stream.truncated);
    size_t kernels = 0;
    for (const auto& p : stream.packets) kernels += p.packet.has_kernel() ? 1 : 0;
    EXPECT_EQ(kernels, 1000u * round);
    EXPECT_EQ(writer->Counter(stats::kWriterBytesWritten.name), ReadFileBytes(path).size());
  }
  writer->Close(EndReason::kExit, kFileTestBase);
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
    auto writer = TraceWriter::Open(options, FileTestHeader(), &error);
    if (writer == nullptr) _exit(2);
    for (uint32_t i = 0; i < 5000; ++i) {
      TraceWriter::Batch batch(*writer);
      batch.InternString("name" + std::to_string(i % 300));
      batch.Write(FileTestKernel(i));
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
  auto writer = TraceWriter::Open(options, FileTestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (int round = 0; round < 5; ++round) {
    for (uint32_t i = 0; i < 100; ++i) writer->Write(FileTestKernel(i));
    std::this_thread::sleep_for(30ms);
  }
  writer->Close(EndReason::kExit, kFileTestBase + 1);
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  uint64_t previous_events = 0;
  int periodic = 0, final_count = 0;
  for (const auto& p : stream.packets) {
    if (!p.packet.has_stats()) continue;
    const pb::Stats& s = p.packet.stats();
    (s.final() ? final_count : periodic)++;
    EXPECT_EQ(StatValue(s, std::string(stats::kWriterBytesWritten.name)), p.offset);
    const uint64_t events = StatValue(s, std::string(stats::kWriterEventsWritten.name));
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
  auto writer = TraceWriter::Open(Options(path), FileTestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  ASSERT_TRUE(writer->Write(FileTestKernel(1)));
  writer->Close(EndReason::kDetach, kFileTestBase + 10);
  writer->Close(EndReason::kSignal, kFileTestBase + 20);
  EXPECT_FALSE(writer->Write(FileTestKernel(2)));
  EXPECT_EQ(writer->InternString("late"), 0u);
  EXPECT_FALSE(writer->WriteNotice(Severity::kInfo, "x", "y", kFileTestBase));
  writer->Flush();
  EXPECT_EQ(writer->Counter(stats::kWriterDroppedAfterClose.name), 3u);
  EXPECT_TRUE(writer->healthy());
  writer.reset();
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_EQ(stream.packets.size(), 4u);
  EXPECT_EQ(stream.packets[3].packet.end_of_trace().reason(), pb::END_REASON_DETACH);
  EXPECT_EQ(stream.packets[3].packet.end_of_trace().timestamp_ns(), 10u);
}

// A crash's close keeps the signal beside the reason, and keeps a trace that holds no work.
TEST(TraceWriterLifecycle, CrashCloseWritesTheSignal) {
  TempDir dir;
  const std::string path = dir.File("crash.wst");
  std::string error;
  TraceWriterOptions options = Options(path);
  options.remove_if_no_work = true;
  auto writer = TraceWriter::Open(options, FileTestHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->Close(EndReason::kCrash, kFileTestBase + 30, /*signal=*/6);
  writer.reset();
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.packets.empty());
  const pb::EndOfTrace& end = stream.packets.back().packet.end_of_trace();
  EXPECT_EQ(end.reason(), pb::END_REASON_CRASH);
  EXPECT_EQ(end.signal(), 6u);
  EXPECT_EQ(end.timestamp_ns(), 30u);
}

TEST(TraceWriterLifecycle, DestructorClosesWithReasonExit) {
  TempDir dir;
  const std::string path = dir.File("dtor.wst");
  {
    std::string error;
    auto writer = TraceWriter::Open(Options(path), FileTestHeader(), &error);
    ASSERT_NE(writer, nullptr) << error;
    writer->Write(FileTestKernel(1));
  }
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.packets.empty());
  EXPECT_EQ(stream.packets.back().packet.end_of_trace().reason(), pb::END_REASON_EXIT);
  EXPECT_TRUE(stream.packets[stream.packets.size() - 2].packet.stats().final());
}

// ---------------------------------------------------------------------------------------
// A trace without work, and a name another process took

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Opens a trace with remove_if_no_work at `path`, lets `write` fill it, closes it for `reason`;
// returns whether the writer says it removed the file, which must agree with the disk.
template <typename WriteFn>
bool ClosedAndRemoved(const std::string& path, WriteFn write,
                      EndReason reason = EndReason::kExit, bool remove_if_no_work = true) {
  TraceWriterOptions options = Options(path);
  options.remove_if_no_work = remove_if_no_work;
  auto writer = OpenOrDie(options, FileTestHeader());
  if (writer == nullptr) return false;
  write(*writer);
  writer->Close(reason, kFileTestBase + 1000);
  EXPECT_EQ(writer->removed(), !Exists(path)) << path;
  return writer->removed();
}

// What the session writes before any work: the device, a context, an API call, a sync, a
// capture window and a notice are not work.
void WriteNoWork(TraceWriter& w) {
  DeviceRecord device;
  device.name = "NVIDIA H200";
  device.sm_count = 132;
  w.Write(device);
  w.Write(ContextRecord{.id = 1, .device_id = 0});
  w.Write(ApiCallRecord{.name_id = w.InternString("cudaGetDeviceCount"),
                        .start_ns = kFileTestBase + 10, .end_ns = kFileTestBase + 20});
  w.Write(SyncRecord{.start_ns = kFileTestBase + 30, .end_ns = kFileTestBase + 40});
  w.Write(CaptureWindowEdgeRecord{.window_id = 1, .begin = true, .timestamp_ns = kFileTestBase});
  w.WriteNotice(Severity::kInfo, "session", "started", kFileTestBase);
  w.AddToCounter("activity.records", 4, Severity::kInfo);
}

TEST(TraceWriterRemoveIfNoWork, ATraceWithoutWorkIsRemovedAtANormalEnd) {
  TempDir dir;
  EXPECT_TRUE(ClosedAndRemoved(dir.File("exit.wst"), WriteNoWork));
  EXPECT_TRUE(ClosedAndRemoved(dir.File("signal.wst"), WriteNoWork, EndReason::kSignal));
  EXPECT_TRUE(ClosedAndRemoved(dir.File("header_only.wst"), [](TraceWriter&) {}));
  // The destructor's close is an exit too.
  TraceWriterOptions options = Options(dir.File("destructor.wst"));
  options.remove_if_no_work = true;
  OpenOrDie(options, FileTestHeader()).reset();
  EXPECT_FALSE(Exists(dir.File("destructor.wst")));
}

TEST(TraceWriterRemoveIfNoWork, ATraceWithWorkIsKept) {
  TempDir dir;
  const std::pair<const char*, std::function<void(TraceWriter&)>> work[] = {
      {"kernel", [](TraceWriter& w) { w.Write(FileTestKernel(1)); }},
      {"memcpy", [](TraceWriter& w) {
         w.Write(MemcpyRecord{.start_ns = kFileTestBase, .end_ns = kFileTestBase + 5});
       }},
      {"allocation", [](TraceWriter& w) {  // a program that only allocates (trace kind alloc)
         w.Write(MemoryRecord{.operation = MemoryOperation::kAllocate,
                              .memory_kind = MemoryKind::kDevice, .address = 0x7f0000000000,
                              .bytes = 1 << 20, .timestamp_ns = kFileTestBase});
       }},
      {"nvtx_range", [](TraceWriter& w) {
         w.Write(NvtxRangeRecord{.name_id = w.InternString("step"), .start_ns = kFileTestBase,
                                 .end_ns = kFileTestBase + 5});
       }},
      {"nvtx_mark", [](TraceWriter& w) {
         w.Write(NvtxMarkRecord{.name_id = w.InternString("here"), .timestamp_ns = kFileTestBase});
       }},
      {"nccl_call", [](TraceWriter& w) {  // NCCL's own NVTX range around a call
         w.Write(NcclCallRecord{.name_id = w.InternString("ncclAllReduce"),
                                .start_ns = kFileTestBase, .end_ns = kFileTestBase + 5});
       }},
      {"pm_sample", [](TraceWriter& w) {
         PmSampleRecord sample;
         sample.start_ns = kFileTestBase;
         sample.end_ns = kFileTestBase + 5;
         sample.values = {0.5};
         w.Write(sample);
       }},
      // A range still open at the end is not written, but was pushed.
      {"unclosed_range", [](TraceWriter& w) {
         w.AddToCounter(stats::kNvtxUnclosedRanges.name, 1, stats::kNvtxUnclosedRanges.severity);
       }},
      {"cupti_dropped", [](TraceWriter& w) {
         w.AddToCounter(stats::kCuptiDroppedRecords.name, 3, stats::kCuptiDroppedRecords.severity);
       }},
  };
  for (const auto& [name, write] : work) {
    const std::string path = dir.File(std::string(name) + ".wst");
    EXPECT_FALSE(ClosedAndRemoved(path, [&](TraceWriter& w) {
      WriteNoWork(w);
      write(w);
    })) << name;
    EXPECT_TRUE(ParsePacketFile(path).packets.size() > 2) << name;
  }
}

TEST(TraceWriterRemoveIfNoWork, KeptWhenOffOrAtAnAbnormalEnd) {
  TempDir dir;
  EXPECT_FALSE(ClosedAndRemoved(dir.File("off.wst"), WriteNoWork, EndReason::kExit, false));
  EXPECT_FALSE(ClosedAndRemoved(dir.File("write_error.wst"), WriteNoWork, EndReason::kWriteError));
  EXPECT_FALSE(ClosedAndRemoved(dir.File("detach.wst"), WriteNoWork, EndReason::kDetach));
}

// Only the file this writer made: one put in its place since is left alone.
TEST(TraceWriterRemoveIfNoWork, AFileThatReplacedTheTraceIsLeftAlone) {
  TempDir dir;
  const std::string path = dir.File("run.wst");
  EXPECT_FALSE(ClosedAndRemoved(path, [&](TraceWriter&) {
    std::ofstream(dir.File("other")) << "someone else's";
    ASSERT_EQ(rename(dir.File("other").c_str(), path.c_str()), 0);
  }));
  EXPECT_EQ(ReadFileBytes(path), "someone else's");
}

// A file replaced with -f was truncated by this writer: it goes too.
TEST(TraceWriterRemoveIfNoWork, ATruncatedFileIsRemoved) {
  TempDir dir;
  const std::string path = dir.File("old.wst");
  { std::ofstream(path) << "an earlier trace"; }
  TraceWriterOptions options = Options(path);
  options.force_overwrite = true;
  options.remove_if_no_work = true;
  auto writer = OpenOrDie(options, FileTestHeader());
  ASSERT_NE(writer, nullptr);
  writer->Close(EndReason::kExit, kFileTestBase);
  EXPECT_TRUE(writer->removed());
  EXPECT_FALSE(Exists(path));
}

TEST(TraceWriterRenameIfExists, ATakenNameMovesToTheNameGiven) {
  TempDir dir;
  const std::string taken = dir.File("run_0.wst");
  { std::ofstream(taken) << "another process's trace"; }
  TraceWriterOptions options = Options(taken);
  std::string asked_about;
  options.rename_if_exists = [&](const std::string& path) {
    asked_about = path;
    return dir.File("run_0_77.wst");
  };
  auto writer = OpenOrDie(options, FileTestHeader());
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(asked_about, taken);
  EXPECT_EQ(writer->path(), dir.File("run_0_77.wst"));
  writer->Close(EndReason::kExit, kFileTestBase);
  EXPECT_EQ(ReadFileBytes(taken), "another process's trace");
  EXPECT_TRUE(ParsePacketFile(dir.File("run_0_77.wst")).packets[0].packet.has_header());

  // A free name is not asked about.
  asked_about.clear();
  options.path = dir.File("free.wst");
  OpenOrDie(options, FileTestHeader()).reset();
  EXPECT_EQ(asked_about, "");
}

TEST(TraceWriterRenameIfExists, NoOtherNameLeavesTheUsualRules) {
  TempDir dir;
  const std::string path = dir.File("old.wst");
  { std::ofstream(path) << "keep me"; }
  TraceWriterOptions options = Options(path);
  options.rename_if_exists = [](const std::string&) { return std::string(); };
  std::string error;
  EXPECT_EQ(TraceWriter::Open(options, FileTestHeader(), &error), nullptr);
  EXPECT_THAT(error, HasSubstr("exists; pass -f/--force-overwrite"));
  EXPECT_EQ(ReadFileBytes(path), "keep me");
  options.force_overwrite = true;
  auto writer = OpenOrDie(options, FileTestHeader());
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer->path(), path);
  writer->Close(EndReason::kExit, kFileTestBase);
  EXPECT_TRUE(ParsePacketFile(path).packets[0].packet.has_header());
}

}  // namespace
}  // namespace warpscope
