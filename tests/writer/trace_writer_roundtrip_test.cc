// Round-trip tests of the TraceWriter's encoding: enums, the order of header, stats and end,
// timestamps, strings, interning, chunking and splitting, read back with the generated protobuf
// classes. trace_writer_every_record_test.cc writes every record type field by field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"
#include "tests/writer/writer_test_support.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using namespace writer_test;  // NOLINT(build/namespaces): the helpers all writer tests share.

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
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kControl), pb::CAPTURE_TRIGGER_CONTROL);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kLimit), pb::CAPTURE_TRIGGER_LIMIT);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kSlowStep), pb::CAPTURE_TRIGGER_SLOW_STEP);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kCrash), pb::CAPTURE_TRIGGER_CRASH);
  EXPECT_EQ(static_cast<int>(CaptureTrigger::kFlightRecorder),
            pb::CAPTURE_TRIGGER_FLIGHT_RECORDER);
  EXPECT_EQ(pb::CaptureTrigger_descriptor()->value_count(), 13);

  EXPECT_EQ(static_cast<int>(Severity::kInfo), pb::SEVERITY_INFO);
  EXPECT_EQ(static_cast<int>(Severity::kDataLoss), pb::SEVERITY_DATA_LOSS);
  EXPECT_EQ(static_cast<int>(Severity::kError), pb::SEVERITY_ERROR);
  EXPECT_EQ(pb::Severity_descriptor()->value_count(), 3);

  EXPECT_EQ(static_cast<int>(EndReason::kUnknown), pb::END_REASON_UNKNOWN);
  EXPECT_EQ(static_cast<int>(EndReason::kExit), pb::END_REASON_EXIT);
  EXPECT_EQ(static_cast<int>(EndReason::kSignal), pb::END_REASON_SIGNAL);
  EXPECT_EQ(static_cast<int>(EndReason::kWriteError), pb::END_REASON_WRITE_ERROR);
  EXPECT_EQ(static_cast<int>(EndReason::kDetach), pb::END_REASON_DETACH);
  EXPECT_EQ(static_cast<int>(EndReason::kNextFile), pb::END_REASON_NEXT_FILE);
  EXPECT_EQ(static_cast<int>(EndReason::kDump), pb::END_REASON_DUMP);
  EXPECT_EQ(static_cast<int>(EndReason::kCrash), pb::END_REASON_CRASH);
  EXPECT_EQ(pb::EndReason_descriptor()->value_count(), 8);
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
  EXPECT_EQ(h.format_minor(), 7u);
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
  EXPECT_EQ(h.display_driver_version(), "580.159.04");
  EXPECT_EQ(h.job_id(), "TORCHELASTIC_RUN_ID=job-17");

  const pb::TracePacket& stats = stream.packets[1].packet;
  ASSERT_TRUE(stats.has_stats());
  EXPECT_TRUE(stats.stats().final());
  EXPECT_EQ(stats.stats().timestamp_ns(), 777u);
  // The always-present counters are there even at zero.
  for (std::string_view name :
       {stats::kWriterEventsWritten.name, stats::kWriterBytesWritten.name,
        stats::kWriterDroppedBufferFull.name, stats::kWriterDroppedWriteError.name,
        stats::kWriterBufferHighWater.name}) {
    EXPECT_TRUE(HasStat(stats.stats(), std::string(name))) << name;
  }
  EXPECT_EQ(StatValue(stats.stats(), std::string(stats::kWriterBytesWritten.name)),
            stream.packets[1].offset);
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
  EXPECT_EQ(writer->Counter(stats::kWriterTimestampsClamped.name), 3u);
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
  EXPECT_EQ(StatValue(stats[0]->stats(), std::string(stats::kWriterTimestampsClamped.name)), 3u);
  for (const auto& c : stats[0]->stats().counters()) {
    if (c.name() == stats::kWriterTimestampsClamped.name) {
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
  EXPECT_EQ(writer->Counter(stats::kWriterDroppedTooLarge.name), 1u);
  EXPECT_EQ(writer->Counter(stats::kWriterPcBatchesSplit.name), 1u);
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
  EXPECT_EQ(StatValue(stats, std::string(stats::kWriterDroppedTooLarge.name)), 1u);
  EXPECT_EQ(StatValue(stats, std::string(stats::kWriterPcBatchesSplit.name)), 1u);
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
  EXPECT_EQ(writer->Counter(stats::kWriterDroppedTooLarge.name), 3u);
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
  writer->AddToCounter(stats::kWriterDroppedBufferFull.name, 3,
                       Severity::kDataLoss);  // Adds to the writer's.
  EXPECT_EQ(writer->Counter(stats::kWriterDroppedBufferFull.name), 3u);
  EXPECT_EQ(writer->Counter("never.set"), 0u);
  writer->Close(EndReason::kExit, kBase);

  const pb::Trace trace = ParseWholeFile(path);
  auto stats = Select(trace, [](const auto& p) { return p.has_stats(); });
  ASSERT_EQ(stats.size(), 1u);
  const pb::Stats& s = stats[0]->stats();
  EXPECT_EQ(StatValue(s, "cupti.dropped_records"), 7u);
  EXPECT_EQ(StatValue(s, "pm.high_water"), 4u);
  EXPECT_EQ(StatValue(s, std::string(stats::kWriterDroppedBufferFull.name)), 3u);
  int buffer_full_entries = 0;
  for (const auto& c : s.counters()) {
    if (c.name() == "cupti.dropped_records") {
      EXPECT_EQ(c.severity(), pb::SEVERITY_DATA_LOSS);
    }
    if (c.name() == stats::kWriterDroppedBufferFull.name) ++buffer_full_entries;
  }
  EXPECT_EQ(buffer_full_entries, 1);
}

}  // namespace
}  // namespace warpscope
