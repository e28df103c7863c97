// TraceReader: streams the packets of a .wst file one by one, checks the header and the
// framing, keeps the interned tables (strings, launch configs, threads) as it goes and says
// how a file that was cut short ends. See docs/format.md for the format it reads.
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_READER_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_READER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/settings/settings.h"
#include "warpscope/v1/trace.pb.h"

namespace google::protobuf {
class Arena;
}  // namespace google::protobuf

namespace warpscope {

// The format version this reader understands. Files with a newer major are refused; newer
// minors are read (unknown fields and packet kinds are skipped and counted).
inline constexpr uint32_t kReaderFormatMajor = 1;
inline constexpr uint32_t kReaderFormatMinor = 7;

// A packet larger than this is treated as corruption, not as a packet cut short: the writer
// never produces packets near this size (they must fit in one writer chunk).
inline constexpr uint64_t kMaxPacketBytes = 256ull << 20;

// Interned strings by id, with stable storage: the string_views it hands out stay valid for
// as long as the table lives, so a TraceModel can keep the table (shared) after the reader
// and its file are gone.
class InternedStrings {
 public:
  // Defines (or redefines) `id`. Id 0 means "no string" and is ignored.
  void Define(uint64_t id, std::string_view value);
  // True when `id` was defined by an InternedString packet.
  bool IsDefined(uint64_t id) const;
  // The string for `id`: "" for 0, the value when defined, "<unknown:ID>" once
  // MarkUndefined(id) was called, and "<unknown>" for an id never seen.
  std::string_view Get(uint64_t id) const;
  // Records a reference to an id that has no definition yet, so that Get(id) names it
  // "<unknown:ID>" from now on. Returns true the first time for a given id.
  bool MarkUndefined(uint64_t id);
  size_t num_defined() const { return num_defined_; }

 private:
  // Dense ids (the writer numbers from 1) index a vector; stray large ids go to a map so
  // that a corrupt id cannot make us allocate gigabytes.
  static constexpr uint64_t kMaxDenseId = 1u << 24;
  static constexpr uint64_t kDenseSlack = 1u << 16;
  std::string_view* Slot(uint64_t id, bool create);
  const std::string_view* Slot(uint64_t id) const;

  std::deque<std::string> storage_;  // deque: push_back never moves existing strings
  std::vector<std::string_view> dense_;
  std::vector<uint8_t> dense_defined_;
  std::unordered_map<uint64_t, std::string_view> sparse_;
  std::unordered_map<uint64_t, bool> sparse_defined_;  // key present = defined
  size_t num_defined_ = 0;
};

// How the stream ended. A complete trace ends with an EndOfTrace packet after its last whole
// packet; a trace killed mid-write ends inside a packet.
struct TruncationInfo {
  bool saw_end_of_trace = false;
  bool partial_packet = false;     // The file ends inside a packet.
  uint64_t partial_offset = 0;     // Byte offset where that packet starts.
  uint64_t bytes_lost = 0;         // Bytes after the last whole packet.
  uint64_t packets_after_end = 0;  // Whole packets after EndOfTrace (should be 0).

