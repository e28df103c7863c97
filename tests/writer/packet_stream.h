// Test helpers that read .wst files back the way a streaming reader would: packet by packet,
// with the generated protobuf classes, noting where each packet starts and whether the file
// ends on a packet boundary. Independent of the writer's own encoder on purpose.
#ifndef WARPSCOPE_TESTS_WRITER_PACKET_STREAM_H_
#define WARPSCOPE_TESTS_WRITER_PACKET_STREAM_H_

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "warpscope/v1/trace.pb.h"

namespace warpscope::testing {

struct ParsedPacket {
  size_t offset = 0;  // Of the Trace.packet tag in the file.
  size_t size = 0;    // Tag + length + payload.
  warpscope::v1::TracePacket packet;
};

struct PacketStream {
  std::vector<ParsedPacket> packets;
  size_t consumed = 0;     // Bytes of whole packets.
  bool truncated = false;  // Bytes after the last whole packet (a cut-short file).
  bool malformed = false;  // Something other than Trace.packet, or a payload that does not parse.
};

inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Decodes one varint; false when the bytes end first.
inline bool DecodeVarint(const std::string& bytes, size_t* pos, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && *pos < bytes.size(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(bytes[(*pos)++]);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

inline PacketStream ParsePacketStream(const std::string& bytes) {
  PacketStream stream;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t start = pos;
    uint64_t tag = 0;
    uint64_t length = 0;
    if (!DecodeVarint(bytes, &pos, &tag) || !DecodeVarint(bytes, &pos, &length) ||
        length > bytes.size() - pos) {
      stream.truncated = true;
      break;
    }
    if (tag != ((1 << 3) | 2)) {
      stream.malformed = true;
      break;
    }
    ParsedPacket parsed;
    parsed.offset = start;
    if (!parsed.packet.ParseFromArray(bytes.data() + pos, static_cast<int>(length))) {
      stream.malformed = true;
      break;
    }
    pos += length;
    parsed.size = pos - start;
    stream.packets.push_back(std::move(parsed));
    stream.consumed = pos;
  }
  return stream;
}

inline PacketStream ParsePacketFile(const std::string& path) {
  return ParsePacketStream(ReadFileBytes(path));
}

// A fresh directory under $TMPDIR (or /tmp), removed with its files at the end of the test.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/warpscope_test_XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    if (path_.empty()) return;
    if (DIR* dir = opendir(path_.c_str())) {
      while (dirent* entry = readdir(dir)) {
        const std::string name = entry->d_name;
        if (name != "." && name != "..") unlink((path_ + "/" + name).c_str());
      }
      closedir(dir);
    }
    rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The value of a named counter in a Stats packet (0 when absent).
inline uint64_t StatValue(const warpscope::v1::Stats& stats, const std::string& name) {
  for (const auto& c : stats.counters()) {
    if (c.name() == name) return c.value();
  }
  return 0;
}

inline bool HasStat(const warpscope::v1::Stats& stats, const std::string& name) {
  for (const auto& c : stats.counters()) {
    if (c.name() == name) return true;
  }
  return false;
}

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_WRITER_PACKET_STREAM_H_
