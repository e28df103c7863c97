// TraceReader: whole files, every error path (missing, unreadable, not a regular file, too
// large, compressed, not a trace, newer format, corrupt framing), truncation at every byte
// offset, and undefined interned ids.
#include "analyzers/model/trace_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using namespace ::warpscope::testing;  // NOLINT(build/namespaces): the test helpers.

constexpr char kHeader[] =
    "packet { header { format_major: 1 format_minor: 0 producer: \"t\" } }\n";

struct ReadResult {
  std::vector<v1::TracePacket::DataCase> kinds;
  absl::Status status;  // of the first failing Next(), or OK
  std::unique_ptr<TraceReader> reader;
};

ReadResult ReadAll(std::unique_ptr<TraceReader> reader) {
  ReadResult result;
  while (true) {
    absl::StatusOr<const v1::TracePacket*> packet = reader->Next();
    if (!packet.ok()) {
      result.status = packet.status();
      break;
    }
    if (*packet == nullptr) break;
    result.kinds.push_back((*packet)->data_case());
  }
  result.reader = std::move(reader);
  return result;
}

ReadResult ReadBuffer(const std::string& wire) {
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::FromBuffer(wire, "t.wst");
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  return ReadAll(std::move(*reader));
}

TEST(TraceReaderTest, ReadsEveryPacketOfACompleteTrace) {
  const std::string wire = FixtureWire("synthetic/basic.textproto");
  const std::string path = WriteTempFile(wire);
  for (bool use_mmap : {true, false}) {
    absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path, {use_mmap});
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->header().producer(), "fixture:basic");
    EXPECT_EQ((*reader)->file_size(), wire.size());
    ReadResult r = ReadAll(std::move(*reader));
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.kinds.size(), PacketBoundaries(wire).size() - 1);
    EXPECT_EQ(r.kinds.front(), v1::TracePacket::kHeader);
    EXPECT_EQ(r.kinds.back(), v1::TracePacket::kEndOfTrace);
    const TruncationInfo& t = r.reader->truncation();
    EXPECT_FALSE(t.truncated());
    EXPECT_EQ(t.Describe(), "");
    EXPECT_EQ(r.reader->counters().bytes, wire.size());
    EXPECT_EQ(r.reader->counters().undefined_string_refs, 0u);
    EXPECT_EQ(r.reader->strings().Get(6), "gemm_kernel(float const*, float const*, float*, int)");
    ASSERT_NE(r.reader->FindLaunchConfig(1), nullptr);
    EXPECT_EQ(r.reader->FindLaunchConfig(1)->grid_x(), 264u);
    ASSERT_NE(r.reader->FindThread(1), nullptr);
    EXPECT_EQ(r.reader->FindThread(1)->name(), "python");
    // Next() after the end keeps saying "end".
    absl::StatusOr<const v1::TracePacket*> again = r.reader->Next();
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, nullptr);
  }
}

TEST(TraceReaderTest, WholeFileAlsoParsesAsOneTraceMessage) {
  const std::string wire = FixtureWire("synthetic/basic.textproto");
  v1::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(wire));
  EXPECT_EQ(static_cast<size_t>(trace.packet_size()), PacketBoundaries(wire).size() - 1);
}

TEST(TraceReaderTest, MissingFileNamesTheOsError) {
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open("/nonexistent/x.wst");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("cannot open /nonexistent/x.wst"));
  EXPECT_THAT(r.status().message(), HasSubstr("No such file or directory"));
}

TEST(TraceReaderTest, UnreadableFileNamesTheOsError) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files regardless of their mode";
  const std::string path = WriteTempFile(FixtureWire("synthetic/basic.textproto"));
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(r.status().message(), HasSubstr("Permission denied"));
}

TEST(TraceReaderTest, DirectoryIsNotATrace) {
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open("/tmp");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("/tmp is a directory, not a trace file"));
}

TEST(TraceReaderTest, DeviceIsRefusedWithoutReadingIt) {
  // /dev/zero never ends: reading it would take all memory.
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open("/dev/zero");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "/dev/zero is a character device, not a trace file: give the path of a .wst file");
}

TEST(TraceReaderTest, FifoIsRefusedWithoutWaitingForAWriter) {
  // Nobody writes to this FIFO: a blocking open would wait forever.
  const std::string path = WriteTempFile("", "fifo");
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(path + " is a FIFO (named pipe), not a trace file"));
}

