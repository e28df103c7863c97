// TraceReader: opening a file (limits, what is not a trace), framing (tag 1, wire type 2,
// varint length), header checks, truncation and corruption reports (see trace_reader.h);
// interned tables and reference checks are in trace_reader_tables.cc.
#include "analyzers/model/trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/stubs/logging.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

constexpr size_t kArenaBlockBytes = 64 << 10;

// Decodes a base-128 varint at data[*pos] and advances *pos: kTruncated when the data ends
// inside it, kMalformed when it runs past 10 bytes (not a varint at all).
enum class VarintResult { kOk, kTruncated, kMalformed };
VarintResult ReadVarint(std::string_view data, uint64_t* pos, uint64_t* value) {
  uint64_t result = 0;
  for (int i = 0; i < 10; ++i) {
    if (*pos >= data.size()) return VarintResult::kTruncated;
    const uint8_t byte = static_cast<uint8_t>(data[(*pos)++]);
    result |= uint64_t{byte & 0x7fu} << (7 * i);
    if ((byte & 0x80) == 0) {
      *value = result;
      return VarintResult::kOk;
    }
  }
  return VarintResult::kMalformed;
}

std::string ErrnoMessage(int err) { return std::strerror(err); }

absl::Status OsError(int err, const std::string& what) {
  std::string message = absl::StrCat(what, ": ", ErrnoMessage(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

// "a directory", "a FIFO (named pipe)", ... for messages about paths that are not files.
std::string FileKindName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

absl::StatusOr<uint64_t> MaxTraceBytes(const TraceReaderOptions& options) {
  if (options.max_file_bytes != 0) return options.max_file_bytes;
  const char* env = std::getenv(kMaxTraceSizeEnv);
  if (env == nullptr || *env == '\0') return kDefaultMaxTraceBytes;
  uint64_t gib = 0;
  const SettingSpec& spec = Setting(SettingId::kMaxTraceGb);
  if (!absl::SimpleAtoi(env, &gib) || gib < spec.min || gib > spec.max) {
    return absl::InvalidArgumentError(
        absl::StrCat(kMaxTraceSizeEnv, "=", QuoteValue(env), std::string(spec.refusal),
                     "; unset it for the default (", std::string(spec.default_value), ")"));
  }
  return gib << 30;
}

double Gib(uint64_t bytes) { return static_cast<double>(bytes) / (1ull << 30); }

// Compressed files start with their format's magic bytes; a trace never does (it starts
// with 0x0a), so these get a hint instead of a wire-format complaint.
struct CompressionMagic {
  std::string_view magic;
  const char* format;
  const char* undo;
};
constexpr CompressionMagic kCompressionMagics[] = {
    {std::string_view("\x1f\x8b", 2), "gzip", "gunzip"},
    {std::string_view("\x28\xb5\x2f\xfd", 4), "zstd", "unzstd"},
    {std::string_view("\xfd\x37\x7a\x58\x5a\x00", 6), "xz", "unxz"},
};

// Length of the valid UTF-8 sequence at s[i] (as protobuf checks it: no overlongs, no
// surrogates, nothing above U+10FFFF), or 0 when the byte there does not start one.
size_t Utf8SequenceLength(const uint8_t* s, size_t n, size_t i) {
  const uint8_t b0 = s[i];
  if (b0 < 0x80) return 1;
  auto cont = [&](size_t k, uint8_t lo = 0x80, uint8_t hi = 0xbf) {
    return i + k < n && s[i + k] >= lo && s[i + k] <= hi;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const bool ok1 = b0 == 0xe0 ? cont(1, 0xa0) : b0 == 0xed ? cont(1, 0x80, 0x9f) : cont(1);
    return ok1 && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const bool ok1 = b0 == 0xf0 ? cont(1, 0x90) : b0 == 0xf4 ? cont(1, 0x80, 0x8f) : cont(1);
    return ok1 && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// Replaces every byte that is not part of valid UTF-8 with '?'. The length stays the same,
// so the enclosing wire format stays valid. Returns true when something was replaced.
bool SanitizeUtf8(char* data, size_t n) {
  const uint8_t* s = reinterpret_cast<const uint8_t*>(data);
  bool changed = false;
  for (size_t i = 0; i < n;) {
    const size_t len = Utf8SequenceLength(s, n, i);
    if (len == 0) {
      data[i++] = '?';
      changed = true;
    } else {
      i += len;
    }
  }
  return changed;
}

// Walks the wire form of a `type` message in data[0, n) and sanitizes its string fields,
// recursively. Returns the number of strings changed, or -1 when the bytes are not valid
// wire format (then the packet is corrupt for other reasons too).
int SanitizeStrings(const google::protobuf::Descriptor* type, char* data, size_t n, int depth) {
  if (depth > 32) return -1;
  std::string_view view(data, n);
  uint64_t pos = 0;
  int changed = 0;
  while (pos < n) {
    uint64_t tag = 0;
    if (ReadVarint(view, &pos, &tag) != VarintResult::kOk) return -1;
    uint64_t value = 0;
    switch (tag & 7) {
      case 0:
        if (ReadVarint(view, &pos, &value) != VarintResult::kOk) return -1;
        break;
      case 1:
        pos += 8;
        break;
      case 5:
        pos += 4;
        break;
      case 2: {
        if (ReadVarint(view, &pos, &value) != VarintResult::kOk || value > n - pos) return -1;
        const google::protobuf::FieldDescriptor* field =
            type->FindFieldByNumber(static_cast<int>(tag >> 3));
        if (field != nullptr && field->type() == google::protobuf::FieldDescriptor::TYPE_STRING) {
          changed += SanitizeUtf8(data + pos, value) ? 1 : 0;
        } else if (field != nullptr &&
                   field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
          const int inner = SanitizeStrings(field->message_type(), data + pos, value, depth + 1);
          if (inner < 0) return -1;
          changed += inner;
        }
        pos += value;
        break;
      }
      default:
        return -1;
    }
    if (pos > n) return -1;
  }
  return changed;
}

// Protobuf logs one line per string that is not UTF-8; the reader repairs and counts those
// itself, so the line would only be noise on the CLI's stderr. Other messages pass through.
google::protobuf::LogHandler* g_previous_log_handler = nullptr;
void FilterUtf8Log(google::protobuf::LogLevel level, const char* filename, int line,
                   const std::string& message) {
  if (message.find("invalid UTF-8") != std::string::npos) return;
  if (g_previous_log_handler != nullptr) g_previous_log_handler(level, filename, line, message);
}
void InstallLogFilter() {
  static std::once_flag once;
  std::call_once(once,
                 [] { g_previous_log_handler = google::protobuf::SetLogHandler(&FilterUtf8Log); });
}

constexpr const char* kWireTypeNames[] = {"varint",    "64-bit", "length-delimited", "group start",
                                          "group end", "32-bit", "invalid (6)",      "invalid (7)"};

}  // namespace

// ---------------------------------------------------------------------------------------
// TruncationInfo

std::string TruncationInfo::Describe() const {
  std::string out;
  if (!saw_end_of_trace) out = "ended without an end-of-trace marker (process killed?)";
  if (partial_packet) {
    absl::StrAppend(&out, out.empty() ? "" : "; ", "the last packet, at byte ", partial_offset,
                    ", is incomplete (", bytes_lost, " bytes lost)");
  }
  if (packets_after_end > 0) {
    absl::StrAppend(&out, out.empty() ? "" : "; ", packets_after_end,
                    " packets follow the end-of-trace marker");
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// TraceReader

TraceReader::TraceReader(std::string name, std::string owned, const char* mapped,
                         size_t mapped_size)
    : name_(std::move(name)),
      owned_(std::move(owned)),
      mapped_(mapped),
      mapped_size_(mapped_size),
      strings_(std::make_shared<InternedStrings>()) {
  data_ = mapped_ != nullptr ? std::string_view(mapped_, mapped_size_) : std::string_view(owned_);
  arena_block_ = std::make_unique<char[]>(kArenaBlockBytes);
  google::protobuf::ArenaOptions arena_options;
  arena_options.initial_block = arena_block_.get();
  arena_options.initial_block_size = kArenaBlockBytes;
  arena_ = std::make_unique<google::protobuf::Arena>(arena_options);
  InstallLogFilter();
}

TraceReader::~TraceReader() {
  arena_.reset();  // before the block it lives in
  if (mapped_ != nullptr) munmap(const_cast<char*>(mapped_), mapped_size_);
}

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path,
                                                               TraceReaderOptions options) {
  absl::StatusOr<uint64_t> max_bytes = MaxTraceBytes(options);
  if (!max_bytes.ok()) return max_bytes.status();
  // O_NONBLOCK: opening a FIFO that no one writes to would otherwise wait forever. It is
  // cleared again once fstat says the path is a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return OsError(errno, absl::StrCat("cannot open ", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return OsError(err, absl::StrCat("cannot stat ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is ", FileKindName(st.st_mode), ", not a trace file: give the path of a .wst file",
        S_ISFIFO(st.st_mode) ? " (save a piped trace to a file first)" : ""));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > *max_bytes) {
    ::close(fd);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s is %.1f GiB, more than the %.1f GiB warpscope reads (a trace is analysed in "
        "memory); set %s to a larger number of GiB to read it anyway",
        path, Gib(size), Gib(*max_bytes), kMaxTraceSizeEnv));
  }
  if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0) {
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  std::unique_ptr<TraceReader> reader;
  if (options.use_mmap && size > 0) {
    void* map = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      // The reader walks the file front to back once.
      ::madvise(map, static_cast<size_t>(size), MADV_SEQUENTIAL);
      reader.reset(new TraceReader(path, std::string(), static_cast<const char*>(map),
                                   static_cast<size_t>(size)));
    }
  }
  if (reader == nullptr) {
    std::string data;
    data.reserve(static_cast<size_t>(size));
    char buffer[1 << 16];
    while (true) {
      const ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::close(fd);
        return OsError(err, absl::StrCat("cannot read ", path));
      }
      // A trace still being written grows while it is read: stop at the limit all the same.
      if (data.size() + static_cast<size_t>(n) > *max_bytes) {
        ::close(fd);
        return absl::ResourceExhaustedError(absl::StrFormat(
            "%s grew past the %.1f GiB warpscope reads while it was read; set %s to a larger "
            "number of GiB to read it anyway",
            path, Gib(*max_bytes), kMaxTraceSizeEnv));
      }
      data.append(buffer, static_cast<size_t>(n));
    }
    reader.reset(new TraceReader(path, std::move(data), nullptr, 0));
  }
  ::close(fd);
  if (absl::Status status = reader->ReadHeader(); !status.ok()) return status;
  return reader;
}

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::FromBuffer(std::string data,
                                                                     std::string name) {
  std::unique_ptr<TraceReader> reader(
      new TraceReader(std::move(name), std::move(data), nullptr, 0));
  if (absl::Status status = reader->ReadHeader(); !status.ok()) return status;
  return reader;
}

