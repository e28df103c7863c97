// Writes every record type with edge values and reads it back with the generated protobuf
// classes, field by field; and checks that every field of trace.proto is in that trace, so that
// schema and writer cannot drift apart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/writer/schema_coverage.h"
#include "tests/writer/writer_test_support.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using namespace writer_test;  // NOLINT(build/namespaces): the helpers all writer tests share.


// What EveryRecordTypeFieldByField writes that its checks compare against: the values with
// something to show (Unicode, a long name, an embedded NUL) and the ids the writer gave.
struct EveryRecord {
  std::string unicode = "\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b \xf0\x9f\x94\xa5 ker\xc3\xa9l";
  std::string long_name = std::string(3000, 'x') + "_templated<int, float>";
  std::string with_nul = std::string("a\0b", 3);
  std::string cubin = std::string("\x7f" "ELF\0cubin", 10);
  uint64_t name_id = 0, unicode_id = 0, long_id = 0, nul_id = 0, config_id = 0;
  uint64_t thread_id = 0, other_thread_id = 0;
  PmMetricSetRecord metric_set;
  PmSampleRecord sample;
  PcStallReasonsRecord stall;
  PcSampleBatchRecord pc;
};

// The fixture builder's H200 with another name and edge values where the H200 has none.
DeviceRecord EdgeDevice() {
  DeviceRecord device = fixtures::H200Device(/*id=*/7);
  device.name = "NVIDIA B300";
  device.compute_capability_major = 10;
  device.compute_capability_minor = 3;
  device.global_memory_bytes = 150ull << 30;
  device.global_memory_bandwidth_kbps = kMax64;
  device.l2_cache_bytes = 60ull << 20;
  device.uuid = "GPU-1234abcd";
  device.pci_bus_id = kMax32;
  return device;
}

LaunchConfigRecord EdgeLaunchConfig() {
  return LaunchConfigRecord{.grid_x = kMax32, .grid_y = 2, .grid_z = 3, .block_x = 256,
                            .block_y = 1, .block_z = 1, .cluster_x = 2, .cluster_y = 1,
                            .cluster_z = 1, .registers_per_thread = 255,
                            .static_shared_memory = 48, .dynamic_shared_memory = 232448,
                            .local_memory_per_thread = 16, .shared_memory_executed = 233472,
                            .shared_memory_config = 1, .shared_memory_carveout_requested = 100,
                            .shmem_limit_config = 1};
}

// The device, its context, and the interned strings, launch config and threads.
void WriteDefinitions(TraceWriter& writer, EveryRecord* everything) {
  EveryRecord& r = *everything;
  TraceWriter::Batch batch(writer);
  ASSERT_TRUE(batch.Write(EdgeDevice()));
  ASSERT_TRUE(
      batch.Write(ContextRecord{.id = 1, .device_id = 7, .is_green = true, .sm_count = 66}));
  r.name_id = batch.InternString("gemm_kernel");
  r.unicode_id = batch.InternString(r.unicode);
  r.long_id = batch.InternString(r.long_name);
  r.nul_id = batch.InternString(r.with_nul);
  EXPECT_EQ(batch.InternString(""), 0u);
  r.config_id = batch.InternLaunchConfig(EdgeLaunchConfig());
  r.thread_id = batch.InternThread(kMax64, kMax32, "main \xe2\x9c\x93");
  r.other_thread_id = batch.InternThread(0, 99);
}