TEST(TraceReaderTest, CompressedTracesGetAHint) {
  struct Case {
    std::string bytes;
    const char* says;
  };
  const Case cases[] = {
      {std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10),
       "looks gzip-compressed, not a warpscope trace: gunzip it first"},
      {std::string("\x28\xb5\x2f\xfd\x24\x00", 6),
       "looks zstd-compressed, not a warpscope trace: unzstd it first"},
      {std::string("\xfd\x37\x7a\x58\x5a\x00\x00\x04", 8),
       "looks xz-compressed, not a warpscope trace: unxz it first"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open(WriteTempFile(c.bytes));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.says));
  }
}

TEST(TraceReaderTest, FileLargerThanTheLimitIsRefused) {
  const std::string wire = FixtureWire("synthetic/basic.textproto");
  const std::string path = WriteTempFile(wire);
  for (bool use_mmap : {true, false}) {
    TraceReaderOptions options;
    options.use_mmap = use_mmap;
    options.max_file_bytes = wire.size() - 1;
    absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open(path, options);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(r.status().message(), HasSubstr("set WARPSCOPE_MAX_TRACE_GB"));
    options.max_file_bytes = wire.size();
    EXPECT_TRUE(TraceReader::Open(path, options).ok());
  }
}

TEST(TraceReaderTest, SizeLimitFromTheEnvironment) {
  const std::string path = WriteTempFile(FixtureWire("synthetic/basic.textproto"));
  ASSERT_EQ(setenv(kMaxTraceSizeEnv, "1", 1), 0);
  EXPECT_TRUE(TraceReader::Open(path).ok());
  ASSERT_EQ(setenv(kMaxTraceSizeEnv, "16G", 1), 0);
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("WARPSCOPE_MAX_TRACE_GB='16G' is not a whole number of GiB"));
  ASSERT_EQ(unsetenv(kMaxTraceSizeEnv), 0);
}

TEST(TraceReaderTest, EmptyFileSaysSo) {
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open(WriteTempFile(""));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("is empty: not a warpscope trace"));
}

TEST(TraceReaderTest, PngIsNotATrace) {
  const std::string png("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open(WriteTempFile(png));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("is not a warpscope trace"));
  EXPECT_THAT(r.status().message(), HasSubstr(R"((it starts "\x89PNG\x0d\x0a\x1a\x0a"))"));
  EXPECT_THAT(r.status().message(), HasSubstr("found 0x89 0x50 (field 1281"));
}

TEST(TraceReaderTest, TextFileIsNotATrace) {
  absl::StatusOr<std::unique_ptr<TraceReader>> r =
      TraceReader::Open(WriteTempFile("Hello, this is a README.\n"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("is not a warpscope trace"));
}

TEST(TraceReaderTest, FirstPacketMustBeAHeader) {
  const std::string wire =
      TextprotoToWire("packet { interned_string { id: 1 value: \"x\" } }\n" + std::string(kHeader));
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::FromBuffer(wire, "t.wst");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("not a warpscope trace: expected a header as the first packet"));
}

TEST(TraceReaderTest, HeaderWithoutVersionIsNotATrace) {
  absl::StatusOr<std::unique_ptr<TraceReader>> r =
      TraceReader::FromBuffer(TextprotoToWire("packet { header { pid: 1 } }"), "t.wst");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("format_major 0"));
}

TEST(TraceReaderTest, RefusesNewerFormatMajor) {
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::FromBuffer(
      TextprotoToWire("packet { header { format_major: 2 format_minor: 0 } }"), "new.wst");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "new.wst: trace format 2.x is newer than this warpscope reads (1.x); upgrade "
            "warpscope");
}

TEST(TraceReaderTest, AcceptsNewerMinorAndCountsWhatItDoesNotKnow) {
  std::string wire = TextprotoToWire(
      "packet { header { format_major: 1 format_minor: 7 } }\n"
      "packet { end_of_trace { reason: END_REASON_EXIT } }");
  // A packet whose only field (99, a string) is a kind this reader does not know, and a
  // kernel packet with an extra unknown field 50.
  wire += std::string("\x0a\x05\x9a\x06\x02hi", 7);
  wire += std::string("\x0a\x05\x3a\x00\x90\x03\x01", 7);
  ReadResult r = ReadBuffer(wire);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.kinds.size(), 4u);
  EXPECT_EQ(r.reader->header().format_minor(), 7u);
  EXPECT_EQ(r.reader->counters().unknown_packets, 1u);
  EXPECT_EQ(r.reader->counters().packets_with_unknown_fields, 1u);
  EXPECT_EQ(r.reader->truncation().packets_after_end, 2u);
}