absl::StatusOr<bool> TraceReader::Frame(std::string_view* payload) {
  const uint64_t start = offset_;
  uint64_t pos = offset_;
  uint64_t tag = 0;
  const auto partial = [&]() {
    truncation_.partial_packet = true;
    truncation_.partial_offset = start;
    truncation_.bytes_lost = data_.size() - start;
    offset_ = data_.size();
    return false;
  };
  VarintResult r = ReadVarint(data_, &pos, &tag);
  if (r == VarintResult::kTruncated) return partial();
  // Tag 1, wire type 2 is the only thing a Trace holds (one byte, 0x0a).
  if (r == VarintResult::kMalformed || tag != ((1u << 3) | 2u)) {
    std::string found = r == VarintResult::kMalformed ? "a malformed varint" : "";
    if (r != VarintResult::kMalformed) {
      for (uint64_t i = start; i < pos; ++i) {
        absl::StrAppend(&found, i == start ? "" : " ",
                        absl::StrFormat("0x%02x", static_cast<uint8_t>(data_[i])));
      }
      absl::StrAppend(
          &found, absl::StrFormat(" (field %u, wire type %s)", tag >> 3, kWireTypeNames[tag & 7]));
    }
    return absl::DataLossError(absl::StrFormat(
        "at byte offset %u: expected a packet (field 1, length-delimited: byte 0x0a), found %s",
        start, found));
  }
  uint64_t length = 0;
  r = ReadVarint(data_, &pos, &length);
  if (r == VarintResult::kTruncated) return partial();
  if (r == VarintResult::kMalformed) {
    return absl::DataLossError(
        absl::StrFormat("at byte offset %u: the packet length is not a valid varint", start));
  }
  if (length > kMaxPacketBytes) {
    return absl::DataLossError(absl::StrFormat(
        "at byte offset %u: the packet there claims %u bytes, more than the %u MiB a packet can "
        "hold",
        start, length, kMaxPacketBytes >> 20));
  }
  if (length > data_.size() - pos) return partial();
  *payload = data_.substr(pos, length);
  offset_ = pos + length;
  return true;
}

