// Round-trip tests of the TraceWriter's encoding: every record type is written with edge
// values and read back with the generated protobuf classes, field by field; and every field of
// trace.proto is written, so that schema and writer cannot drift apart.
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "proto/writer/trace_writer.h"
#include "tests/writer/packet_stream.h"  // Also the generated trace classes.

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::HasStat;
using testing::ParsePacketFile;
using testing::ParsePacketStream;
using testing::ReadFileBytes;
using testing::StatValue;
using testing::TempDir;
namespace pb = ::warpscope::v1;

constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kMax32 = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kBase = 1'000'000'000'000ull;  // time_base_ns of most tests.

HeaderRecord TestHeader(uint64_t time_base = kBase) {
  HeaderRecord h;
  h.tool_version = "0.1.0-test";
  h.pid = 4242;
  h.ppid = 1;
  h.hostname = "gpu-node-07.cluster";
  h.command_line = {"python", "", "train.py", "--name=\xc3\xa9t\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x9a\x80"};
  h.rank_env = {{"RANK", "3"}, {"LOCAL_RANK", "0"}, {"EMPTY", ""}};
  h.clock_domain = ClockDomain::kMonotonic;
  h.time_base_ns = time_base;
  h.unix_time_base_ns = kMax64;
  h.config = {{"WARPSCOPE_OUTPUT", "trace_%p"}, {"WARPSCOPE_PM_INTERVAL", "10us"}};
  h.producer = "test";
  h.cupti_version = 130001;
  h.cuda_driver_version = 13000;
  return h;
}

std::unique_ptr<TraceWriter> OpenOrDie(const TraceWriterOptions& options,
                                       const HeaderRecord& header = TestHeader()) {
  std::string error;
  auto writer = TraceWriter::Open(options, header, &error);
  EXPECT_NE(writer, nullptr) << error;
  return writer;
}

TraceWriterOptions Options(const std::string& path) {
  TraceWriterOptions o;
  o.path = path;
  o.stats_interval_ms = 0;  // Deterministic contents unless a test wants periodic stats.
  return o;
}

// Packets of one kind, in file order.
template <typename Pred>
std::vector<const pb::TracePacket*> Select(const pb::Trace& trace, Pred pred) {
  std::vector<const pb::TracePacket*> out;
  for (const auto& p : trace.packet()) {
    if (pred(p)) out.push_back(&p);
  }
  return out;
}

pb::Trace ParseWholeFile(const std::string& path) {
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(ReadFileBytes(path)));
  return trace;
}

// Fields of trace.proto that the trace of EveryRecordTypeFieldByField does not hold, and why.
// Every other field of every message a Trace reaches must be in it.
constexpr std::pair<std::string_view, std::string_view> kFieldsNotInEveryRecordTrace[] = {
    {"warpscope.v1.Header.format_minor", "0 in format 1.0, and proto3 leaves zeros out"},
    {"warpscope.v1.Header.time_base_ns",
     "0 there, so that timestamps reach 2^64-1; HeaderFirstStatsThenEndOfTraceLast has it"},
    {"warpscope.v1.PcSampleBatch.continuation",
     "only in later parts of a split batch; LargePcSampleBatchIsSplitAcrossPackets has it"},
    {"warpscope.v1.CubinImage.offset",
     "only in later parts of a split cubin; "
     "CubinLargerThanAChunkIsStoredInPartsThatJoinToTheImage has it"},
};

// The fields set (non-zero, non-empty) anywhere in `message`, and any field number or wire
// type the schema does not know: what the writer wrote that a reader would skip.
void CollectWrittenFields(const google::protobuf::Message& message,
                          std::set<const google::protobuf::FieldDescriptor*>* written,
                          std::vector<std::string>* unknown) {
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  if (!reflection.GetUnknownFields(message).empty()) {
    unknown->push_back(message.GetDescriptor()->full_name());
  }
  std::vector<const google::protobuf::FieldDescriptor*> set_fields;
  reflection.ListFields(message, &set_fields);
  for (const google::protobuf::FieldDescriptor* field : set_fields) {
    written->insert(field);
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (!field->is_repeated()) {
      CollectWrittenFields(reflection.GetMessage(message, field), written, unknown);
      continue;
    }
    for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
      CollectWrittenFields(reflection.GetRepeatedMessage(message, field, i), written, unknown);
    }
  }
}

// Every field of `message` and of the messages it reaches.
void CollectSchemaFields(const google::protobuf::Descriptor& message,
                         std::set<const google::protobuf::FieldDescriptor*>* fields) {
  for (int i = 0; i < message.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = message.field(i);
    if (!fields->insert(field).second) continue;
    if (field->message_type() != nullptr) CollectSchemaFields(*field->message_type(), fields);
  }
}

// Fails for each schema field the trace lacks (the writer does not write it, or writes it
// under another number) unless kFieldsNotInEveryRecordTrace lists it, for each listed field
// the trace has after all, and for each message holding fields the schema does not know.
void ExpectSchemaAndWriterAgree(const pb::Trace& trace) {
  std::set<const google::protobuf::FieldDescriptor*> written, schema;
  std::vector<std::string> unknown;
  CollectWrittenFields(trace, &written, &unknown);
  CollectSchemaFields(*pb::Trace::descriptor(), &schema);
  EXPECT_THAT(unknown, ::testing::IsEmpty())
      << "the writer wrote fields these messages of trace.proto do not have (or with another "
         "wire type)";
  std::set<std::string_view> listed;
  for (const auto& [name, why] : kFieldsNotInEveryRecordTrace) {
    listed.insert(name);
    EXPECT_NE(pb::Trace::descriptor()->file()->pool()->FindFieldByName(std::string(name)),
              nullptr)
        << name << " is listed in kFieldsNotInEveryRecordTrace but is not in trace.proto";
  }
  for (const google::protobuf::FieldDescriptor* field : schema) {
    const bool in_trace = written.count(field) != 0;
    const bool is_listed = listed.count(field->full_name()) != 0;
    EXPECT_TRUE(in_trace || is_listed)
        << field->full_name() << " (field " << field->number() << ") of trace.proto is not in "
        << "the trace: encode it in proto/writer/record_writers.cc with its generated constant "
        << "and give it a non-zero value in EveryRecordTypeFieldByField, or list it in "
        << "kFieldsNotInEveryRecordTrace with the reason";
    EXPECT_FALSE(in_trace && is_listed)
        << field->full_name() << " is in the trace now: remove it from "
        << "kFieldsNotInEveryRecordTrace";
  }
}