// Kernels (one with every field zero), copies, syncs, API calls, graphs and overhead.
void WriteActivity(TraceWriter::Batch& batch, const EveryRecord& r) {
  KernelRecord kernel{.name_id = r.name_id, .mangled_name_id = r.long_id,
                      .launch_config_id = r.config_id, .start_ns = kMax64 - 5, .end_ns = kMax64,
                      .device_id = kMax32, .context_id = 1, .stream_id = 13,
                      .correlation_id = kMax32, .graph_id = 6, .graph_node_id = 5,
                      .grid_id = kMax64};
  KernelRecord zero_kernel{};  // Every field zero: an empty message body.
  MemcpyRecord memcpy_rec{.copy_kind = CopyKind::kPtoP, .src_kind = MemoryKind::kDevice,
                          .dst_kind = MemoryKind::kManagedStatic, .bytes = kMax64,
                          .start_ns = 100, .end_ns = 250, .device_id = 1, .context_id = 2,
                          .stream_id = 3, .correlation_id = 4, .is_async = true,
                          .src_device_id = 2, .dst_device_id = 1, .graph_node_id = kMax32};
  MemsetRecord memset_rec{.value = 0xff, .bytes = 1ull << 40, .memory_kind = MemoryKind::kDevice,
                          .start_ns = 300, .end_ns = 301, .device_id = 2, .context_id = 1,
                          .stream_id = 7, .correlation_id = 8, .is_async = true};
  MemoryRecord memory{.operation = MemoryOperation::kAllocateFailed,
                      .memory_kind = MemoryKind::kManaged, .address = kMax64,
                      .bytes = 1ull << 41, .timestamp_ns = 400, .device_id = 3,
                      .context_id = 4, .stream_id = 5, .correlation_id = kMax32,
                      .thread_id = r.other_thread_id, .pool_address = 1ull << 47,
                      .pool_reserved_bytes = 1ull << 36, .pool_used_bytes = 1ull << 35,
                      .source_id = r.long_id, .result = 2};
  SyncRecord sync{.kind = SyncKind::kStreamWaitEvent, .start_ns = 10, .end_ns = 20,
                  .context_id = 1, .stream_id = 2, .cuda_event_id = 3, .correlation_id = 4,
                  .thread_id = r.thread_id};
  ApiCallRecord api{.domain = ApiDomain::kDriver, .name_id = r.unicode_id, .start_ns = 1,
                    .end_ns = 2, .thread_id = r.thread_id, .correlation_id = 9, .result = 700,
                    .callback_id = 211};
  GraphLaunchRecord graph{.graph_id = 5, .start_ns = 1000, .end_ns = 5000, .device_id = 3,
                          .context_id = 1, .stream_id = 2, .correlation_id = 3};
  OverheadRecord overhead{.kind_id = r.nul_id, .start_ns = 50, .end_ns = 60,
                          .thread_id = r.other_thread_id};
  ASSERT_TRUE(batch.Write(kernel));
  ASSERT_TRUE(batch.Write(zero_kernel));
  ASSERT_TRUE(batch.Write(memcpy_rec));
  ASSERT_TRUE(batch.Write(memset_rec));
  ASSERT_TRUE(batch.Write(memory));
  ASSERT_TRUE(batch.Write(sync));
  ASSERT_TRUE(batch.Write(api));
  ASSERT_TRUE(batch.Write(graph));
  ASSERT_TRUE(batch.Write(overhead));
}

