// Tests of TraceWriter::StartNextFile and the definitions it begins a file with
// (keep_definitions): what each file holds, ids interned before a switch and used after it,
// writers on other threads across switches, and the failures that leave writing in the old
// file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"
#include "tests/writer/trace_file_checks.h"
#include "tests/writer/writer_test_support.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace writer_test;  // NOLINT(build/namespaces): the helpers all writer tests share.

TraceWriterOptions KeepingOptions(const std::string& path) {
  TraceWriterOptions o = Options(path);
  o.keep_definitions = true;
  return o;
}

// Writes one definition of each kind the writer keeps.
void WriteEveryDefinition(TraceWriter& w) {
  TraceWriter::Batch b(w);
  DeviceRecord device;
  device.name = "NVIDIA H200";
  device.sm_count = 132;
  EXPECT_TRUE(b.Write(device));
  EXPECT_TRUE(b.Write(ContextRecord{.id = 1, .device_id = 0}));
  EXPECT_TRUE(b.Write(StackFrameRecord{.id = 1, .line = 3}));
  EXPECT_TRUE(b.Write(CallStackRecord{.id = 1, .frame_ids = {1}}));
  PmMetricSetRecord metrics;
  metrics.id = 1;
  metrics.metric_names = {"sm__warps_active"};
  EXPECT_TRUE(b.Write(metrics));
  EXPECT_TRUE(b.Write(PcStallReasonsRecord{.index = {0}, .name = {"stall_long_scoreboard"}}));
  const uint8_t cubin[] = {1, 2, 3, 4};
  EXPECT_TRUE(b.Write(CubinImageRecord{.crc = 9, .device_id = 0, .image = cubin, .size = 4}));
}

TEST(TraceWriterNextFile, BeginsWithTheHeaderAndEveryDefinitionBeforeAnyEvent) {
  TempDir dir;
  const std::string first = dir.File("first.wst");
  const std::string second = dir.File("second.wst");
  auto writer = OpenOrDie(KeepingOptions(first), FileTestHeader());
  WriteEveryDefinition(*writer);
  const uint64_t name = writer->InternString("gemm_kernel");
  const uint64_t config = writer->InternLaunchConfig({.grid_x = 64, .block_x = 256});
  const uint64_t thread = writer->InternThread(77, 1234, "main");
  const uint64_t api_name = writer->InternString("cudaLaunchKernel");
  KernelRecord k = FileTestKernel(1, name);
  k.launch_config_id = config;
  ASSERT_TRUE(writer->Write(k));

  std::string error;
  ASSERT_TRUE(writer->StartNextFile(second, kFileTestBase + 10, &error)) << error;
  // Interned before the switch, used after it: the ids stay and resolve in the new file.
  EXPECT_EQ(writer->InternString("gemm_kernel"), name);
  k = FileTestKernel(2, name);
  k.launch_config_id = config;
  ASSERT_TRUE(writer->Write(k));
  ASSERT_TRUE(writer->Write(ApiCallRecord{.name_id = api_name, .start_ns = kFileTestBase + 2,
                                          .end_ns = kFileTestBase + 3, .thread_id = thread,
                                          .correlation_id = 2}));
  const uint64_t later = writer->InternString("after_the_switch");
  ASSERT_TRUE(writer->Write(FileTestKernel(3, later)));
  writer->Close(EndReason::kExit, kFileTestBase + 20);
  EXPECT_EQ(writer->path(), second);

  const CheckedFile a = CheckTraceFile(first);
  EXPECT_EQ(a.end->end_of_trace().reason(), pb::END_REASON_NEXT_FILE);
  EXPECT_EQ(a.end->end_of_trace().timestamp_ns(), 10u);
  ASSERT_EQ(a.kernels.size(), 1u);

  const CheckedFile b = CheckTraceFile(second);
  EXPECT_EQ(b.end->end_of_trace().reason(), pb::END_REASON_EXIT);
  const auto& packets = b.stream.packets;
  // The same Header, byte for byte.
  EXPECT_EQ(packets[0].packet.header().SerializeAsString(),
            ParsePacketFile(first).packets[0].packet.header().SerializeAsString());
  // Then the definitions of the first file, in its order, and only then events.
  std::vector<int> kinds;
  for (size_t i = 1; i < packets.size() && !packets[i].packet.has_kernel(); ++i) {
    kinds.push_back(packets[i].packet.data_case());
  }
  EXPECT_THAT(kinds, ::testing::ElementsAre(
                         pb::TracePacket::kDevice, pb::TracePacket::kContext,
                         pb::TracePacket::kStackFrame, pb::TracePacket::kCallStack,
                         pb::TracePacket::kPmMetricSet, pb::TracePacket::kPcStallReasons,
                         pb::TracePacket::kCubin, pb::TracePacket::kInternedString,
                         pb::TracePacket::kLaunchConfig, pb::TracePacket::kThread,
                         pb::TracePacket::kInternedString));
  ASSERT_EQ(b.kernels.size(), 2u);
  EXPECT_EQ(b.strings.at(b.kernels[0]->kernel().name_id()), "gemm_kernel");
  EXPECT_EQ(b.strings.at(b.kernels[1]->kernel().name_id()), "after_the_switch");
  EXPECT_EQ(b.kernels[0]->kernel().start_ns(), 2u);  // The same time base.
  // Per file: this file's events; the count of packets is checked by CheckTraceFile.
  EXPECT_EQ(StatValue(*b.final_stats, "writer.events_written.kernel"), 2u);
  EXPECT_GT(StatValue(*b.final_stats, "writer.definitions_kept_bytes"), 0u);
}