TEST(TraceWriterRoundTrip, EnumValuesEqualProtoEnums) {
  // Each C++ enumerator against the proto value of the same name, and the counts, so that a
  // value added on one side only fails here.
  EXPECT_EQ(static_cast<int>(ClockDomain::kUnspecified), pb::CLOCK_DOMAIN_UNSPECIFIED);
  EXPECT_EQ(static_cast<int>(ClockDomain::kRealtime), pb::CLOCK_DOMAIN_REALTIME);
  EXPECT_EQ(static_cast<int>(ClockDomain::kMonotonic), pb::CLOCK_DOMAIN_MONOTONIC);
  EXPECT_EQ(static_cast<int>(ClockDomain::kMonotonicRaw), pb::CLOCK_DOMAIN_MONOTONIC_RAW);
  EXPECT_EQ(static_cast<int>(ClockDomain::kSynthetic), pb::CLOCK_DOMAIN_SYNTHETIC);
  EXPECT_EQ(pb::ClockDomain_descriptor()->value_count(), 5);

  EXPECT_EQ(static_cast<int>(MemoryKind::kUnknown), pb::MEMORY_KIND_UNKNOWN);
  EXPECT_EQ(static_cast<int>(MemoryKind::kPageable), pb::MEMORY_KIND_PAGEABLE);
  EXPECT_EQ(static_cast<int>(MemoryKind::kPinned), pb::MEMORY_KIND_PINNED);
  EXPECT_EQ(static_cast<int>(MemoryKind::kDevice), pb::MEMORY_KIND_DEVICE);
  EXPECT_EQ(static_cast<int>(MemoryKind::kArray), pb::MEMORY_KIND_ARRAY);
  EXPECT_EQ(static_cast<int>(MemoryKind::kManaged), pb::MEMORY_KIND_MANAGED);
  EXPECT_EQ(static_cast<int>(MemoryKind::kDeviceStatic), pb::MEMORY_KIND_DEVICE_STATIC);
  EXPECT_EQ(static_cast<int>(MemoryKind::kManagedStatic), pb::MEMORY_KIND_MANAGED_STATIC);
  EXPECT_EQ(pb::MemoryKind_descriptor()->value_count(), 8);

  EXPECT_EQ(static_cast<int>(CopyKind::kUnknown), pb::COPY_KIND_UNKNOWN);
  EXPECT_EQ(static_cast<int>(CopyKind::kHtoD), pb::COPY_KIND_HTOD);
  EXPECT_EQ(static_cast<int>(CopyKind::kDtoH), pb::COPY_KIND_DTOH);
  EXPECT_EQ(static_cast<int>(CopyKind::kHtoA), pb::COPY_KIND_HTOA);
  EXPECT_EQ(static_cast<int>(CopyKind::kAtoH), pb::COPY_KIND_ATOH);
  EXPECT_EQ(static_cast<int>(CopyKind::kAtoA), pb::COPY_KIND_ATOA);
  EXPECT_EQ(static_cast<int>(CopyKind::kAtoD), pb::COPY_KIND_ATOD);
  EXPECT_EQ(static_cast<int>(CopyKind::kDtoA), pb::COPY_KIND_DTOA);
  EXPECT_EQ(static_cast<int>(CopyKind::kDtoD), pb::COPY_KIND_DTOD);
  EXPECT_EQ(static_cast<int>(CopyKind::kHtoH), pb::COPY_KIND_HTOH);
  EXPECT_EQ(static_cast<int>(CopyKind::kPtoP), pb::COPY_KIND_PTOP);
  EXPECT_EQ(pb::CopyKind_descriptor()->value_count(), 11);

  EXPECT_EQ(static_cast<int>(SyncKind::kUnknown), pb::SYNC_KIND_UNKNOWN);
  EXPECT_EQ(static_cast<int>(SyncKind::kEvent), pb::SYNC_KIND_EVENT);
  EXPECT_EQ(static_cast<int>(SyncKind::kStreamWaitEvent), pb::SYNC_KIND_STREAM_WAIT_EVENT);
  EXPECT_EQ(static_cast<int>(SyncKind::kStream), pb::SYNC_KIND_STREAM);
  EXPECT_EQ(static_cast<int>(SyncKind::kContext), pb::SYNC_KIND_CONTEXT);
  EXPECT_EQ(pb::SyncKind_descriptor()->value_count(), 5);

  EXPECT_EQ(static_cast<int>(ApiDomain::kUnknown), pb::API_DOMAIN_UNKNOWN);
  EXPECT_EQ(static_cast<int>(ApiDomain::kRuntime), pb::API_DOMAIN_RUNTIME);
  EXPECT_EQ(static_cast<int>(ApiDomain::kDriver), pb::API_DOMAIN_DRIVER);
  EXPECT_EQ(pb::ApiDomain_descriptor()->value_count(), 3);

  EXPECT_EQ(static_cast<int>(CaptureTrigger::kUnknown), pb::CAPTURE_TRIGGER_UNKNOWN);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kProcess), pb::CAPTURE_TRIGGER_PROCESS);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kDelay), pb::CAPTURE_TRIGGER_DELAY);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kDuration), pb::CAPTURE_TRIGGER_DURATION);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kProfilerApi), pb::CAPTURE_TRIGGER_PROFILER_API);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kNvtx), pb::CAPTURE_TRIGGER_NVTX);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kSignal), pb::CAPTURE_TRIGGER_SIGNAL);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kError), pb::CAPTURE_TRIGGER_ERROR);
  EXPECT_EQ(pb::CaptureTrigger_descriptor()->value_count(), 8);

  EXPECT_EQ(static_cast<int>(Severity::kInfo), pb::SEVERITY_INFO);
  EXPECT_EQ(static_cast<int>(Severity::kDataLoss), pb::SEVERITY_DATA_LOSS);
  EXPECT_EQ(static_cast<int>(Severity::kError), pb::SEVERITY_ERROR);
  EXPECT_EQ(pb::Severity_descriptor()->value_count(), 3);

  EXPECT_EQ(static_cast<int>(EndReason::kUnknown), pb::END_REASON_UNKNOWN);
  EXPECT_EQ(static_cast<int>(EndReason::kExit), pb::END_REASON_EXIT);
  EXPECT_EQ(static_cast<int>(EndReason::kSignal), pb::END_REASON_SIGNAL);
  EXPECT_EQ(static_cast<int>(EndReason::kWriteError), pb::END_REASON_WRITE_ERROR);
  EXPECT_EQ(static_cast<int>(EndReason::kDetach), pb::END_REASON_DETACH);
  EXPECT_EQ(pb::EndReason_descriptor()->value_count(), 5);
}