// NVTX, PM and PC sampling records; the ones the checks compare against go into *r.
void WriteSampling(TraceWriter::Batch& batch, EveryRecord* everything) {
  EveryRecord& r = *everything;
  NvtxRangeRecord range{.name_id = r.unicode_id, .domain_id = r.name_id, .category = 3,
                        .color = 0xff00ff00, .start_ns = 5, .end_ns = 500,
                        .thread_id = r.thread_id, .end_thread_id = r.other_thread_id,
                        .is_push_pop = true, .depth = 2};
  NvtxMarkRecord mark{.name_id = r.name_id, .domain_id = r.unicode_id, .category = kMax32,
                      .color = 1, .timestamp_ns = kMax64, .thread_id = r.thread_id};
  r.metric_set = PmMetricSetRecord{.id = 1, .device_id = 2,
                                   .metric_names = {"sm__warps_active.avg.per_cycle_active", "",
                                                    "gr__cycles_elapsed.max"},
                                   .interval_ns = 10000,
                                   .chip_name = "GH100",
                                   .counter_availability = std::string("\0\x01\xff", 3)};
  const std::vector<uint8_t> image = {0, 1, 2, 0xff, 0};
  PmCounterDataRecord raw{.metric_set_id = 1, .image = image, .sample_index = {0, 3},
                          .start_ns = {200, 300}, .end_ns = {250, 300}};
  r.sample = PmSampleRecord{.metric_set_id = 1, .start_ns = 123, .end_ns = 10123, .values = {}};
  for (int i = 0; i < 1000; ++i) r.sample.values.push_back(i * 0.5 - 100.25);
  r.sample.values.push_back(0.0);
  r.sample.values.push_back(-0.0);
  r.sample.values.push_back(std::numeric_limits<double>::infinity());
  r.sample.values.push_back(std::numeric_limits<double>::denorm_min());
  r.sample.values.push_back(std::numeric_limits<double>::max());
  r.stall = PcStallReasonsRecord{.device_id = 2, .index = {0, 1, 7, kMax32},
                                 .name = {"smsp__pcsamp_warps_issue_stalled_long_scoreboard", "",
                                          r.unicode, "selected"}};
  r.pc = PcSampleBatchRecord{.device_id = 1, .context_id = 2, .timestamp_ns = 99,
                             .total_samples = kMax64, .dropped_samples = 3,
                             .non_user_kernel_samples = 4, .hardware_buffer_full = true,
                             .records = {}};
  for (uint32_t i = 0; i < 40; ++i) {
    PcSampleRecord rec{.cubin_crc = kMax64 - i, .function_name_id = r.long_id,
                       .pc_offset = i * 16u, .stall_reason_index = {}, .samples = {},
                       .correlation_id = i};
    for (uint32_t k = 0; k < i % 5; ++k) {
      rec.stall_reason_index.push_back(k * 1000);
      rec.samples.push_back(k == 0 ? kMax64 : k);
    }
    r.pc.records.push_back(rec);
  }
  ASSERT_TRUE(batch.Write(range));
  ASSERT_TRUE(batch.Write(mark));
  ASSERT_TRUE(batch.Write(NcclCallRecord{
      .name_id = r.name_id, .start_ns = 1000, .end_ns = 1700, .thread_id = r.thread_id,
      .comm_hash = kMax64, .bytes = kMax64 - 1, .reduction_op = -1, .root = -2147483647 - 1,
      .peer = 2147483647, .comm_size = 256, .comm_rank = 255, .launch_correlation_id = kMax32,
      .launches = 3, .payload_unreadable = true}));
  ASSERT_TRUE(batch.Write(StackFrameRecord{.id = 7, .kind = FrameKind::kNative,
                                           .file_id = r.name_id, .function_id = r.name_id,
                                           .line = kMax32, .first_line = kMax32 - 1,
                                           .module_offset = kMax64}));
  ASSERT_TRUE(batch.Write(CallStackRecord{.id = kMax64, .frame_ids = {7, 1, kMax64},
                                          .truncated = true, .outermost = 1,
                                          .left_out = kMax32}));
  ASSERT_TRUE(batch.Write(ApiStackRecord{.correlation_id = kMax32, .stack_id = kMax64,
                                         .timestamp_ns = 1800, .domain = ApiDomain::kDriver,
                                         .callback_id = 307, .name_id = r.name_id}));
  ASSERT_TRUE(batch.Write(r.metric_set));
  ASSERT_TRUE(batch.Write(r.sample));
  ASSERT_TRUE(batch.Write(raw));
  ASSERT_TRUE(batch.Write(r.stall));
  ASSERT_TRUE(batch.Write(r.pc));
}

// The packet of kind `which`, which must be the only one of its kind.
const pb::TracePacket& One(const pb::Trace& trace, pb::TracePacket::DataCase which) {
  auto found = Select(trace, [&](const pb::TracePacket& p) { return p.data_case() == which; });
  EXPECT_EQ(found.size(), 1u) << which;
  static const pb::TracePacket empty;
  return found.empty() ? empty : *found[0];
}

