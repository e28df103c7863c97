// What the writer's tests share: headers (one with edge values, one minimal), writer options
// without periodic stats, and reading a whole file back as one Trace message.
#ifndef WARPSCOPE_TESTS_WRITER_WRITER_TEST_SUPPORT_H_
#define WARPSCOPE_TESTS_WRITER_WRITER_TEST_SUPPORT_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "proto/writer/trace_writer.h"
#include "tests/writer/packet_stream.h"  // Also the generated trace classes.

namespace warpscope::writer_test {

namespace pb = ::warpscope::v1;
// The packet readers of packet_stream.h, for `using namespace writer_test`.
using testing::HasStat;
using testing::ParsePacketFile;
using testing::ParsePacketStream;
using testing::ReadFileBytes;
using testing::StatValue;
using testing::TempDir;

inline constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
inline constexpr uint32_t kMax32 = std::numeric_limits<uint32_t>::max();
inline constexpr uint64_t kBase = 1'000'000'000'000ull;  // time_base_ns of most tests.

inline HeaderRecord TestHeader(uint64_t time_base = kBase) {
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
  h.display_driver_version = "580.159.04";
  h.job_id = "TORCHELASTIC_RUN_ID=job-17";
  return h;
}

inline std::unique_ptr<TraceWriter> OpenOrDie(const TraceWriterOptions& options,
                                              const HeaderRecord& header = TestHeader()) {
  std::string error;
  auto writer = TraceWriter::Open(options, header, &error);
  EXPECT_NE(writer, nullptr) << error;
  return writer;
}

inline TraceWriterOptions Options(const std::string& path) {
  TraceWriterOptions o;
  o.path = path;
  o.stats_interval_ms = 0;  // Deterministic contents unless a test wants periodic stats.
  return o;
}

// A header with only what a reader needs, for the tests of the writer's file behaviour.
inline HeaderRecord MinimalHeader(uint64_t time_base) {
  HeaderRecord h;
  h.tool_version = "0.1.0-test";
  h.pid = 1;
  h.clock_domain = ClockDomain::kMonotonic;
  h.time_base_ns = time_base;
  h.producer = "test";
  return h;
}

// A 100 ns kernel on stream 7 that starts `correlation` ns after `time_base`.
inline KernelRecord KernelAt(uint64_t time_base, uint32_t correlation, uint64_t name_id = 0) {
  return KernelRecord{.name_id = name_id, .start_ns = time_base + correlation,
                      .end_ns = time_base + correlation + 100, .stream_id = 7,
                      .correlation_id = correlation};
}

// The tests of the writer's file behaviour (trace_writer_io_test, trace_writer_buffering_test):
// their time base, header and kernels.
inline constexpr uint64_t kFileTestBase = 5'000'000'000ull;
inline HeaderRecord FileTestHeader() { return MinimalHeader(kFileTestBase); }
inline KernelRecord FileTestKernel(uint32_t correlation, uint64_t name_id = 0) {
  return KernelAt(kFileTestBase, correlation, name_id);
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

inline pb::Trace ParseWholeFile(const std::string& path) {
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(testing::ReadFileBytes(path)));
  return trace;
}

}  // namespace warpscope::writer_test

#endif  // WARPSCOPE_TESTS_WRITER_WRITER_TEST_SUPPORT_H_