TEST(TraceReaderTest, BadTagMidFileIsDataLossAtItsOffset) {
  std::string wire = TextprotoToWire(kHeader);
  const size_t offset = wire.size();
  wire += std::string("\x08\x01", 2);  // field 1 as a varint
  ReadResult r = ReadBuffer(wire);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(),
              HasSubstr(absl::StrCat("t.wst: corrupt data at byte offset ", offset,
                                     ": expected a packet (field 1, length-delimited: byte "
                                     "0x0a), found 0x08 (field 1, wire type varint)")));
  EXPECT_EQ(r.kinds.size(), 1u);  // the header still came out
}

TEST(TraceReaderTest, MalformedVarintTagIsDataLoss) {
  std::string wire = TextprotoToWire(kHeader) + std::string(11, '\xff');
  ReadResult r = ReadBuffer(wire);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(), HasSubstr("malformed varint"));
}

TEST(TraceReaderTest, OversizedLengthIsDataLossNotTruncation) {
  std::string wire = TextprotoToWire(kHeader);
  const size_t offset = wire.size();
  wire += std::string("\x0a\xff\xff\xff\xff\x0f", 6);  // 4 GiB
  ReadResult r = ReadBuffer(wire);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(), HasSubstr(absl::StrCat("byte offset ", offset)));
  EXPECT_THAT(r.status.message(), HasSubstr("claims 4294967295 bytes"));
}

TEST(TraceReaderTest, UnparsablePacketIsDataLossAtItsOffset) {
  std::string wire = TextprotoToWire(kHeader);
  const size_t offset = wire.size();
  wire += std::string("\x0a\x02\x3f\x00", 4);  // field 7 with wire type 7: invalid
  ReadResult r = ReadBuffer(wire);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      r.status.message(),
      HasSubstr(absl::StrCat("byte offset ", offset, ": the 2-byte packet there does not parse")));
}

TEST(TraceReaderTest, MissingEndOfTraceIsReported) {
  ReadResult r = ReadBuffer(FixtureWire("synthetic/killed.textproto"));
  ASSERT_TRUE(r.status.ok());
  const TruncationInfo& t = r.reader->truncation();
  EXPECT_TRUE(t.truncated());
  EXPECT_FALSE(t.partial_packet);
  EXPECT_EQ(t.Describe(), "ended without an end-of-trace marker (process killed?)");
}

// Every prefix of a complete trace: all whole packets come out, the partial one is reported
// with its offset and size, and nothing crashes.
TEST(TraceReaderTest, TruncationAtEveryByteOffset) {
  const std::string wire = FixtureWire("synthetic/basic.textproto");
  const std::vector<uint64_t> bounds = PacketBoundaries(wire);
  for (uint64_t n = 0; n <= wire.size(); ++n) {
    SCOPED_TRACE(absl::StrCat("prefix of ", n, " bytes"));
    const std::string prefix = wire.substr(0, n);
    absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::FromBuffer(prefix, "t");
    if (n == 0) {
      EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    if (n < bounds[1]) {  // inside the header
      EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(reader.status().message(), HasSubstr("ends inside its first packet"));
      continue;
    }
    ASSERT_TRUE(reader.ok()) << reader.status();
    ReadResult r = ReadAll(std::move(*reader));
    ASSERT_TRUE(r.status.ok()) << r.status;
    size_t whole = 0;
    while (whole + 1 < bounds.size() && bounds[whole + 1] <= n) ++whole;
    EXPECT_EQ(r.kinds.size(), whole);
    const TruncationInfo& t = r.reader->truncation();
    const bool on_boundary = bounds[whole] == n;
    EXPECT_EQ(t.partial_packet, !on_boundary);
    if (!on_boundary) {
      EXPECT_EQ(t.partial_offset, bounds[whole]);
      EXPECT_EQ(t.bytes_lost, n - bounds[whole]);
      EXPECT_THAT(t.Describe(), HasSubstr(absl::StrCat("at byte ", bounds[whole])));
    }
    EXPECT_EQ(t.saw_end_of_trace, n == wire.size());
    EXPECT_EQ(t.truncated(), n != wire.size());
  }
}

TEST(TraceReaderTest, UndefinedIdsAreCountedAndNamed) {
  const std::string wire = TextprotoToWire(std::string(kHeader) + R"(
    packet { kernel { name_id: 99 mangled_name_id: 99 launch_config_id: 42 } }
    packet { api_call { name_id: 5 thread_id: 7 } }
    packet { interned_string { id: 5 value: "late" } }
    packet { nvtx_range { name_id: 5 domain_id: 1234567890123 thread_id: 7 end_thread_id: 8 } }
    packet { pc_samples { records { function_name_id: 98 } } }
  )");
  ReadResult r = ReadBuffer(wire);
  ASSERT_TRUE(r.status.ok());
  const ReaderCounters& c = r.reader->counters();
  EXPECT_EQ(c.undefined_string_refs, 5u);  // 99 twice, 5 once (before its definition), ...
  EXPECT_EQ(c.undefined_launch_config_refs, 1u);
  EXPECT_EQ(c.undefined_thread_refs, 3u);
  EXPECT_EQ(r.reader->strings().Get(99), "<unknown:99>");
  EXPECT_EQ(r.reader->strings().Get(98), "<unknown:98>");
  EXPECT_EQ(r.reader->strings().Get(1234567890123), "<unknown:1234567890123>");
  EXPECT_EQ(r.reader->strings().Get(5), "late");
  EXPECT_EQ(r.reader->strings().Get(0), "");
  EXPECT_EQ(r.reader->strings().Get(31337), "<unknown>");
  EXPECT_EQ(r.reader->FindLaunchConfig(42), nullptr);
}

TEST(TraceReaderTest, RedefinitionsWithADifferentValueAreCounted) {
  const std::string wire = TextprotoToWire(std::string(kHeader) + R"(
    packet { interned_string { id: 1 value: "a" } }
    packet { interned_string { id: 1 value: "a" } }
    packet { interned_string { id: 1 value: "b" } }
    packet { launch_config { id: 1 grid_x: 1 } }
    packet { launch_config { id: 1 grid_x: 1 } }
    packet { thread { id: 1 os_tid: 1 } }
    packet { thread { id: 1 os_tid: 2 } }
    packet { header { format_major: 1 } }
  )");
  ReadResult r = ReadBuffer(wire);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.reader->counters().redefined_ids, 2u);
  EXPECT_EQ(r.reader->counters().extra_headers, 1u);
  EXPECT_EQ(r.reader->strings().Get(1), "b");
  EXPECT_EQ(r.reader->FindThread(1)->os_tid(), 2u);
}