TEST(TraceWriterRoundTrip, HeaderFirstStatsThenEndOfTraceLast) {
  TempDir dir;
  const std::string path = dir.File("header.wst");
  const HeaderRecord header = TestHeader();
  auto writer = OpenOrDie(Options(path), header);
  ASSERT_NE(writer, nullptr);
  writer->Close(EndReason::kSignal, kBase + 777);

  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  ASSERT_EQ(stream.packets.size(), 3u);
  const pb::TracePacket& first = stream.packets[0].packet;
  ASSERT_TRUE(first.has_header());
  const pb::Header& h = first.header();
  EXPECT_EQ(h.format_major(), kFormatMajor);
  EXPECT_EQ(h.format_minor(), kFormatMinor);
  EXPECT_EQ(h.format_major(), 1u);
  EXPECT_EQ(h.format_minor(), 0u);
  EXPECT_EQ(h.tool_version(), header.tool_version);
  EXPECT_EQ(h.pid(), 4242u);
  EXPECT_EQ(h.ppid(), 1u);
  EXPECT_EQ(h.hostname(), header.hostname);
  // The empty argument must survive: repeated elements are written even when empty.
  EXPECT_THAT(h.command_line(), ElementsAreArray(header.command_line));
  ASSERT_EQ(h.rank_env_size(), 3);
  EXPECT_EQ(h.rank_env(0).key(), "RANK");
  EXPECT_EQ(h.rank_env(0).value(), "3");
  EXPECT_EQ(h.rank_env(2).key(), "EMPTY");
  EXPECT_EQ(h.rank_env(2).value(), "");
  EXPECT_EQ(h.clock_domain(), pb::CLOCK_DOMAIN_MONOTONIC);
  EXPECT_EQ(h.time_base_ns(), kBase);
  EXPECT_EQ(h.unix_time_base_ns(), kMax64);
  ASSERT_EQ(h.config_size(), 2);
  EXPECT_EQ(h.config(1).key(), "WARPSCOPE_PM_INTERVAL");
  EXPECT_EQ(h.config(1).value(), "10us");
  EXPECT_EQ(h.producer(), "test");
  EXPECT_EQ(h.cupti_version(), 130001u);
  EXPECT_EQ(h.cuda_driver_version(), 13000u);

  const pb::TracePacket& stats = stream.packets[1].packet;
  ASSERT_TRUE(stats.has_stats());
  EXPECT_TRUE(stats.stats().final());
  EXPECT_EQ(stats.stats().timestamp_ns(), 777u);
  // The always-present counters are there even at zero.
  for (std::string_view name : {kStatEventsWritten, kStatBytesWritten, kStatDroppedBufferFull,
                                kStatDroppedWriteError, kStatBufferHighWater}) {
    EXPECT_TRUE(HasStat(stats.stats(), std::string(name))) << name;
  }
  EXPECT_EQ(StatValue(stats.stats(), std::string(kStatBytesWritten)), stream.packets[1].offset);
  for (const auto& c : stats.stats().counters()) {
    if (c.name().starts_with("writer.events_dropped.")) {
      EXPECT_EQ(c.severity(), pb::SEVERITY_DATA_LOSS) << c.name();
    }
  }

  const pb::TracePacket& last = stream.packets[2].packet;
  ASSERT_TRUE(last.has_end_of_trace());
  EXPECT_EQ(last.end_of_trace().timestamp_ns(), 777u);
  EXPECT_EQ(last.end_of_trace().reason(), pb::END_REASON_SIGNAL);
}