// Device, context and interned strings.
void ExpectDefinitions(const pb::Trace& trace, const EveryRecord& w) {
  const pb::Device& d = One(trace, pb::TracePacket::kDevice).device();
  EXPECT_EQ(d.id(), 7u);
  EXPECT_EQ(d.name(), "NVIDIA B300");
  EXPECT_EQ(d.compute_capability_major(), 10u);
  EXPECT_EQ(d.compute_capability_minor(), 3u);
  EXPECT_EQ(d.sm_count(), 132u);
  EXPECT_EQ(d.max_warps_per_sm(), 64u);
  EXPECT_EQ(d.max_blocks_per_sm(), 32u);
  EXPECT_EQ(d.max_threads_per_block(), 1024u);
  EXPECT_EQ(d.max_registers_per_sm(), 65536u);
  EXPECT_EQ(d.max_registers_per_block(), 65536u);
  EXPECT_EQ(d.max_shared_memory_per_sm(), 233472u);
  EXPECT_EQ(d.max_shared_memory_per_block(), 49152u);
  EXPECT_EQ(d.max_shared_memory_per_block_optin(), 232448u);
  EXPECT_EQ(d.reserved_shared_memory_per_block(), 1024u);
  EXPECT_EQ(d.threads_per_warp(), 32u);
  EXPECT_EQ(d.core_clock_khz(), 1980000u);
  EXPECT_EQ(d.global_memory_bytes(), 150ull << 30);
  EXPECT_EQ(d.global_memory_bandwidth_kbps(), kMax64);
  EXPECT_EQ(d.l2_cache_bytes(), 60ull << 20);
  EXPECT_EQ(d.uuid(), "GPU-1234abcd");
  EXPECT_EQ(d.pci_bus_id(), kMax32);
  EXPECT_EQ(d.register_allocation_unit(), 256u);
  EXPECT_EQ(d.shared_memory_allocation_unit(), 128u);

  const pb::ContextInfo& c = One(trace, pb::TracePacket::kContext).context();
  EXPECT_EQ(c.id(), 1u);
  EXPECT_EQ(c.device_id(), 7u);
  EXPECT_TRUE(c.is_green());
  EXPECT_EQ(c.sm_count(), 66u);

  std::map<uint64_t, std::string> strings;
  for (const auto* p : Select(trace, [](const auto& p) { return p.has_interned_string(); })) {
    EXPECT_TRUE(strings.emplace(p->interned_string().id(), p->interned_string().value()).second);
  }
  EXPECT_EQ(strings.size(), 4u);
  EXPECT_EQ(strings[w.name_id], "gemm_kernel");
  EXPECT_EQ(strings[w.unicode_id], w.unicode);
  EXPECT_EQ(strings[w.long_id], w.long_name);
  EXPECT_EQ(strings[w.nul_id], w.with_nul);
}


void ExpectLaunchConfigAndThreads(const pb::Trace& trace, const EveryRecord& w) {
  const pb::LaunchConfig& lc = One(trace, pb::TracePacket::kLaunchConfig).launch_config();
  EXPECT_EQ(lc.id(), w.config_id);
  EXPECT_EQ(lc.grid_x(), kMax32);
  EXPECT_EQ(lc.grid_y(), 2u);
  EXPECT_EQ(lc.grid_z(), 3u);
  EXPECT_EQ(lc.block_x(), 256u);
  EXPECT_EQ(lc.block_y(), 1u);
  EXPECT_EQ(lc.block_z(), 1u);
  EXPECT_EQ(lc.cluster_x(), 2u);
  EXPECT_EQ(lc.cluster_y(), 1u);
  EXPECT_EQ(lc.cluster_z(), 1u);
  EXPECT_EQ(lc.registers_per_thread(), 255u);
  EXPECT_EQ(lc.static_shared_memory(), 48u);
  EXPECT_EQ(lc.dynamic_shared_memory(), 232448u);
  EXPECT_EQ(lc.local_memory_per_thread(), 16u);
  EXPECT_EQ(lc.shared_memory_executed(), 233472u);
  EXPECT_EQ(lc.shared_memory_config(), 1u);
  EXPECT_EQ(lc.shared_memory_carveout_requested(), 100u);
  EXPECT_EQ(lc.shmem_limit_config(), 1u);

  auto threads = Select(trace, [](const auto& p) { return p.has_thread(); });
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0]->thread().id(), w.thread_id);
  EXPECT_EQ(threads[0]->thread().cupti_thread_id(), kMax64);
  EXPECT_EQ(threads[0]->thread().os_tid(), kMax32);
  EXPECT_EQ(threads[0]->thread().name(), "main \xe2\x9c\x93");
  EXPECT_EQ(threads[1]->thread().id(), w.other_thread_id);
  EXPECT_EQ(threads[1]->thread().cupti_thread_id(), 0u);
  EXPECT_EQ(threads[1]->thread().os_tid(), 99u);
  EXPECT_EQ(threads[1]->thread().name(), "");
}


