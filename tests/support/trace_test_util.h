// Helpers for reader and analysis tests: textproto fixtures to wire-format bytes, temp
// files, golden files.
#ifndef WARPSCOPE_TESTS_SUPPORT_TRACE_TEST_UTIL_H_
#define WARPSCOPE_TESTS_SUPPORT_TRACE_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/model/trace_reader.h"

namespace warpscope::testing {

// The source tree (WARPSCOPE_SOURCE_DIR, set by ctest; else the compile-time path).
std::string SourceDir();

// Reads a file; aborts the test binary with a message when it cannot.
std::string ReadFileOrDie(const std::string& path);
void WriteFileOrDie(const std::string& path, std::string_view contents);

// Parses a textproto `Trace` and returns its wire form; aborts on a syntax error (fixtures
// are part of the test).
std::string TextprotoToWire(std::string_view textproto);
// Reads tests/data/<relative> (a textproto) and returns its wire form.
std::string FixtureWire(const std::string& relative);

// Writes `contents` to a fresh file under the test temp dir ($TEST_TMPDIR or /tmp) and
// returns its path; the file is removed when the test binary exits.
std::string WriteTempFile(std::string_view contents, const std::string& name = "trace.wst");

// Byte offsets where each packet of a wire-form trace starts, plus the total size at the end.
std::vector<uint64_t> PacketBoundaries(const std::string& wire);

// Compares `actual` with tests/<golden_relative>. With WARPSCOPE_UPDATE_GOLDEN=1 in the
// environment it rewrites the golden file instead and passes. Returns "" when equal, else a
// message with a line diff.
std::string CompareWithGolden(const std::string& golden_relative, const std::string& actual);

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_SUPPORT_TRACE_TEST_UTIL_H_