TEST(TraceWriterRoundTrip, EveryRecordTypeFieldByField) {
  TempDir dir;
  const std::string path = dir.File("all.wst");
  // time_base 0 lets the absolute timestamps reach the maximum uint64.
  auto writer = OpenOrDie(Options(path), TestHeader(/*time_base=*/0));
  ASSERT_NE(writer, nullptr);

  const std::string unicode = "\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b \xf0\x9f\x94\xa5 ker\xc3\xa9l";
  const std::string long_name = std::string(3000, 'x') + "_templated<int, float>";
  std::string with_nul("a\0b", 3);

  DeviceRecord device;
  device.id = 7;
  device.name = "NVIDIA B300";
  device.compute_capability_major = 10;
  device.compute_capability_minor = 3;
  device.sm_count = 132;
  device.max_warps_per_sm = 64;
  device.max_blocks_per_sm = 32;
  device.max_threads_per_block = 1024;
  device.max_registers_per_sm = 65536;
  device.max_registers_per_block = 65536;
  device.max_shared_memory_per_sm = 233472;
  device.max_shared_memory_per_block = 49152;
  device.max_shared_memory_per_block_optin = 232448;
  device.reserved_shared_memory_per_block = 1024;
  device.threads_per_warp = 32;
  device.core_clock_khz = 1980000;
  device.global_memory_bytes = 150ull << 30;
  device.global_memory_bandwidth_kbps = kMax64;
  device.l2_cache_bytes = 60ull << 20;
  device.uuid = "GPU-1234abcd";
  device.pci_bus_id = kMax32;
  device.register_allocation_unit = 256;
  device.shared_memory_allocation_unit = 128;

  ContextRecord context{.id = 1, .device_id = 7, .is_green = true, .sm_count = 66};
  LaunchConfigRecord config{.grid_x = kMax32, .grid_y = 2, .grid_z = 3, .block_x = 256,
                            .block_y = 1, .block_z = 1, .cluster_x = 2, .cluster_y = 1,
                            .cluster_z = 1, .registers_per_thread = 255,
                            .static_shared_memory = 48, .dynamic_shared_memory = 232448,
                            .local_memory_per_thread = 16, .shared_memory_executed = 233472,
                            .shared_memory_config = 1, .shared_memory_carveout_requested = 100,
                            .shmem_limit_config = 1};

  uint64_t name_id, unicode_id, long_id, nul_id, config_id, thread_id, other_thread_id;
  {
    TraceWriter::Batch batch(*writer);
    ASSERT_TRUE(batch.Write(device));
    ASSERT_TRUE(batch.Write(context));
    name_id = batch.InternString("gemm_kernel");
    unicode_id = batch.InternString(unicode);
    long_id = batch.InternString(long_name);
    nul_id = batch.InternString(with_nul);
    EXPECT_EQ(batch.InternString(""), 0u);
    config_id = batch.InternLaunchConfig(config);
    thread_id = batch.InternThread(kMax64, kMax32, "main \xe2\x9c\x93");
    other_thread_id = batch.InternThread(0, 99);
  }
  EXPECT_EQ(name_id, 1u);
  EXPECT_EQ(unicode_id, 2u);
  EXPECT_EQ(long_id, 3u);
  EXPECT_EQ(nul_id, 4u);
  EXPECT_EQ(config_id, 1u);
  EXPECT_EQ(thread_id, 1u);
  EXPECT_EQ(other_thread_id, 2u);

  KernelRecord kernel{.name_id = name_id, .mangled_name_id = long_id,
                      .launch_config_id = config_id, .start_ns = kMax64 - 5, .end_ns = kMax64,
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
  SyncRecord sync{.kind = SyncKind::kStreamWaitEvent, .start_ns = 10, .end_ns = 20,
                  .context_id = 1, .stream_id = 2, .cuda_event_id = 3, .correlation_id = 4,
                  .thread_id = thread_id};
  ApiCallRecord api{.domain = ApiDomain::kDriver, .name_id = unicode_id, .start_ns = 1,
                    .end_ns = 2, .thread_id = thread_id, .correlation_id = 9, .result = 700,
                    .callback_id = 211};
  GraphLaunchRecord graph{.graph_id = 5, .start_ns = 1000, .end_ns = 5000, .device_id = 3,
                          .context_id = 1, .stream_id = 2, .correlation_id = 3};
  OverheadRecord overhead{.kind_id = nul_id, .start_ns = 50, .end_ns = 60,
                          .thread_id = other_thread_id};
  NvtxRangeRecord range{.name_id = unicode_id, .domain_id = name_id, .category = 3,
                        .color = 0xff00ff00, .start_ns = 5, .end_ns = 500,
                        .thread_id = thread_id, .end_thread_id = other_thread_id,
                        .is_push_pop = true, .depth = 2};
  NvtxMarkRecord mark{.name_id = name_id, .domain_id = unicode_id, .category = kMax32, .color = 1,
                      .timestamp_ns = kMax64, .thread_id = thread_id};
  PmMetricSetRecord metric_set{.id = 1, .device_id = 2,
                               .metric_names = {"sm__warps_active.avg.per_cycle_active", "",
                                                "gr__cycles_elapsed.max"},
                               .interval_ns = 10000,
                               .chip_name = "GH100",
                               .counter_availability = std::string("\0\x01\xff", 3)};
  const std::vector<uint8_t> image = {0, 1, 2, 0xff, 0};
  PmCounterDataRecord raw{.metric_set_id = 1, .image = image, .sample_index = {0, 3},
                          .start_ns = {200, 300}, .end_ns = {250, 300}};
  PmSampleRecord sample{.metric_set_id = 1, .start_ns = 123, .end_ns = 10123, .values = {}};
  for (int i = 0; i < 1000; ++i) sample.values.push_back(i * 0.5 - 100.25);
  sample.values.push_back(0.0);
  sample.values.push_back(-0.0);
  sample.values.push_back(std::numeric_limits<double>::infinity());
  sample.values.push_back(std::numeric_limits<double>::denorm_min());
  sample.values.push_back(std::numeric_limits<double>::max());
  PcStallReasonsRecord stall{.device_id = 2, .index = {0, 1, 7, kMax32},
                             .name = {"smsp__pcsamp_warps_issue_stalled_long_scoreboard", "",
                                      unicode, "selected"}};
  PcSampleBatchRecord pc{.device_id = 1, .context_id = 2, .timestamp_ns = 99,
                         .total_samples = kMax64, .dropped_samples = 3,
                         .non_user_kernel_samples = 4, .hardware_buffer_full = true,
                         .records = {}};
  for (uint32_t i = 0; i < 40; ++i) {
    PcSampleRecord rec{.cubin_crc = kMax64 - i, .function_name_id = long_id,
                       .pc_offset = i * 16u, .stall_reason_index = {}, .samples = {},
                       .correlation_id = i};
    for (uint32_t k = 0; k < i % 5; ++k) {
      rec.stall_reason_index.push_back(k * 1000);
      rec.samples.push_back(k == 0 ? kMax64 : k);
    }
    pc.records.push_back(rec);
  }
  CaptureWindowEdgeRecord edge{.window_id = 2, .begin = true, .timestamp_ns = 42,
                               .trigger = CaptureTrigger::kNvtx};
  const std::string cubin("\x7f" "ELF\0cubin", 10);
  {
    TraceWriter::Batch batch(*writer);
    ASSERT_TRUE(batch.Write(kernel));
    ASSERT_TRUE(batch.Write(zero_kernel));
    ASSERT_TRUE(batch.Write(memcpy_rec));
    ASSERT_TRUE(batch.Write(memset_rec));
    ASSERT_TRUE(batch.Write(sync));
    ASSERT_TRUE(batch.Write(api));
    ASSERT_TRUE(batch.Write(graph));
    ASSERT_TRUE(batch.Write(overhead));
    ASSERT_TRUE(batch.Write(range));
    ASSERT_TRUE(batch.Write(mark));
    ASSERT_TRUE(batch.Write(metric_set));
    ASSERT_TRUE(batch.Write(sample));
    ASSERT_TRUE(batch.Write(raw));
    ASSERT_TRUE(batch.Write(stall));
    ASSERT_TRUE(batch.Write(pc));
    ASSERT_TRUE(batch.Write(edge));
    ASSERT_TRUE(batch.Write(CubinImageRecord{kMax64, 7, cubin.data(), cubin.size()}));
    ASSERT_TRUE(batch.WriteNotice(Severity::kError, "pm_sampling", unicode, 31));
  }
  writer->Close(EndReason::kExit, 1000);

  const pb::Trace trace = ParseWholeFile(path);
  auto one = [&](pb::TracePacket::DataCase which) -> const pb::TracePacket& {
    auto found = Select(trace, [&](const pb::TracePacket& p) { return p.data_case() == which; });
    EXPECT_EQ(found.size(), 1u) << which;
    static const pb::TracePacket empty;
    return found.empty() ? empty : *found[0];
  };

  const pb::Device& d = one(pb::TracePacket::kDevice).device();
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

  const pb::ContextInfo& c = one(pb::TracePacket::kContext).context();
  EXPECT_EQ(c.id(), 1u);
  EXPECT_EQ(c.device_id(), 7u);
  EXPECT_TRUE(c.is_green());
  EXPECT_EQ(c.sm_count(), 66u);

  std::map<uint64_t, std::string> strings;
  for (const auto* p : Select(trace, [](const auto& p) { return p.has_interned_string(); })) {
    EXPECT_TRUE(strings.emplace(p->interned_string().id(), p->interned_string().value()).second);
  }
  EXPECT_EQ(strings.size(), 4u);
  EXPECT_EQ(strings[name_id], "gemm_kernel");
  EXPECT_EQ(strings[unicode_id], unicode);
  EXPECT_EQ(strings[long_id], long_name);
  EXPECT_EQ(strings[nul_id], with_nul);

  const pb::LaunchConfig& lc = one(pb::TracePacket::kLaunchConfig).launch_config();
  EXPECT_EQ(lc.id(), config_id);
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
  EXPECT_EQ(threads[0]->thread().id(), thread_id);
  EXPECT_EQ(threads[0]->thread().cupti_thread_id(), kMax64);
  EXPECT_EQ(threads[0]->thread().os_tid(), kMax32);
  EXPECT_EQ(threads[0]->thread().name(), "main \xe2\x9c\x93");
  EXPECT_EQ(threads[1]->thread().id(), other_thread_id);
  EXPECT_EQ(threads[1]->thread().cupti_thread_id(), 0u);
  EXPECT_EQ(threads[1]->thread().os_tid(), 99u);
  EXPECT_EQ(threads[1]->thread().name(), "");

  auto kernels = Select(trace, [](const auto& p) { return p.has_kernel(); });
  ASSERT_EQ(kernels.size(), 2u);
  const pb::KernelEvent& k = kernels[0]->kernel();
  EXPECT_EQ(k.name_id(), name_id);
  EXPECT_EQ(k.mangled_name_id(), long_id);
  EXPECT_EQ(k.launch_config_id(), config_id);
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

  const pb::MemcpyEvent& m = one(pb::TracePacket::kMemcpy).memcpy();
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

  const pb::MemsetEvent& ms = one(pb::TracePacket::kMemset).memset();
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

  const pb::SyncEvent& s = one(pb::TracePacket::kSynchronization).synchronization();
  EXPECT_EQ(s.kind(), pb::SYNC_KIND_STREAM_WAIT_EVENT);
  EXPECT_EQ(s.start_ns(), 10u);
  EXPECT_EQ(s.duration_ns(), 10u);
  EXPECT_EQ(s.context_id(), 1u);
  EXPECT_EQ(s.stream_id(), 2u);
  EXPECT_EQ(s.cuda_event_id(), 3u);
  EXPECT_EQ(s.correlation_id(), 4u);
  EXPECT_EQ(s.thread_id(), thread_id);

  const pb::ApiCallEvent& a = one(pb::TracePacket::kApiCall).api_call();
  EXPECT_EQ(a.domain(), pb::API_DOMAIN_DRIVER);
  EXPECT_EQ(a.name_id(), unicode_id);
  EXPECT_EQ(a.start_ns(), 1u);
  EXPECT_EQ(a.duration_ns(), 1u);
  EXPECT_EQ(a.thread_id(), thread_id);
  EXPECT_EQ(a.correlation_id(), 9u);
  EXPECT_EQ(a.result(), 700u);
  EXPECT_EQ(a.callback_id(), 211u);

  const pb::GraphLaunchEvent& g = one(pb::TracePacket::kGraphLaunch).graph_launch();
  EXPECT_EQ(g.graph_id(), 5u);
  EXPECT_EQ(g.start_ns(), 1000u);
  EXPECT_EQ(g.duration_ns(), 4000u);
  EXPECT_EQ(g.device_id(), 3u);
  EXPECT_EQ(g.context_id(), 1u);
  EXPECT_EQ(g.stream_id(), 2u);
  EXPECT_EQ(g.correlation_id(), 3u);

  const pb::OverheadEvent& o = one(pb::TracePacket::kOverhead).overhead();
  EXPECT_EQ(o.kind_id(), nul_id);
  EXPECT_EQ(o.start_ns(), 50u);
  EXPECT_EQ(o.duration_ns(), 10u);
  EXPECT_EQ(o.thread_id(), other_thread_id);

  const pb::NvtxRangeEvent& r = one(pb::TracePacket::kNvtxRange).nvtx_range();
  EXPECT_EQ(r.name_id(), unicode_id);
  EXPECT_EQ(r.domain_id(), name_id);
  EXPECT_EQ(r.category(), 3u);
  EXPECT_EQ(r.color(), 0xff00ff00u);
  EXPECT_EQ(r.start_ns(), 5u);
  EXPECT_EQ(r.duration_ns(), 495u);
  EXPECT_EQ(r.thread_id(), thread_id);
  EXPECT_EQ(r.end_thread_id(), other_thread_id);
  EXPECT_TRUE(r.is_push_pop());
  EXPECT_EQ(r.depth(), 2u);

  const pb::NvtxMarkEvent& mk = one(pb::TracePacket::kNvtxMark).nvtx_mark();
  EXPECT_EQ(mk.name_id(), name_id);
  EXPECT_EQ(mk.domain_id(), unicode_id);
  EXPECT_EQ(mk.category(), kMax32);
  EXPECT_EQ(mk.color(), 1u);
  EXPECT_EQ(mk.timestamp_ns(), kMax64);
  EXPECT_EQ(mk.thread_id(), thread_id);

  const pb::PmMetricSet& set = one(pb::TracePacket::kPmMetricSet).pm_metric_set();
  EXPECT_EQ(set.id(), 1u);
  EXPECT_EQ(set.device_id(), 2u);
  EXPECT_THAT(set.metric_names(), ElementsAreArray(metric_set.metric_names));
  EXPECT_EQ(set.interval_ns(), 10000u);
  EXPECT_EQ(set.chip_name(), "GH100");
  EXPECT_EQ(set.counter_availability(), std::string("\0\x01\xff", 3));

  const pb::PmCounterData& cd = one(pb::TracePacket::kPmCounterData).pm_counter_data();
  EXPECT_EQ(cd.metric_set_id(), 1u);
  EXPECT_EQ(cd.image(), std::string("\0\x01\x02\xff\0", 5));
  EXPECT_THAT(cd.sample_index(), ElementsAre(0u, 3u));
  EXPECT_THAT(cd.start_ns(), ElementsAre(200u, 300u));
  EXPECT_THAT(cd.duration_ns(), ElementsAre(50u, 0u));

  const pb::PmSample& ps = one(pb::TracePacket::kPmSample).pm_sample();
  EXPECT_EQ(ps.metric_set_id(), 1u);
  EXPECT_EQ(ps.start_ns(), 123u);
  EXPECT_EQ(ps.duration_ns(), 10000u);
  ASSERT_EQ(ps.values_size(), static_cast<int>(sample.values.size()));
  for (int i = 0; i < ps.values_size(); ++i) {
    // Bit-exact, which also tells 0.0 from -0.0.
    EXPECT_EQ(std::bit_cast<uint64_t>(ps.values(i)), std::bit_cast<uint64_t>(sample.values[i]))
        << i;
  }

  const pb::PcStallReasons& sr = one(pb::TracePacket::kPcStallReasons).pc_stall_reasons();
  EXPECT_EQ(sr.device_id(), 2u);
  EXPECT_THAT(sr.index(), ElementsAre(0u, 1u, 7u, kMax32));
  EXPECT_THAT(sr.name(), ElementsAreArray(stall.name));

  const pb::PcSampleBatch& pb_batch = one(pb::TracePacket::kPcSamples).pc_samples();
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
    const PcSampleRecord& want = pc.records[i];
    EXPECT_EQ(got.cubin_crc(), want.cubin_crc);
    EXPECT_EQ(got.function_name_id(), want.function_name_id);
    EXPECT_EQ(got.pc_offset(), want.pc_offset);
    EXPECT_THAT(got.stall_reason_index(), ElementsAreArray(want.stall_reason_index));
    EXPECT_THAT(got.samples(), ElementsAreArray(want.samples));
    EXPECT_EQ(got.correlation_id(), want.correlation_id);
  }

  const pb::CaptureWindowEdge& e = one(pb::TracePacket::kCaptureWindow).capture_window();
  EXPECT_EQ(e.window_id(), 2u);
  EXPECT_TRUE(e.begin());
  EXPECT_EQ(e.timestamp_ns(), 42u);
  EXPECT_EQ(e.trigger(), pb::CAPTURE_TRIGGER_NVTX);

  const pb::Notice& n = one(pb::TracePacket::kNotice).notice();
  EXPECT_EQ(n.timestamp_ns(), 31u);
  EXPECT_EQ(n.severity(), pb::SEVERITY_ERROR);
  EXPECT_EQ(n.source(), "pm_sampling");
  EXPECT_EQ(n.message(), unicode);

  const pb::CubinImage& cu = one(pb::TracePacket::kCubin).cubin();
  EXPECT_EQ(cu.crc(), kMax64);
  EXPECT_EQ(cu.device_id(), 7u);
  EXPECT_EQ(cu.image(), cubin);
  EXPECT_EQ(cu.offset(), 0u);
  EXPECT_EQ(cu.total_bytes(), cubin.size());

  // The final stats count each kind.
  const pb::Stats& stats = one(pb::TracePacket::kStats).stats();
  EXPECT_EQ(StatValue(stats, "writer.events_written.kernel"), 2u);
  EXPECT_EQ(StatValue(stats, "writer.events_written.interned_string"), 4u);
  EXPECT_EQ(StatValue(stats, "writer.events_written.pm_sample"), 1u);
  // device, context, 4 strings, config, 2 threads, 2 kernels, 15 other records, notice.
  EXPECT_EQ(StatValue(stats, std::string(kStatEventsWritten)), 2u + 4u + 1u + 2u + 2u + 15u + 1u);
  EXPECT_EQ(writer->Counter(kStatEventsWritten), 27u);
  EXPECT_EQ(StatValue(stats, std::string(kStatTimestampsClamped)), 0u);

  ExpectSchemaAndWriterAgree(trace);
}

