// The writer's bytes, pinned: every record type (and each interned value, the notice, the
// split PC batch and cubin, the final Stats and EndOfTrace) is encoded into a trace whose
// bytes must equal a stored golden file. The encoders are generated from trace.proto; this
// test fails when a change of the generator or of the wire primitives changes what a trace
// holds. After an intended format change, rewrite the goldens with
//   WARPSCOPE_UPDATE_GOLDEN=1 build/bin/writer_encoder_golden_test
// and say why in the commit.
#include <cstdlib>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "proto/writer/trace_writer.h"
#include "tests/writer/packet_stream.h"

namespace warpscope {
namespace {

using testing::ParsePacketStream;
using testing::ReadFileBytes;
using testing::TempDir;

constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kMax32 = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kBase = 1'700'000'000'000'000'000ull;

std::string GoldenPath(const std::string& name) {
  const char* source = std::getenv("WARPSCOPE_SOURCE_DIR");
  return std::string(source != nullptr ? source : ".") + "/tests/writer/golden/" + name;
}

// Compares `actual` with the golden file `name`, or rewrites the golden when asked to.
void ExpectBytesEqualGolden(const std::string& actual, const std::string& name) {
  const std::string path = GoldenPath(name);
  if (std::getenv("WARPSCOPE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  const std::string golden = ReadFileBytes(path);
  ASSERT_FALSE(golden.empty()) << "no golden at " << path;
  ASSERT_EQ(actual.size(), golden.size()) << name;
  size_t first_difference = 0;
  while (first_difference < actual.size() && actual[first_difference] == golden[first_difference]) {
    ++first_difference;
  }
  EXPECT_EQ(first_difference, actual.size()) << name << " differs from the golden at byte "
                                             << first_difference;
}

HeaderRecord GoldenHeader() {
  return HeaderRecord{
      .tool_version = "0.1.0-golden", .pid = 4242, .ppid = 1, .hostname = "gpu-node-07",
      .command_line = {"python", "", "train.py", "bad \xff utf8"},
      .rank_env = {{"RANK", "3"}, {"EMPTY", ""}}, .clock_domain = ClockDomain::kMonotonicRaw,
      .time_base_ns = kBase, .unix_time_base_ns = kMax64,
      .config = {{"WARPSCOPE_OUTPUT", "trace_%p"}}, .producer = "golden",
      .cupti_version = 130001, .cuda_driver_version = 13000,
      .display_driver_version = "580.159.04", .job_id = "SLURM_JOB_ID=81234"};
}

TraceWriterOptions GoldenOptions(const std::string& path, size_t chunk_bytes) {
  TraceWriterOptions o;
  o.path = path;
  o.chunk_bytes = chunk_bytes;
  o.stats_interval_ms = 0;  // Only the final Stats packet: the file depends on nothing else.
  return o;
}

DeviceRecord GoldenDevice() {
  // compute_capability_minor 0 is left out of the message (proto3 zero).
  return DeviceRecord{
      .id = 1, .name = "NVIDIA H200", .compute_capability_major = 9,
      .compute_capability_minor = 0, .sm_count = 132, .max_warps_per_sm = 64,
      .max_blocks_per_sm = 32, .max_threads_per_block = 1024, .max_registers_per_sm = 65536,
      .max_registers_per_block = 65536, .max_shared_memory_per_sm = 233472,
      .max_shared_memory_per_block = 49152, .max_shared_memory_per_block_optin = 232448,
      .reserved_shared_memory_per_block = 1024, .threads_per_warp = 32,
      .core_clock_khz = 1980000, .global_memory_bytes = 141ull << 30,
      .global_memory_bandwidth_kbps = kMax64, .l2_cache_bytes = 60ull << 20,
      .uuid = "GPU-0123abcd", .pci_bus_id = kMax32, .register_allocation_unit = 256,
      .shared_memory_allocation_unit = 128};
}

// Ids of the interned values the records refer to, and the time they start at.
struct GoldenIds {
  uint64_t name = 0, mangled = 0, config = 0, thread = 0, other_thread = 0, start = 0;
};

// The device, contexts and interned values, with edge values: maxima, invalid UTF-8.
void WriteDefinitions(TraceWriter::Batch& batch, GoldenIds* ids) {
  ASSERT_TRUE(batch.Write(GoldenDevice()));
  ASSERT_TRUE(batch.Write(ContextRecord{.id = 1, .device_id = 1, .is_green = true,
                                        .sm_count = 66}));
  ASSERT_TRUE(batch.Write(ContextRecord{}));
  ids->name = batch.InternString("gemm_kernel");
  ids->mangled = batch.InternString("_Z4gemmPfS_ \xc3\x28");
  ids->config = batch.InternLaunchConfig(LaunchConfigRecord{
      .grid_x = kMax32, .grid_y = 2, .grid_z = 3, .block_x = 256, .block_y = 1, .block_z = 1,
      .cluster_x = 2, .cluster_y = 1, .cluster_z = 1, .registers_per_thread = 255,
      .static_shared_memory = 48, .dynamic_shared_memory = 232448,
      .local_memory_per_thread = 16, .shared_memory_executed = 233472,
      .shared_memory_config = 1, .shared_memory_carveout_requested = 100,
      .shmem_limit_config = 1});
  ids->thread = batch.InternThread(kMax64, kMax32, "main");
  ids->other_thread = batch.InternThread(0, 99);
  ids->start = kBase + 600'000'000'000ull;
}

// One timed event of every kind: zeros, maxima, times before the base and ends before starts
// (clamped).
void WriteEvents(TraceWriter::Batch& batch, const GoldenIds& ids) {
  const auto [name, mangled, config, thread, other_thread, start] = ids;
  ASSERT_TRUE(batch.Write(KernelRecord{
      .name_id = name, .mangled_name_id = mangled, .launch_config_id = config,
      .start_ns = start, .end_ns = start + 2500, .device_id = 1, .context_id = 1,
      .stream_id = 7, .correlation_id = kMax32, .graph_id = 6, .graph_node_id = 5,
      .grid_id = kMax64}));
  ASSERT_TRUE(batch.Write(KernelRecord{}));  // Before the base: start clamped to 0.
  ASSERT_TRUE(batch.Write(KernelRecord{.name_id = name, .start_ns = kMax64, .end_ns = start}));
  ASSERT_TRUE(batch.Write(MemcpyRecord{
      .copy_kind = CopyKind::kPtoP, .src_kind = MemoryKind::kDevice,
      .dst_kind = MemoryKind::kManagedStatic, .bytes = kMax64, .start_ns = start + 100,
      .end_ns = start + 250, .device_id = 1, .context_id = 2, .stream_id = 3,
      .correlation_id = 4, .is_async = true, .src_device_id = 2, .dst_device_id = 1,
      .graph_node_id = kMax32}));
  ASSERT_TRUE(batch.Write(MemsetRecord{
      .value = 0xff, .bytes = 1ull << 40, .memory_kind = MemoryKind::kDevice,
      .start_ns = start + 300, .end_ns = start + 301, .device_id = 2, .context_id = 1,
      .stream_id = 7, .correlation_id = 8, .is_async = true}));
  ASSERT_TRUE(batch.Write(SyncRecord{
      .kind = SyncKind::kStreamWaitEvent, .start_ns = start + 10, .end_ns = start + 20,
      .context_id = 1, .stream_id = 2, .cuda_event_id = 3, .correlation_id = 4,
      .thread_id = thread}));
  ASSERT_TRUE(batch.Write(ApiCallRecord{
      .domain = ApiDomain::kDriver, .name_id = mangled, .start_ns = start + 1,
      .end_ns = start + 2, .thread_id = thread, .correlation_id = 9, .result = 700,
      .callback_id = 211}));
  ASSERT_TRUE(batch.Write(GraphLaunchRecord{
      .graph_id = 5, .start_ns = start + 1000, .end_ns = start + 5000, .device_id = 3,
      .context_id = 1, .stream_id = 2, .correlation_id = 3}));
  ASSERT_TRUE(batch.Write(OverheadRecord{.kind_id = name, .start_ns = start + 50,
                                         .end_ns = start + 60, .thread_id = other_thread}));
  ASSERT_TRUE(batch.Write(NvtxRangeRecord{
      .name_id = name, .domain_id = mangled, .category = 3, .color = 0xff00ff00,
      .start_ns = start + 5, .end_ns = start + 500, .thread_id = thread,
      .end_thread_id = other_thread, .is_push_pop = true, .depth = 2}));
  ASSERT_TRUE(batch.Write(NvtxMarkRecord{.name_id = name, .domain_id = mangled,
                                         .category = kMax32, .color = 1,
                                         .timestamp_ns = kMax64, .thread_id = thread}));
  ASSERT_TRUE(batch.Write(NcclCallRecord{
      .name_id = name, .start_ns = start + 600, .end_ns = start + 640, .thread_id = thread,
      .comm_hash = 0xc2e5cdcd6a46e35aull, .bytes = 26214400, .reduction_op = 0, .root = -1,
      .peer = -1, .comm_size = 4, .comm_rank = 2, .launch_correlation_id = 4077, .launches = 1,
      .payload_unreadable = false}));
  ASSERT_TRUE(batch.Write(StackFrameRecord{.id = 1, .kind = FrameKind::kPython, .file_id = name,
                                           .function_id = mangled, .line = 57, .first_line = 50}));
  ASSERT_TRUE(batch.Write(CallStackRecord{.id = 1, .frame_ids = {1, kMax64}, .truncated = true,
                                          .outermost = 1, .left_out = 300}));
  ASSERT_TRUE(batch.Write(ApiStackRecord{.correlation_id = 4077, .stack_id = 1,
                                         .timestamp_ns = start + 650,
                                         .domain = ApiDomain::kRuntime, .callback_id = 211,
                                         .name_id = name}));
}

// PM and PC samples, a capture window edge, a cubin and a notice.
void WriteSamplesAndNotices(TraceWriter::Batch& batch, const GoldenIds& ids) {
  const uint64_t mangled = ids.mangled, start = ids.start;
  ASSERT_TRUE(batch.Write(PmMetricSetRecord{
      .id = 1, .device_id = 2,
      .metric_names = {"sm__warps_active.avg.per_cycle_active", "", "gr__cycles_elapsed.max"},
      .interval_ns = 10000, .chip_name = "GH100",
      .counter_availability = std::string("\0\x01\xff", 3)}));
  PmMetricSetRecord bare_metric_set;
  bare_metric_set.id = 2;
  ASSERT_TRUE(batch.Write(bare_metric_set));
  const std::vector<uint8_t> image = {0, 1, 2, 0xff, 0};
  ASSERT_TRUE(batch.Write(PmCounterDataRecord{
      .metric_set_id = 1, .image = image, .sample_index = {0, 3, 300},
      .start_ns = {start + 200, start + 300, 5}, .end_ns = {start + 250, start + 300, 1}}));
  PmSampleRecord sample{.metric_set_id = 1, .start_ns = start + 123, .end_ns = start + 10123,
                        .values = {0.0, -0.0, 1.5, -100.25,
                                   std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::denorm_min()}};
  ASSERT_TRUE(batch.Write(sample));
  ASSERT_TRUE(batch.Write(PcStallReasonsRecord{
      .device_id = 2, .index = {0, 1, 7, kMax32},
      .name = {"smsp__pcsamp_warps_issue_stalled_long_scoreboard", "", "sel\xe2"}}));
  PcSampleBatchRecord pc{.device_id = 1, .context_id = 2, .timestamp_ns = start + 99,
                         .total_samples = kMax64, .dropped_samples = 3,
                         .non_user_kernel_samples = 4, .hardware_buffer_full = true,
                         .records = {}};
  for (uint32_t i = 0; i < 12; ++i) {
    // i % 4 samples at this PC; the first one at the largest count.
    std::vector<uint32_t> reasons;
    std::vector<uint64_t> counts;
    for (uint32_t k = 0; k < i % 4; ++k) reasons.push_back(k * 1000);
    for (uint32_t k = 0; k < i % 4; ++k) counts.push_back(k == 0 ? kMax64 : k);
    pc.records.push_back(PcSampleRecord{.cubin_crc = kMax64 - i, .function_name_id = mangled,
                                        .pc_offset = i * 16u, .stall_reason_index = reasons,
                                        .samples = counts, .correlation_id = i});
  }
  ASSERT_TRUE(batch.Write(pc));
  ASSERT_TRUE(batch.Write(PcSampleBatchRecord{}));
  ASSERT_TRUE(batch.Write(CaptureWindowEdgeRecord{.window_id = 2, .begin = true,
                                                  .timestamp_ns = start + 42,
                                                  .trigger = CaptureTrigger::kNvtx}));
  const std::string cubin("\x7f" "ELF\0cubin", 10);
  ASSERT_TRUE(batch.Write(CubinImageRecord{kMax64, 7, cubin.data(), cubin.size()}));
  ASSERT_TRUE(batch.WriteNotice(Severity::kError, "pm_sampling", "bad \xed\xa0\x80 text",
                                start + 31));
}

// One record of every kind the writer takes, in one batch.
void WriteEveryRecord(TraceWriter& writer) {
  TraceWriter::Batch batch(writer);
  GoldenIds ids;
  WriteDefinitions(batch, &ids);
  WriteEvents(batch, ids);
  WriteSamplesAndNotices(batch, ids);
}

TEST(EncoderGolden, EveryRecordTypeEncodesToTheGoldenBytes) {
  TempDir dir;
  const std::string path = dir.File("every_record.wst");
  std::string error;
  // One chunk holds everything, so that the final Stats packet depends on nothing the
  // writer thread does in between.
  auto writer = TraceWriter::Open(GoldenOptions(path, 1 << 20), GoldenHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  WriteEveryRecord(*writer);
  writer->AddToCounter("cupti.dropped_records", 3, Severity::kDataLoss);
  writer->Close(EndReason::kSignal, kBase + 700'000'000'000ull, /*signal=*/15);
  const std::string bytes = ReadFileBytes(path);
  const testing::PacketStream stream = ParsePacketStream(bytes);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  ExpectBytesEqualGolden(bytes, "every_record.wst");
}

// Packets split to fit small chunks. Stats packets are left out of the comparison: their
// buffer high-water mark depends on how far the writer thread got at each chunk hand-over.
TEST(EncoderGolden, SplitPcBatchAndCubinEncodeToTheGoldenBytes) {
  TempDir dir;
  const std::string path = dir.File("split.wst");
  std::string error;
  auto writer = TraceWriter::Open(GoldenOptions(path, kMinChunkBytes), GoldenHeader(), &error);
  ASSERT_NE(writer, nullptr) << error;
  // 200 PCs with 10 stall reasons each: about 30 KiB, split over several 4 KiB chunks.
  std::vector<PcSampleRecord> records(200);
  for (uint32_t i = 0; i < records.size(); ++i) {
    records[i].cubin_crc = 0xabcdef00u + i;
    records[i].function_name_id = 3;
    records[i].pc_offset = i * 16u;
    records[i].stall_reason_index.resize(10);
    std::iota(records[i].stall_reason_index.begin(), records[i].stall_reason_index.end(), 0u);
    records[i].samples.resize(10);
    std::iota(records[i].samples.begin(), records[i].samples.end(), uint64_t{i} * 10);
  }
  PcSampleBatchRecord pc;
  pc.device_id = 1;
  pc.context_id = 2;
  pc.timestamp_ns = kBase + 9;
  pc.total_samples = 123456;
  pc.dropped_samples = 7;
  pc.non_user_kernel_samples = 8;
  pc.hardware_buffer_full = true;
  pc.records = std::move(records);
  EXPECT_TRUE(writer->Write(pc));
  std::string large(2 * kMinChunkBytes + 123, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7);
  EXPECT_TRUE(writer->Write(CubinImageRecord{0x22, 3, large.data(), large.size()}));
  writer->Close(EndReason::kExit, kBase + 10);

  const std::string bytes = ReadFileBytes(path);
  const testing::PacketStream stream = ParsePacketStream(bytes);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  std::string without_stats;
  for (const testing::ParsedPacket& p : stream.packets) {
    if (!p.packet.has_stats()) without_stats += bytes.substr(p.offset, p.size);
  }
  ExpectBytesEqualGolden(without_stats, "split_without_stats.wst");
}

}  // namespace
}  // namespace warpscope