// proto3 strings must be UTF-8; the writer copies argv and NVTX names as given. The reader
// repairs such strings instead of losing the rest of the file.
TEST(TraceReaderTest, RepairsStringsThatAreNotUtf8) {
  std::string wire = TextprotoToWire(R"(
    packet { header { format_major: 1 command_line: "caf\351" } }
    packet { interned_string { id: 1 value: "range \377\376 \xc3\xa9" } }
    packet { nvtx_range { name_id: 1 } }
    packet { end_of_trace {} }
  )");
  ReadResult r = ReadBuffer(wire);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.kinds.size(), 4u);
  EXPECT_EQ(r.reader->header().command_line(0), "caf?");
  EXPECT_EQ(r.reader->strings().Get(1), "range ?? \xc3\xa9");
  EXPECT_EQ(r.reader->counters().invalid_utf8_strings, 2u);
}

TEST(InternedStringsTest, StrayIdsMoveIntoTheDenseTableAsItGrows) {
  InternedStrings strings;
  strings.Define(100000, "stray");  // far from the dense table: kept in the map
  EXPECT_TRUE(strings.MarkUndefined(90000));
  strings.Define(40000, "forty");  // near: the dense table grows to it
  strings.Define(100001, "next");  // the dense table now covers the strays
  EXPECT_EQ(strings.Get(100000), "stray");
  EXPECT_TRUE(strings.IsDefined(100000));
  EXPECT_EQ(strings.Get(90000), "<unknown:90000>");
  EXPECT_FALSE(strings.IsDefined(90000));
  EXPECT_FALSE(strings.MarkUndefined(90000));  // already named
  strings.Define(90000, "late");
  EXPECT_EQ(strings.Get(90000), "late");
  EXPECT_EQ(strings.Get(40000), "forty");
  EXPECT_EQ(strings.Get(100001), "next");
  EXPECT_EQ(strings.Get(uint64_t{1} << 60), "<unknown>");
  EXPECT_EQ(strings.num_defined(), 4u);
}

TEST(TraceReaderTest, InternedStringViewsStayValidAsTheTableGrows) {
  std::string text = kHeader;
  for (int i = 1; i <= 2000; ++i) {
    absl::StrAppend(&text, "packet { interned_string { id: ", i, " value: \"s", i, "\" } }\n");
  }
  ReadResult r = ReadBuffer(TextprotoToWire(text));
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.reader->strings().num_defined(), 2000u);
  EXPECT_EQ(r.reader->strings().Get(1), "s1");
  EXPECT_EQ(r.reader->strings().Get(2000), "s2000");
}

}  // namespace
}  // namespace warpscope