TEST(TraceWriterRoundTrip, TimestampsRelativeToBaseAndNegativesClamped) {
  TempDir dir;
  const std::string path = dir.File("clamp.wst");
  auto writer = OpenOrDie(Options(path));
  ASSERT_NE(writer, nullptr);
  // Normal, end before start, start before the base.
  ASSERT_TRUE(writer->Write(KernelRecord{.start_ns = kBase + 10, .end_ns = kBase + 30}));
  ASSERT_TRUE(writer->Write(KernelRecord{.start_ns = kBase + 50, .end_ns = kBase + 40}));
  ASSERT_TRUE(writer->Write(KernelRecord{.start_ns = kBase - 5, .end_ns = kBase + 5}));
  ASSERT_TRUE(writer->Write(NvtxMarkRecord{.name_id = 0, .timestamp_ns = 3}));
  EXPECT_EQ(writer->Counter(kStatTimestampsClamped), 3u);
  writer->Close(EndReason::kExit, kBase + 100);

  const pb::Trace trace = ParseWholeFile(path);
  auto kernels = Select(trace, [](const auto& p) { return p.has_kernel(); });
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[0]->kernel().start_ns(), 10u);
  EXPECT_EQ(kernels[0]->kernel().duration_ns(), 20u);
  EXPECT_EQ(kernels[1]->kernel().start_ns(), 50u);
  EXPECT_EQ(kernels[1]->kernel().duration_ns(), 0u);
  EXPECT_EQ(kernels[2]->kernel().start_ns(), 0u);
  EXPECT_EQ(kernels[2]->kernel().duration_ns(), 10u);
  auto stats = Select(trace, [](const auto& p) { return p.has_stats(); });
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(StatValue(stats[0]->stats(), std::string(kStatTimestampsClamped)), 3u);
  for (const auto& c : stats[0]->stats().counters()) {
    if (c.name() == kStatTimestampsClamped) {
      EXPECT_EQ(c.severity(), pb::SEVERITY_INFO);
    }
  }
}

