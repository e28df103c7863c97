// The exporters' fixture (tests/export/export_small.textproto) as trace files, shared by the
// export and timeline tests.
#ifndef WARPSCOPE_TESTS_EXPORT_EXPORT_FIXTURE_H_
#define WARPSCOPE_TESTS_EXPORT_EXPORT_FIXTURE_H_

#include <cstdint>
#include <string>

#include "tests/support/trace_test_util.h"

namespace warpscope::testing {

inline std::string ExportFixtureText() {
  return ReadFileOrDie(SourceDir() + "/tests/export/export_small.textproto");
}

// The fixture with its header's wall-clock start moved by `shift_ns` and its RANK replaced,
// written to a temporary trace file.
inline std::string ExportFixturePath(uint64_t shift_ns = 0, const std::string& rank = "3") {
  std::string text = ExportFixtureText();
  const std::string base = "unix_time_base_ns: 1763684401000000000";
  text.replace(text.find(base), base.size(),
               "unix_time_base_ns: " + std::to_string(1763684401000000000ull + shift_ns));
  const std::string rank_line = "value: \"3\"";
  text.replace(text.find(rank_line), rank_line.size(), "value: \"" + rank + "\"");
  return WriteTempFile(TextprotoToWire(text), "export_" + rank + ".wst");
}

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_EXPORT_EXPORT_FIXTURE_H_