void ExpectKernelsAndCopies(const pb::Trace& trace, const EveryRecord& w) {
  auto kernels = Select(trace, [](const auto& p) { return p.has_kernel(); });
  ASSERT_EQ(kernels.size(), 2u);
  const pb::KernelEvent& k = kernels[0]->kernel();
  EXPECT_EQ(k.name_id(), w.name_id);
  EXPECT_EQ(k.mangled_name_id(), w.long_id);
  EXPECT_EQ(k.launch_config_id(), w.config_id);
  EXPECT_EQ(k.start_ns(), kMax64 - 5);
  EXPECT_EQ(k.duration_ns(), 5u);
  EXPECT_EQ(k.device_id(), kMax32);
  EXPECT_EQ(k.context_id(), 1u);
  EXPECT_EQ(k.stream_id(), 13u);
  EXPECT_EQ(k.correlation_id(), kMax32);
  EXPECT_EQ(k.graph_id(), 6u);
  EXPECT_EQ(k.graph_node_id(), 5u);
  EXPECT_EQ(k.grid_id(), kMax64);
  EXPECT_EQ(kernels[1]->kernel().ByteSizeLong(), 0u);  // Proto3: zero fields are omitted.

  const pb::MemcpyEvent& m = One(trace, pb::TracePacket::kMemcpy).memcpy();
  EXPECT_EQ(m.copy_kind(), pb::COPY_KIND_PTOP);
  EXPECT_EQ(m.src_kind(), pb::MEMORY_KIND_DEVICE);
  EXPECT_EQ(m.dst_kind(), pb::MEMORY_KIND_MANAGED_STATIC);
  EXPECT_EQ(m.bytes(), kMax64);
  EXPECT_EQ(m.start_ns(), 100u);
  EXPECT_EQ(m.duration_ns(), 150u);
  EXPECT_EQ(m.device_id(), 1u);
  EXPECT_EQ(m.context_id(), 2u);
  EXPECT_EQ(m.stream_id(), 3u);
  EXPECT_EQ(m.correlation_id(), 4u);
  EXPECT_TRUE(m.is_async());
  EXPECT_EQ(m.src_device_id(), 2u);
  EXPECT_EQ(m.dst_device_id(), 1u);
  EXPECT_EQ(m.graph_node_id(), kMax32);

  const pb::MemsetEvent& ms = One(trace, pb::TracePacket::kMemset).memset();
  EXPECT_EQ(ms.value(), 0xffu);
  EXPECT_EQ(ms.bytes(), 1ull << 40);
  EXPECT_EQ(ms.memory_kind(), pb::MEMORY_KIND_DEVICE);
  EXPECT_EQ(ms.start_ns(), 300u);
  EXPECT_EQ(ms.duration_ns(), 1u);
  EXPECT_EQ(ms.device_id(), 2u);
  EXPECT_EQ(ms.context_id(), 1u);
  EXPECT_EQ(ms.stream_id(), 7u);
  EXPECT_EQ(ms.correlation_id(), 8u);
  EXPECT_TRUE(ms.is_async());

  const pb::MemoryEvent& mem = One(trace, pb::TracePacket::kMemory).memory();
  EXPECT_EQ(mem.operation(), pb::MEMORY_OPERATION_ALLOCATE_FAILED);
  EXPECT_EQ(mem.memory_kind(), pb::MEMORY_KIND_MANAGED);
  EXPECT_EQ(mem.address(), kMax64);
  EXPECT_EQ(mem.bytes(), 1ull << 41);
  EXPECT_EQ(mem.timestamp_ns(), 400u);
  EXPECT_EQ(mem.device_id(), 3u);
  EXPECT_EQ(mem.context_id(), 4u);
  EXPECT_EQ(mem.stream_id(), 5u);
  EXPECT_EQ(mem.correlation_id(), kMax32);
  EXPECT_EQ(mem.thread_id(), w.other_thread_id);
  EXPECT_EQ(mem.pool_address(), 1ull << 47);
  EXPECT_EQ(mem.pool_reserved_bytes(), 1ull << 36);
  EXPECT_EQ(mem.pool_used_bytes(), 1ull << 35);
  EXPECT_EQ(mem.source_id(), w.long_id);
  EXPECT_EQ(mem.result(), 2u);

  const pb::SyncEvent& s = One(trace, pb::TracePacket::kSynchronization).synchronization();
  EXPECT_EQ(s.kind(), pb::SYNC_KIND_STREAM_WAIT_EVENT);
  EXPECT_EQ(s.start_ns(), 10u);
  EXPECT_EQ(s.duration_ns(), 10u);
  EXPECT_EQ(s.context_id(), 1u);
  EXPECT_EQ(s.stream_id(), 2u);
  EXPECT_EQ(s.cuda_event_id(), 3u);
  EXPECT_EQ(s.correlation_id(), 4u);
  EXPECT_EQ(s.thread_id(), w.thread_id);
}