TEST(TraceWriterRoundTrip, InvalidUtf8BecomesQuestionMarksSoThePacketStillParses) {
  TempDir dir;
  const std::string path = dir.File("utf8.wst");
  HeaderRecord header = TestHeader();
  header.command_line = {"./app", std::string("bad\xff\xfe" "arg"), "caf\xc3\xa9"};
  auto writer = OpenOrDie(Options(path), header);
  ASSERT_NE(writer, nullptr);
  // Truncated sequence, overlong '/', surrogate, above U+10FFFF, then valid 4-byte emoji.
  const std::string names[] = {std::string("k\xe2\x82"), std::string("\xc0\xaf"),
                               std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),
                               std::string("ok\xf0\x9f\x98\x80")};
  for (const std::string& name : names) {
    ASSERT_NE(writer->InternString(name), 0u);
  }
  writer->Close(EndReason::kExit, kBase + 1);

  const pb::Trace trace = ParseWholeFile(path);  // Fails on any invalid UTF-8 string.
  EXPECT_EQ(trace.packet(0).header().command_line(1), "bad??arg");
  EXPECT_EQ(trace.packet(0).header().command_line(2), "caf\xc3\xa9");
  std::vector<std::string> interned;
  for (const auto& p : trace.packet()) {
    if (p.has_interned_string()) interned.push_back(p.interned_string().value());
  }
  EXPECT_THAT(interned, ::testing::ElementsAre("k??", "??", "???", "????",
                                             "ok\xf0\x9f\x98\x80"));
}