absl::Status TraceReader::ParsePacket(std::string_view payload, uint64_t offset) {
  // Reset frees the previous packet wholesale; the first block is ours, so no malloc.
  arena_->Reset();
  packet_ = google::protobuf::Arena::CreateMessage<v1::TracePacket>(arena_.get());
  if (packet_->ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::OkStatus();
  }
  // proto3 refuses strings that are not UTF-8, and the writer copies names (argv, NVTX) as
  // the program gave them: repair such strings ('?' per bad byte) rather than lose the rest
  // of the file.
  std::string repaired(payload);
  const int changed =
      SanitizeStrings(v1::TracePacket::descriptor(), repaired.data(), repaired.size(), 0);
  if (changed > 0) {
    arena_->Reset();
    packet_ = google::protobuf::Arena::CreateMessage<v1::TracePacket>(arena_.get());
    if (packet_->ParseFromArray(repaired.data(), static_cast<int>(repaired.size()))) {
      counters_.invalid_utf8_strings += changed;
      return absl::OkStatus();
    }
  }
  return absl::DataLossError(absl::StrFormat(
      "%s: corrupt data at byte offset %u: the %u-byte packet there does not parse as a "
      "warpscope packet",
      name_, offset, payload.size()));
}

absl::Status TraceReader::ReadHeader() {
  if (data_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, " is empty: not a warpscope trace (nothing was written to it)"));
  }
  for (const CompressionMagic& c : kCompressionMagics) {
    if (data_.starts_with(c.magic)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, " looks ", c.format, "-compressed, not a warpscope trace: ", c.undo,
                       " it first and give the uncompressed .wst file"));
    }
  }
  std::string_view payload;
  absl::StatusOr<bool> framed = Frame(&payload);
  if (!framed.ok()) {
    // How the file starts often says what it is ("\x89PNG", "#!/bin/s").
    std::string head;
    for (size_t i = 0; i < std::min<size_t>(8, data_.size()); ++i) {
      const char c = data_[i];
      head += c >= 0x20 && c < 0x7f ? std::string(1, c)
                                    : absl::StrFormat("\\x%02x", static_cast<uint8_t>(c));
    }
    return absl::InvalidArgumentError(absl::StrCat(name_, " is not a warpscope trace (it starts \"",
                                                   head, "\"): ", framed.status().message()));
  }
  if (!*framed) {
    return absl::DataLossError(absl::StrFormat(
        "%s ends inside its first packet (%u bytes present): the trace holds no whole packet",
        name_, data_.size()));
  }
  if (absl::Status status = ParsePacket(payload, 0); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_, " is not a warpscope trace: its first bytes do not parse as a trace packet"));
  }
  if (!packet_->has_header()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_, " is not a warpscope trace: expected a header as the first packet, found ",
        packet_->data_case() == v1::TracePacket::DATA_NOT_SET
            ? std::string("an empty packet")
            : absl::StrCat("packet field ", static_cast<int>(packet_->data_case()))));
  }
  const v1::Header& header = packet_->header();
  if (header.format_major() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_, " is not a warpscope trace: its header has no format version (format_major 0)"));
  }
  if (header.format_major() > kReaderFormatMajor) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: trace format %u.x is newer than this warpscope reads (%u.x); upgrade warpscope", name_,
        header.format_major(), kReaderFormatMajor));
  }
  header_ = header;
  counters_.packets = 1;
  counters_.bytes = offset_;
  packet_offset_ = 0;
  header_pending_ = true;
  return absl::OkStatus();
}