void ExpectApiGraphOverheadNvtx(const pb::Trace& trace, const EveryRecord& w) {
  const pb::ApiCallEvent& a = One(trace, pb::TracePacket::kApiCall).api_call();
  EXPECT_EQ(a.domain(), pb::API_DOMAIN_DRIVER);
  EXPECT_EQ(a.name_id(), w.unicode_id);
  EXPECT_EQ(a.start_ns(), 1u);
  EXPECT_EQ(a.duration_ns(), 1u);
  EXPECT_EQ(a.thread_id(), w.thread_id);
  EXPECT_EQ(a.correlation_id(), 9u);
  EXPECT_EQ(a.result(), 700u);
  EXPECT_EQ(a.callback_id(), 211u);

  const pb::GraphLaunchEvent& g = One(trace, pb::TracePacket::kGraphLaunch).graph_launch();
  EXPECT_EQ(g.graph_id(), 5u);
  EXPECT_EQ(g.start_ns(), 1000u);
  EXPECT_EQ(g.duration_ns(), 4000u);
  EXPECT_EQ(g.device_id(), 3u);
  EXPECT_EQ(g.context_id(), 1u);
  EXPECT_EQ(g.stream_id(), 2u);
  EXPECT_EQ(g.correlation_id(), 3u);

  const pb::OverheadEvent& o = One(trace, pb::TracePacket::kOverhead).overhead();
  EXPECT_EQ(o.kind_id(), w.nul_id);
  EXPECT_EQ(o.start_ns(), 50u);
  EXPECT_EQ(o.duration_ns(), 10u);
  EXPECT_EQ(o.thread_id(), w.other_thread_id);

  const pb::NvtxRangeEvent& r = One(trace, pb::TracePacket::kNvtxRange).nvtx_range();
  EXPECT_EQ(r.name_id(), w.unicode_id);
  EXPECT_EQ(r.domain_id(), w.name_id);
  EXPECT_EQ(r.category(), 3u);
  EXPECT_EQ(r.color(), 0xff00ff00u);
  EXPECT_EQ(r.start_ns(), 5u);
  EXPECT_EQ(r.duration_ns(), 495u);
  EXPECT_EQ(r.thread_id(), w.thread_id);
  EXPECT_EQ(r.end_thread_id(), w.other_thread_id);
  EXPECT_TRUE(r.is_push_pop());
  EXPECT_EQ(r.depth(), 2u);

  const pb::NvtxMarkEvent& mk = One(trace, pb::TracePacket::kNvtxMark).nvtx_mark();
  EXPECT_EQ(mk.name_id(), w.name_id);
  EXPECT_EQ(mk.domain_id(), w.unicode_id);
  EXPECT_EQ(mk.category(), kMax32);
  EXPECT_EQ(mk.color(), 1u);
  EXPECT_EQ(mk.timestamp_ns(), kMax64);
  EXPECT_EQ(mk.thread_id(), w.thread_id);

  // sint32 fields: negative values and both ends of the range survive zigzag encoding.
  const pb::NcclCallEvent& n = One(trace, pb::TracePacket::kNcclCall).nccl_call();
  EXPECT_EQ(n.name_id(), w.name_id);
  EXPECT_EQ(n.duration_ns(), 700u);
  EXPECT_EQ(n.thread_id(), w.thread_id);
  EXPECT_EQ(n.comm_hash(), kMax64);
  EXPECT_EQ(n.bytes(), kMax64 - 1);
  EXPECT_EQ(n.reduction_op(), -1);
  EXPECT_EQ(n.root(), -2147483647 - 1);
  EXPECT_EQ(n.peer(), 2147483647);
  EXPECT_EQ(n.comm_size(), 256);
  EXPECT_EQ(n.comm_rank(), 255);
  EXPECT_EQ(n.launch_correlation_id(), kMax32);
  EXPECT_EQ(n.launches(), 3u);
  EXPECT_TRUE(n.payload_unreadable());

  const pb::StackFrame& f = One(trace, pb::TracePacket::kStackFrame).stack_frame();
  EXPECT_EQ(f.id(), 7u);
  EXPECT_EQ(f.kind(), pb::FRAME_KIND_NATIVE);
  EXPECT_EQ(f.file_id(), w.name_id);
  EXPECT_EQ(f.line(), kMax32);
  EXPECT_EQ(f.first_line(), kMax32 - 1);
  EXPECT_EQ(f.module_offset(), kMax64);
  const pb::CallStack& cs = One(trace, pb::TracePacket::kCallStack).call_stack();
  EXPECT_EQ(cs.id(), kMax64);
  EXPECT_THAT(cs.frame_ids(), ::testing::ElementsAre(7u, 1u, kMax64));
  EXPECT_TRUE(cs.truncated());
  EXPECT_EQ(cs.outermost(), 1u);
  EXPECT_EQ(cs.left_out(), kMax32);
  const pb::ApiStackEvent& as = One(trace, pb::TracePacket::kApiStack).api_stack();
  EXPECT_EQ(as.correlation_id(), kMax32);
  EXPECT_EQ(as.stack_id(), kMax64);
  EXPECT_EQ(as.domain(), pb::API_DOMAIN_DRIVER);
  EXPECT_EQ(as.callback_id(), 307u);
  EXPECT_EQ(as.name_id(), w.name_id);
}


