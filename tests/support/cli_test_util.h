// Helpers for tests that run the `warpscope` binary as users do: exit code, stdout, stderr.
#ifndef WARPSCOPE_TESTS_SUPPORT_CLI_TEST_UTIL_H_
#define WARPSCOPE_TESTS_SUPPORT_CLI_TEST_UTIL_H_

#include <string>

namespace warpscope::testing {

struct CliResult {
  int exit_code = -1;  // -1 when it did not exit normally
  std::string out;
  std::string err;
};

// Runs `$WARPSCOPE_BUILD_DIR/bin/warpscope ARGS` through the shell (so ARGS is shell syntax:
// quote what needs quoting) and captures both streams.
CliResult RunCli(const std::string& args);

// A fresh empty directory under $TEST_TMPDIR (or /tmp), removed with its contents when the
// test binary exits.
std::string MakeTempDir();

// Number of '\n' in `s`.
int CountLines(const std::string& s);

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_SUPPORT_CLI_TEST_UTIL_H_