absl::StatusOr<const v1::TracePacket*> TraceReader::Next() {
  if (header_pending_) {
    header_pending_ = false;
    return packet_;
  }
  std::string_view payload;
  absl::StatusOr<bool> framed = NextPayload(&payload);
  if (!framed.ok()) return framed.status();
  if (!*framed) return nullptr;
  return ParsePayload(payload);
}

absl::StatusOr<bool> TraceReader::NextPayload(std::string_view* payload) {
  header_pending_ = false;
  if (at_end_) return false;
  if (offset_ >= data_.size()) {
    at_end_ = true;
    return false;
  }
  const uint64_t start = offset_;
  absl::StatusOr<bool> framed = Frame(payload);
  if (!framed.ok()) {
    at_end_ = true;
    return absl::DataLossError(absl::StrCat(name_, ": corrupt data ", framed.status().message()));
  }
  if (!*framed) {
    at_end_ = true;
    return false;
  }
  payload_offset_ = start;
  ReleaseReadPages(start);
  return true;
}

void TraceReader::ReleaseReadPages(uint64_t offset) {
  constexpr uint64_t kReleaseStride = 8ull << 20;
  if (mapped_ == nullptr || offset < released_ + kReleaseStride) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t end = offset / page * page;
  ::madvise(const_cast<char*>(mapped_) + released_, static_cast<size_t>(end - released_),
            MADV_DONTNEED);
  released_ = end;
}

void TraceReader::Accept() {
  packet_offset_ = payload_offset_;
  ++counters_.packets;
  counters_.bytes = offset_;
}

absl::StatusOr<const v1::TracePacket*> TraceReader::ParsePayload(std::string_view payload) {
  if (absl::Status status = ParsePacket(payload, payload_offset_); !status.ok()) {
    at_end_ = true;
    return status;
  }
  Accept();
  Record(*packet_);
  return packet_;
}

}  // namespace warpscope