void ExpectPmSampling(const pb::Trace& trace, const EveryRecord& w) {
  const pb::PmMetricSet& set = One(trace, pb::TracePacket::kPmMetricSet).pm_metric_set();
  EXPECT_EQ(set.id(), 1u);
  EXPECT_EQ(set.device_id(), 2u);
  EXPECT_THAT(set.metric_names(), ElementsAreArray(w.metric_set.metric_names));
  EXPECT_EQ(set.interval_ns(), 10000u);
  EXPECT_EQ(set.chip_name(), "GH100");
  EXPECT_EQ(set.counter_availability(), std::string("\0\x01\xff", 3));

  const pb::PmCounterData& cd = One(trace, pb::TracePacket::kPmCounterData).pm_counter_data();
  EXPECT_EQ(cd.metric_set_id(), 1u);
  EXPECT_EQ(cd.image(), std::string("\0\x01\x02\xff\0", 5));
  EXPECT_THAT(cd.sample_index(), ElementsAre(0u, 3u));
  EXPECT_THAT(cd.start_ns(), ElementsAre(200u, 300u));
  EXPECT_THAT(cd.duration_ns(), ElementsAre(50u, 0u));

  const pb::PmSample& ps = One(trace, pb::TracePacket::kPmSample).pm_sample();
  EXPECT_EQ(ps.metric_set_id(), 1u);
  EXPECT_EQ(ps.start_ns(), 123u);
  EXPECT_EQ(ps.duration_ns(), 10000u);
  ASSERT_EQ(ps.values_size(), static_cast<int>(w.sample.values.size()));
  for (int i = 0; i < ps.values_size(); ++i) {
    // Bit-exact, which also tells 0.0 from -0.0.
    EXPECT_EQ(std::bit_cast<uint64_t>(ps.values(i)), std::bit_cast<uint64_t>(w.sample.values[i]))
        << i;
  }
}

// PC sampling, the capture window edge, the notice and the cubin.
void ExpectPcSamplingAndTheRest(const pb::Trace& trace, const EveryRecord& w) {
  const pb::PcStallReasons& sr = One(trace, pb::TracePacket::kPcStallReasons).pc_stall_reasons();
  EXPECT_EQ(sr.device_id(), 2u);
  EXPECT_THAT(sr.index(), ElementsAre(0u, 1u, 7u, kMax32));
  EXPECT_THAT(sr.name(), ElementsAreArray(w.stall.name));

  const pb::PcSampleBatch& pb_batch = One(trace, pb::TracePacket::kPcSamples).pc_samples();
  EXPECT_EQ(pb_batch.device_id(), 1u);
  EXPECT_EQ(pb_batch.context_id(), 2u);
  EXPECT_EQ(pb_batch.timestamp_ns(), 99u);
  EXPECT_EQ(pb_batch.total_samples(), kMax64);
  EXPECT_EQ(pb_batch.dropped_samples(), 3u);
  EXPECT_EQ(pb_batch.non_user_kernel_samples(), 4u);
  EXPECT_TRUE(pb_batch.hardware_buffer_full());
  ASSERT_EQ(pb_batch.records_size(), 40);
  for (int i = 0; i < 40; ++i) {
    const pb::PcSampleRecord& got = pb_batch.records(i);
    const PcSampleRecord& want = w.pc.records[i];
    EXPECT_EQ(got.cubin_crc(), want.cubin_crc);
    EXPECT_EQ(got.function_name_id(), want.function_name_id);
    EXPECT_EQ(got.pc_offset(), want.pc_offset);
    EXPECT_THAT(got.stall_reason_index(), ElementsAreArray(want.stall_reason_index));
    EXPECT_THAT(got.samples(), ElementsAreArray(want.samples));
    EXPECT_EQ(got.correlation_id(), want.correlation_id);
  }

  const pb::CaptureWindowEdge& e = One(trace, pb::TracePacket::kCaptureWindow).capture_window();
  EXPECT_EQ(e.window_id(), 2u);
  EXPECT_TRUE(e.begin());
  EXPECT_EQ(e.timestamp_ns(), 42u);
  EXPECT_EQ(e.trigger(), pb::CAPTURE_TRIGGER_NVTX);

  const pb::Notice& n = One(trace, pb::TracePacket::kNotice).notice();
  EXPECT_EQ(n.timestamp_ns(), 31u);
  EXPECT_EQ(n.severity(), pb::SEVERITY_ERROR);
  EXPECT_EQ(n.source(), "pm_sampling");
  EXPECT_EQ(n.message(), w.unicode);

  const pb::CubinImage& cu = One(trace, pb::TracePacket::kCubin).cubin();
  EXPECT_EQ(cu.crc(), kMax64);
  EXPECT_EQ(cu.device_id(), 7u);
  EXPECT_EQ(cu.image(), w.cubin);
  EXPECT_EQ(cu.offset(), 0u);
  EXPECT_EQ(cu.total_bytes(), w.cubin.size());
}