  bool truncated() const { return partial_packet || !saw_end_of_trace; }
  // One line for users, e.g. "ended without an end-of-trace marker (process killed?); the
  // last packet, at byte 1234, is incomplete (56 bytes lost)". Empty when complete.
  std::string Describe() const;
};

// Problems the reader met that do not stop reading (the Perfetto habit: count, don't throw).
struct ReaderCounters {
  uint64_t packets = 0;                // Whole packets read, header included.
  uint64_t bytes = 0;                  // Bytes of whole packets, framing included.
  uint64_t undefined_string_refs = 0;  // References to string ids with no definition yet.
  uint64_t undefined_launch_config_refs = 0;
  uint64_t undefined_thread_refs = 0;
  uint64_t undefined_stack_refs = 0;        // ApiStackEvents whose CallStack is not defined yet.
  uint64_t undefined_stack_frame_refs = 0;  // CallStack frame ids with no StackFrame yet.
  uint64_t redefined_ids = 0;                // An interned id defined again with a different value.
  uint64_t unknown_packets = 0;              // No known member set (newer minor, or empty).
  uint64_t packets_with_unknown_fields = 0;  // Fields this reader does not know (newer minor).
  uint64_t extra_headers = 0;                // Header packets after the first.
  uint64_t invalid_utf8_strings = 0;         // Strings that were not UTF-8, repaired ('?').
};

// Files larger than this are refused before anything is read, unless the environment
// variable below or TraceReaderOptions::max_file_bytes says otherwise: analyses hold a whole
// trace in memory (a 16 GiB trace holds some 500 million events, several times that in RAM).
inline constexpr uint64_t kDefaultMaxTraceBytes = 16ull << 30;
// A whole number of GiB that replaces kDefaultMaxTraceBytes for every command that reads traces.
inline constexpr const char* kMaxTraceSizeEnv = Setting(SettingId::kMaxTraceGb).variable.data();

struct TraceReaderOptions {
  // Map the file instead of reading it into memory (it is read when mapping fails).
  bool use_mmap = true;
  // Largest file to read, in bytes; 0 = $WARPSCOPE_MAX_TRACE_GB GiB, else kDefaultMaxTraceBytes.
  uint64_t max_file_bytes = 0;
};

// Reads one trace. Typical use:
//
//   ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path));
//   while (true) {
//     ASSIGN_OR_RETURN(const v1::TracePacket* packet, reader->Next());
//     if (packet == nullptr) break;        // end of data (see truncation())
//     ... reader->strings().Get(packet->kernel().name_id()) ...
//   }
//
// Open() reads and checks the header, so a file that is not a warpscope trace, or is newer
// than this reader, fails there. Next() yields every packet in file order, the header first.
// Interned definitions are recorded before Next() returns their packet, and references to
// ids that were not defined yet are counted (counters()) and named "<unknown:ID>".
class TraceReader {
 public:
  // Only regular files are read: a FIFO, a device or a directory is refused without reading
  // from it (a FIFO without a writer would block, /dev/zero never ends).
  // Errors: NotFound / PermissionDenied / Internal with the OS error for files that cannot
  // be opened; InvalidArgument when the path is not a regular file or the file is not a
  // warpscope trace (empty, a PNG, text, a compressed trace); ResourceExhausted when it is
  // larger than the size limit; DataLoss when it ends inside its header; FailedPrecondition
  // for a newer format major.
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path,
                                                           TraceReaderOptions options = {});
  // Reads a trace held in memory (tests, fuzzers). `name` appears in error messages.
  static absl::StatusOr<std::unique_ptr<TraceReader>> FromBuffer(std::string data,
                                                                 std::string name = "<memory>");
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // The next packet, or nullptr at the end of the data (a whole file, or the last whole
  // packet of a truncated one). The packet stays valid until the next call. Corrupt data
  // (a byte that does not start a packet, an absurd length, a packet that does not parse)
  // is a DataLoss error naming the byte offset; reading cannot continue after it.
  absl::StatusOr<const v1::TracePacket*> Next();

  // Next() in two steps, for a decoder that reads the packets it knows straight from their
  // bytes (analyzers/model/trace_columns.cc): NextPayload frames the next packet (the header
  // excluded: Open read it) and sets *payload to its bytes, false at the end of the data, with
  // the same errors and truncation as Next(). Each payload then goes either to ParsePayload,
  // which parses and records it as Next() does, or, decoded elsewhere, to CountDecoded with the
  // references it makes checked by CheckString / CheckLaunchConfig / CheckThread.
  absl::StatusOr<bool> NextPayload(std::string_view* payload);
  absl::StatusOr<const v1::TracePacket*> ParsePayload(std::string_view payload);
  void CountDecoded() {
    Accept();
    if (truncation_.saw_end_of_trace) ++truncation_.packets_after_end;
  }
  // Counts a reference to an id not defined yet (strings: named "<unknown:ID>" from now on).
  void CheckString(uint64_t id);
  void CheckLaunchConfig(uint64_t id);
  void CheckThread(uint64_t id);
  void CheckCallStack(uint64_t id);