// Threads writing all along: every record lands whole in one of the files, none twice, and
// each thread's records keep their order across the files.
TEST(TraceWriterNextFile, ConcurrentWritersLoseNothingAcrossSwitches) {
  TempDir dir;
  TraceWriterOptions options = KeepingOptions(dir.File("0.wst"));
  options.chunk_bytes = kMinChunkBytes;  // Many chunk hand-overs around each switch.
  options.max_buffered_bytes = 1 << 20;
  auto writer = OpenOrDie(options, FileTestHeader());
  KernelWriters writers(*writer, /*threads=*/4, /*per_thread=*/20000);
  constexpr int kFiles = 4;
  for (int f = 1; f < kFiles; ++f) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::string error;
    ASSERT_TRUE(writer->StartNextFile(dir.File(std::to_string(f) + ".wst"), kFileTestBase + f,
                                      &error))
        << error;
  }
  writers.Join();
  writer->Close(EndReason::kExit, kFileTestBase + 100);
  EXPECT_EQ(writers.refused(), writer->Counter("writer.events_dropped.buffer_full"));
  for (int f = 0; f < kFiles; ++f) {
    const CheckedFile file = CheckTraceFile(dir.File(std::to_string(f) + ".wst"));
    EXPECT_EQ(file.end->end_of_trace().reason(),
              f + 1 < kFiles ? pb::END_REASON_NEXT_FILE : pb::END_REASON_EXIT);
    writers.ExpectInOrder(file);
  }
  EXPECT_EQ(writers.found() + writers.refused(), writers.written());
}

TEST(TraceWriterNextFile, AFileThatCannotBeMadeLeavesWritingInTheOldOne) {
  TempDir dir;
  const std::string first = dir.File("first.wst");
  const std::string taken = dir.File("taken.wst");
  const std::string victim = dir.File("victim.txt");
  const std::string link = dir.File("link.wst");
  { std::ofstream(taken) << "keep me"; }
  { std::ofstream(victim) << "precious"; }
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  TraceWriterOptions options = KeepingOptions(first);
  auto writer = OpenOrDie(options, FileTestHeader());
  ASSERT_TRUE(writer->Write(FileTestKernel(1)));
  for (const std::string& path : {taken, link, dir.File("no/such/dir.wst")}) {
    std::string error;
    EXPECT_FALSE(writer->StartNextFile(path, kFileTestBase + 5, &error)) << path;
    EXPECT_THAT(error, StartsWith("warpscope: "));
    EXPECT_THAT(error, HasSubstr(path));
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  ASSERT_TRUE(writer->Write(FileTestKernel(2)));
  writer->Close(EndReason::kExit, kFileTestBase + 20);
  EXPECT_EQ(writer->path(), first);
  EXPECT_EQ(ReadFileBytes(taken), "keep me");
  EXPECT_EQ(ReadFileBytes(victim), "precious");
  const CheckedFile a = CheckTraceFile(first);
  EXPECT_EQ(a.kernels.size(), 2u);
  EXPECT_EQ(a.end->end_of_trace().reason(), pb::END_REASON_EXIT);
}

TEST(TraceWriterNextFile, NeedsKeptDefinitions) {
  TempDir dir;
  auto writer = OpenOrDie(Options(dir.File("a.wst")), FileTestHeader());
  std::string error;
  EXPECT_FALSE(writer->StartNextFile(dir.File("b.wst"), kFileTestBase, &error));
  EXPECT_THAT(error, HasSubstr("keep_definitions"));
  EXPECT_EQ(::access(dir.File("b.wst").c_str(), F_OK), -1);
  writer->Close(EndReason::kExit, kFileTestBase);
  EXPECT_FALSE(writer->StartNextFile(dir.File("c.wst"), kFileTestBase, &error));
}

// Past the bound nothing more is kept, and that is counted: a later file lacks those ids.
TEST(TraceWriterNextFile, DefinitionsPastTheBoundAreCountedNotKept) {
  TempDir dir;
  TraceWriterOptions options = KeepingOptions(dir.File("a.wst"));
  options.max_kept_definition_bytes = 64 << 10;  // One block.
  auto writer = OpenOrDie(options, FileTestHeader());
  const std::string big(40 << 10, 'x');
  ASSERT_NE(writer->InternString(big + "1"), 0u);
  ASSERT_NE(writer->InternString(big + "2"), 0u);  // Does not fit the block: not kept.
  ASSERT_NE(writer->InternString("small"), 0u);    // Nothing is kept after that.
  EXPECT_EQ(writer->Counter("writer.definitions_not_kept"), 2u);
  EXPECT_EQ(writer->Counter("writer.definitions_kept_bytes"), 64u << 10);
  std::string error;
  ASSERT_TRUE(writer->StartNextFile(dir.File("b.wst"), kFileTestBase, &error)) << error;
  writer->Close(EndReason::kExit, kFileTestBase);
  const CheckedFile b = CheckTraceFile(dir.File("b.wst"));
  EXPECT_EQ(b.strings.size(), 1u);
  EXPECT_EQ(StatValue(*b.final_stats, "writer.definitions_not_kept"), 2u);
  const StatDef* row = FindStat("writer.definitions_not_kept");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->severity, Severity::kDataLoss);
}

}  // namespace
}  // namespace warpscope