// The final stats count each kind.
void ExpectStats(const pb::Trace& trace, const TraceWriter& writer) {
  const pb::Stats& stats = One(trace, pb::TracePacket::kStats).stats();
  EXPECT_EQ(StatValue(stats, "writer.events_written.kernel"), 2u);
  EXPECT_EQ(StatValue(stats, "writer.events_written.interned_string"), 4u);
  EXPECT_EQ(StatValue(stats, "writer.events_written.pm_sample"), 1u);
  // device, context, 4 strings, config, 2 threads, 2 kernels, 20 other records, notice.
  EXPECT_EQ(StatValue(stats, std::string(stats::kWriterEventsWritten.name)),
            2u + 4u + 1u + 2u + 2u + 20u + 1u);
  EXPECT_EQ(writer.Counter(stats::kWriterEventsWritten.name), 32u);
  EXPECT_EQ(StatValue(stats, std::string(stats::kWriterTimestampsClamped.name)), 0u);
}

TEST(TraceWriterRoundTrip, EveryRecordTypeFieldByField) {
  TempDir dir;
  const std::string path = dir.File("all.wst");
  // time_base 0 lets the absolute timestamps reach the maximum uint64.
  auto writer = OpenOrDie(Options(path), TestHeader(/*time_base=*/0));
  ASSERT_NE(writer, nullptr);

  EveryRecord r;
  WriteDefinitions(*writer, &r);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(r.name_id, 1u);
  EXPECT_EQ(r.unicode_id, 2u);
  EXPECT_EQ(r.long_id, 3u);
  EXPECT_EQ(r.nul_id, 4u);
  EXPECT_EQ(r.config_id, 1u);
  EXPECT_EQ(r.thread_id, 1u);
  EXPECT_EQ(r.other_thread_id, 2u);
  {
    TraceWriter::Batch batch(*writer);
    WriteActivity(batch, r);
    WriteSampling(batch, &r);
    ASSERT_FALSE(HasFatalFailure());
    CaptureWindowEdgeRecord edge{.window_id = 2, .begin = true, .timestamp_ns = 42,
                                 .trigger = CaptureTrigger::kNvtx};
    ASSERT_TRUE(batch.Write(edge));
    ASSERT_TRUE(batch.Write(CubinImageRecord{kMax64, 7, r.cubin.data(), r.cubin.size()}));
    ASSERT_TRUE(batch.WriteNotice(Severity::kError, "pm_sampling", r.unicode, 31));
  }
  writer->Close(EndReason::kCrash, 1000, /*signal=*/6);

  const pb::Trace trace = ParseWholeFile(path);
  const pb::EndOfTrace& end = trace.packet(trace.packet_size() - 1).end_of_trace();
  EXPECT_EQ(end.reason(), pb::END_REASON_CRASH);
  EXPECT_EQ(end.signal(), 6u);
  ExpectDefinitions(trace, r);
  ExpectLaunchConfigAndThreads(trace, r);
  ExpectKernelsAndCopies(trace, r);
  ExpectApiGraphOverheadNvtx(trace, r);
  ExpectPmSampling(trace, r);
  ExpectPcSamplingAndTheRest(trace, r);
  ExpectStats(trace, *writer);
  ExpectSchemaAndWriterAgree(trace);
}

}  // namespace
}  // namespace warpscope