TEST(TraceWriterRoundTrip, InterningEmitsEachValueOnceBeforeFirstUse) {
  TempDir dir;
  const std::string path = dir.File("intern.wst");
  auto writer = OpenOrDie(Options(path));
  ASSERT_NE(writer, nullptr);
  const std::vector<std::string> names = {"gemm", "softmax", "gemm_", "Gemm", "\xce\xbb"};
  std::map<std::string, uint64_t> ids;
  LaunchConfigRecord a{.grid_x = 10, .block_x = 128, .registers_per_thread = 32};
  LaunchConfigRecord b = a;
  b.dynamic_shared_memory = 1;
  uint64_t config_a = 0, config_b = 0;
  for (int round = 0; round < 50; ++round) {
    for (const std::string& name : names) {
      // A std::string, a string_view into a bigger buffer and a C string all find the same id.
      const std::string padded = "[" + name + "]";
      const uint64_t id1 = writer->InternString(name);
      const uint64_t id2 = writer->InternString(std::string_view(padded).substr(1, name.size()));
      const uint64_t id3 = writer->InternString(name.c_str());
      ASSERT_NE(id1, 0u);
      EXPECT_EQ(id1, id2);
      EXPECT_EQ(id1, id3);
      auto [it, inserted] = ids.emplace(name, id1);
      if (!inserted) {
        EXPECT_EQ(it->second, id1);
      }
      const uint64_t ca = writer->InternLaunchConfig(a);
      const uint64_t cb = writer->InternLaunchConfig(b);
      if (round == 0 && name == names[0]) {
        config_a = ca;
        config_b = cb;
      }
      EXPECT_EQ(ca, config_a);
      EXPECT_EQ(cb, config_b);
      ASSERT_TRUE(writer->Write(KernelRecord{.name_id = id1, .launch_config_id = cb,
                                             .start_ns = kBase, .end_ns = kBase + 1}));
    }
    const uint64_t first = writer->InternThread(77, 1, "first");
    EXPECT_EQ(writer->InternThread(77, 2, "second"), first);
  }
  EXPECT_NE(config_a, config_b);
  EXPECT_NE(writer->InternThread(77), writer->InternThread(78));
  writer->Close(EndReason::kExit, kBase);

  const pb::Trace trace = ParseWholeFile(path);
  std::set<uint64_t> seen_strings, seen_configs;
  int string_packets = 0, config_packets = 0, thread_packets = 0;
  for (const auto& p : trace.packet()) {
    if (p.has_interned_string()) {
      ++string_packets;
      EXPECT_TRUE(seen_strings.insert(p.interned_string().id()).second);
      EXPECT_EQ(ids.at(p.interned_string().value()), p.interned_string().id());
    } else if (p.has_launch_config()) {
      ++config_packets;
      EXPECT_TRUE(seen_configs.insert(p.launch_config().id()).second);
    } else if (p.has_thread()) {
      ++thread_packets;
      if (p.thread().cupti_thread_id() == 77) {
        EXPECT_EQ(p.thread().name(), "first");
      }
    } else if (p.has_kernel()) {
      EXPECT_TRUE(seen_strings.count(p.kernel().name_id())) << "used before its definition";
      EXPECT_TRUE(seen_configs.count(p.kernel().launch_config_id()));
    }
  }
  EXPECT_EQ(string_packets, static_cast<int>(names.size()));
  EXPECT_EQ(config_packets, 2);
  EXPECT_EQ(thread_packets, 2);
}

TEST(TraceWriterRoundTrip, TinyChunksKeepPacketsWholeAndInOrder) {
  TempDir dir;
  const std::string path = dir.File("tiny.wst");
  TraceWriterOptions options = Options(path);
  options.chunk_bytes = 1;  // Raised to kMinChunkBytes.
  options.max_buffered_bytes = 64 << 20;
  auto writer = OpenOrDie(options);
  ASSERT_NE(writer, nullptr);
  constexpr uint32_t kEvents = 20000;
  for (uint32_t i = 0; i < kEvents; ++i) {
    TraceWriter::Batch batch(*writer);
    // Strings of growing size make packet sizes vary so that they end at every offset.
    const uint64_t name = batch.InternString("k" + std::string(i % 700, 'a'));
    ASSERT_NE(name, 0u);
    ASSERT_TRUE(batch.Write(KernelRecord{.name_id = name, .start_ns = kBase + i,
                                         .end_ns = kBase + i + 1, .correlation_id = i}));
  }
  writer->Close(EndReason::kExit, kBase);
  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  ASSERT_FALSE(stream.truncated);
  uint32_t next = 0;
  for (const auto& p : stream.packets) {
    EXPECT_LE(p.size, kMinChunkBytes);
    if (p.packet.has_kernel()) {
      EXPECT_EQ(p.packet.kernel().correlation_id(), next++);
    }
  }
  EXPECT_EQ(next, kEvents);
  EXPECT_TRUE(stream.packets.back().packet.has_end_of_trace());
}

TEST(TraceWriterRoundTrip, LargePcSampleBatchIsSplitAcrossPackets) {
  TempDir dir;
  const std::string path = dir.File("pc.wst");
  TraceWriterOptions options = Options(path);
  options.chunk_bytes = kMinChunkBytes;
  auto writer = OpenOrDie(options);
  ASSERT_NE(writer, nullptr);
  PcSampleBatchRecord batch{.device_id = 1, .context_id = 2, .timestamp_ns = kBase + 9,
                            .total_samples = 123456, .dropped_samples = 7,
                            .non_user_kernel_samples = 8, .hardware_buffer_full = true,
                            .records = {}};
  for (uint32_t i = 0; i < 600; ++i) {
    PcSampleRecord r{.cubin_crc = 0xabcdef00u + i, .function_name_id = 3, .pc_offset = i * 16u,
                     .stall_reason_index = {}, .samples = {}, .correlation_id = 0};
    for (uint32_t k = 0; k < 10; ++k) {
      r.stall_reason_index.push_back(k);
      r.samples.push_back(i * 10 + k);
    }
    batch.records.push_back(r);
  }
  // One record that cannot fit any chunk: dropped and counted, its neighbours kept.
  PcSampleRecord huge{.cubin_crc = 1, .function_name_id = 3, .pc_offset = 0,
                      .stall_reason_index = {}, .samples = {}, .correlation_id = 0};
  for (uint32_t k = 0; k < 2000; ++k) {
    huge.stall_reason_index.push_back(k);
    huge.samples.push_back(k);
  }
  batch.records.insert(batch.records.begin() + 300, huge);
  EXPECT_FALSE(writer->Write(batch));  // Not everything was written.
  EXPECT_EQ(writer->Counter(kStatDroppedTooLarge), 1u);
  EXPECT_EQ(writer->Counter(kStatPcBatchesSplit), 1u);
  writer->Close(EndReason::kExit, kBase);

  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  std::vector<pb::PcSampleRecord> records;
  int parts = 0;
  uint64_t total_samples = 0;
  for (const auto& p : stream.packets) {
    if (!p.packet.has_pc_samples()) continue;
    const pb::PcSampleBatch& part = p.packet.pc_samples();
    EXPECT_LE(p.size, kMinChunkBytes);
    EXPECT_EQ(part.device_id(), 1u);
    EXPECT_EQ(part.context_id(), 2u);
    EXPECT_EQ(part.timestamp_ns(), 9u);
    // Totals only in the first part, so that sums over packets stay right.
    EXPECT_EQ(part.hardware_buffer_full(), parts == 0);
    EXPECT_EQ(part.continuation(), parts != 0);
    total_samples += part.total_samples();
    for (const auto& r : part.records()) records.push_back(r);
    ++parts;
  }
  EXPECT_GT(parts, 5);
  EXPECT_EQ(total_samples, 123456u);
  ASSERT_EQ(records.size(), 600u);
  for (uint32_t i = 0; i < 600; ++i) {
    EXPECT_EQ(records[i].cubin_crc(), 0xabcdef00u + i);
    ASSERT_EQ(records[i].samples_size(), 10);
    EXPECT_EQ(records[i].samples(9), i * 10 + 9);
  }
  auto stats = stream.packets[stream.packets.size() - 2].packet.stats();
  EXPECT_EQ(StatValue(stats, std::string(kStatDroppedTooLarge)), 1u);
  EXPECT_EQ(StatValue(stats, std::string(kStatPcBatchesSplit)), 1u);
}