  const v1::Header& header() const { return header_; }
  const std::string& name() const { return name_; }  // path or buffer name
  uint64_t file_size() const { return data_.size(); }
  // Byte offset of the packet Next() returned last.
  uint64_t packet_offset() const { return packet_offset_; }
  bool at_end() const { return at_end_; }

  // Interned tables as defined so far.
  const InternedStrings& strings() const { return *strings_; }
  std::shared_ptr<InternedStrings> shared_strings() const { return strings_; }
  const v1::LaunchConfig* FindLaunchConfig(uint64_t id) const;  // nullptr if undefined
  const v1::ThreadInfo* FindThread(uint64_t id) const;          // nullptr if undefined
  // Call stacks and their frames by id (the last definition of each; ids ascending). They
  // grow with the distinct places the program called CUDA from, not with its calls.
  const std::map<uint64_t, v1::StackFrame>& stack_frames() const { return stack_frames_; }
  const std::map<uint64_t, v1::CallStack>& call_stacks() const { return call_stacks_; }

  const ReaderCounters& counters() const { return counters_; }
  // Meaningful once Next() returned nullptr.
  const TruncationInfo& truncation() const { return truncation_; }

 private:
  TraceReader(std::string name, std::string owned, const char* mapped, size_t mapped_size);
  absl::Status ReadHeader();
  // Splits the next packet off data_ at offset_: sets *payload and advances. Returns false
  // (and fills truncation_) when the data ends inside the packet.
  absl::StatusOr<bool> Frame(std::string_view* payload);
  // Counts the packet NextPayload framed last as read.
  void Accept();
  // Hands the mapped pages before `offset` back to the kernel, every kReleaseStride (8 MiB), so
  // that a pass over a large file does not keep it all resident (file pages count in RSS).
  // Their bytes stay readable: a read-only private mapping faults them in again from the file.
  void ReleaseReadPages(uint64_t offset);
  absl::Status ParsePacket(std::string_view payload, uint64_t offset);
  void Record(const v1::TracePacket& packet);
  void RecordDefinition(const v1::TracePacket& packet);
  template <typename Definition>
  void KeepDefinition(const Definition& definition, std::map<uint64_t, Definition>& table);
  void CheckReferences(const v1::TracePacket& packet);

  std::string name_;
  std::string owned_;             // the data when read into memory
  const char* mapped_ = nullptr;  // the data when mapped
  size_t mapped_size_ = 0;
  std::string_view data_;
  uint64_t offset_ = 0;  // next unread byte
  uint64_t packet_offset_ = 0;
  uint64_t payload_offset_ = 0;  // where the packet NextPayload framed last starts
  // Mapped pages before this offset were handed back (ReleaseReadPages).
  uint64_t released_ = 0;
  bool at_end_ = false;
  bool header_pending_ = true;  // the header was parsed by Open but not yet yielded

  // The current packet lives on an arena with a fixed first block, reset before each
  // packet: parsing then allocates nothing per event.
  std::unique_ptr<char[]> arena_block_;
  std::unique_ptr<google::protobuf::Arena> arena_;
  v1::TracePacket* packet_ = nullptr;

  v1::Header header_;
  std::shared_ptr<InternedStrings> strings_;
  std::unordered_map<uint64_t, v1::LaunchConfig> launch_configs_;
  std::unordered_map<uint64_t, v1::ThreadInfo> threads_;
  std::map<uint64_t, v1::StackFrame> stack_frames_;
  std::map<uint64_t, v1::CallStack> call_stacks_;
  ReaderCounters counters_;
  TruncationInfo truncation_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_READER_H_
