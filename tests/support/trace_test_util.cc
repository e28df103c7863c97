// Test helpers for reader and analysis tests (see trace_test_util.h).
#include "tests/support/trace_test_util.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"

namespace warpscope::testing {

std::string SourceDir() {
  const char* dir = std::getenv("WARPSCOPE_SOURCE_DIR");
  return dir != nullptr ? dir : WARPSCOPE_TEST_SOURCE_DIR;
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "test: cannot read %s\n", path.c_str());
    std::abort();
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void WriteFileOrDie(const std::string& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) {
    std::fprintf(stderr, "test: cannot write %s\n", path.c_str());
    std::abort();
  }
}

std::string TextprotoToWire(std::string_view textproto) {
  v1::Trace trace;
  if (!google::protobuf::TextFormat::ParseFromString(std::string(textproto), &trace)) {
    std::fprintf(stderr, "test: fixture does not parse as a textproto Trace\n");
    std::abort();
  }
  return trace.SerializeAsString();
}

std::string FixtureWire(const std::string& relative) {
  return TextprotoToWire(ReadFileOrDie(SourceDir() + "/tests/data/" + relative));
}

// Files made by WriteTempFile, removed when the test binary exits.
std::vector<std::string>& TempFiles() {
  static auto* files = [] {
    auto* list = new std::vector<std::string>();
    std::atexit([] {
      for (const std::string& path : TempFiles()) std::remove(path.c_str());
    });
    return list;
  }();
  return *files;
}

std::string WriteTempFile(std::string_view contents, const std::string& name) {
  static std::atomic<int> counter{0};
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  const std::string path =
      absl::StrCat(dir, "/warpscope_test_", getpid(), "_", counter.fetch_add(1), "_", name);
  WriteFileOrDie(path, contents);
  TempFiles().push_back(path);
  return path;
}

std::vector<uint64_t> PacketBoundaries(const std::string& wire) {
  std::vector<uint64_t> out;
  uint64_t pos = 0;
  while (pos < wire.size()) {
    out.push_back(pos);
    ++pos;  // the 0x0a tag
    uint64_t length = 0;
    int shift = 0;
    while (true) {
      const uint8_t byte = static_cast<uint8_t>(wire[pos++]);
      length |= uint64_t{byte & 0x7fu} << shift;
      shift += 7;
      if ((byte & 0x80) == 0) break;
    }
    pos += length;
  }
  out.push_back(wire.size());
  return out;
}

std::string CompareWithGolden(const std::string& golden_relative, const std::string& actual) {
  const std::string path = SourceDir() + "/tests/" + golden_relative;
  const char* update = std::getenv("WARPSCOPE_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    WriteFileOrDie(path, actual);
    return "";
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::StrCat("golden file ", path,
                        " is missing; run with WARPSCOPE_UPDATE_GOLDEN=1 to create it");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string expected = buffer.str();
  if (expected == actual) return "";
  const std::vector<std::string> want = absl::StrSplit(expected, '\n');
  const std::vector<std::string> got = absl::StrSplit(actual, '\n');
  std::string diff =
      absl::StrCat("output differs from ", path, " (WARPSCOPE_UPDATE_GOLDEN=1 rewrites it):\n");
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const std::string w = i < want.size() ? want[i] : "<missing>";
    const std::string g = i < got.size() ? got[i] : "<missing>";
    if (w != g) absl::StrAppend(&diff, "line ", i + 1, ":\n  want: ", w, "\n  got:  ", g, "\n");
  }
  return diff;
}

}  // namespace warpscope::testing