TEST(TraceWriterRoundTrip, CubinLargerThanAChunkIsStoredInPartsThatJoinToTheImage) {
  TempDir dir;
  const std::string path = dir.File("cubin.wst");
  TraceWriterOptions options = Options(path);
  options.chunk_bytes = kMinChunkBytes;
  auto writer = OpenOrDie(options);
  ASSERT_NE(writer, nullptr);
  std::string small = "\x7f" "ELF small";
  std::string large(3 * kMinChunkBytes + 123, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7);
  EXPECT_TRUE(writer->Write(CubinImageRecord{0x11, 2, small.data(), small.size()}));
  EXPECT_TRUE(writer->Write(CubinImageRecord{0x22, 3, large.data(), large.size()}));
  writer->Close(EndReason::kExit, kBase);

  const testing::PacketStream stream = ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  std::map<uint64_t, std::string> joined;
  std::map<uint64_t, int> parts;
  for (const auto& p : stream.packets) {
    if (!p.packet.has_cubin()) continue;
    const pb::CubinImage& c = p.packet.cubin();
    EXPECT_LE(p.size, kMinChunkBytes);
    EXPECT_EQ(c.offset(), joined[c.crc()].size());  // in order, no gaps
    EXPECT_EQ(c.total_bytes(), c.crc() == 0x11 ? small.size() : large.size());
    EXPECT_EQ(c.device_id(), c.crc() == 0x11 ? 2u : 3u);
    joined[c.crc()] += c.image();
    ++parts[c.crc()];
  }
  EXPECT_EQ(joined[0x11], small);
  EXPECT_EQ(joined[0x22], large);
  EXPECT_EQ(parts[0x11], 1);
  EXPECT_EQ(parts[0x22], 4);
  EXPECT_EQ(StatValue(stream.packets[stream.packets.size() - 2].packet.stats(),
                      "writer.events_written.cubin"),
            5u);
}

TEST(TraceWriterRoundTrip, OversizedPacketsOtherThanPcSamplesAreDroppedAndCounted) {
  TempDir dir;
  const std::string path = dir.File("big.wst");
  TraceWriterOptions options = Options(path);
  options.chunk_bytes = kMinChunkBytes;
  auto writer = OpenOrDie(options);
  ASSERT_NE(writer, nullptr);
  const std::string huge(kMinChunkBytes, 'z');
  EXPECT_EQ(writer->InternString(huge), 0u);
  EXPECT_FALSE(writer->WriteNotice(Severity::kInfo, "test", huge, kBase));
  PmSampleRecord sample{.metric_set_id = 1, .start_ns = kBase, .end_ns = kBase + 1,
                        .values = std::vector<double>(1000, 1.0)};
  EXPECT_FALSE(writer->Write(sample));
  EXPECT_EQ(writer->Counter(kStatDroppedTooLarge), 3u);
  // A later small string still gets id 1: the failed one consumed no id.
  EXPECT_EQ(writer->InternString("small"), 1u);
  writer->Close(EndReason::kExit, kBase);
  const pb::Trace trace = ParseWholeFile(path);
  auto strings = Select(trace, [](const auto& p) { return p.has_interned_string(); });
  ASSERT_EQ(strings.size(), 1u);
  EXPECT_EQ(strings[0]->interned_string().value(), "small");
}

TEST(TraceWriterRoundTrip, CountersAppearInStats) {
  TempDir dir;
  const std::string path = dir.File("counters.wst");
  auto writer = OpenOrDie(Options(path));
  ASSERT_NE(writer, nullptr);
  {
    TraceWriter::Batch batch(*writer);
    // Counter methods do not take the writer lock, so this must not deadlock.
    writer->AddToCounter("cupti.dropped_records", 5, Severity::kDataLoss);
    batch.Write(KernelRecord{.start_ns = kBase, .end_ns = kBase});
    writer->AddToCounter("cupti.dropped_records", 2, Severity::kDataLoss);
    EXPECT_EQ(writer->Counter("cupti.dropped_records"), 7u);
    EXPECT_EQ(writer->Counter("writer.events_written.kernel"), 1u);
  }
  writer->SetCounter("pm.high_water", 10, Severity::kInfo);
  writer->SetCounter("pm.high_water", 4, Severity::kInfo);
  writer->AddToCounter(kStatDroppedBufferFull, 3, Severity::kDataLoss);  // Adds to the writer's.
  EXPECT_EQ(writer->Counter(kStatDroppedBufferFull), 3u);
  EXPECT_EQ(writer->Counter("never.set"), 0u);
  writer->Close(EndReason::kExit, kBase);

  const pb::Trace trace = ParseWholeFile(path);
  auto stats = Select(trace, [](const auto& p) { return p.has_stats(); });
  ASSERT_EQ(stats.size(), 1u);
  const pb::Stats& s = stats[0]->stats();
  EXPECT_EQ(StatValue(s, "cupti.dropped_records"), 7u);
  EXPECT_EQ(StatValue(s, "pm.high_water"), 4u);
  EXPECT_EQ(StatValue(s, std::string(kStatDroppedBufferFull)), 3u);
  int buffer_full_entries = 0;
  for (const auto& c : s.counters()) {
    if (c.name() == "cupti.dropped_records") {
      EXPECT_EQ(c.severity(), pb::SEVERITY_DATA_LOSS);
    }
    if (c.name() == kStatDroppedBufferFull) ++buffer_full_entries;
  }
  EXPECT_EQ(buffer_full_entries, 1);
}

}  // namespace
}  // namespace warpscope
