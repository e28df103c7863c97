// Running the `warpscope` binary from tests (see cli_test_util.h).
#include "tests/support/cli_test_util.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/trace_test_util.h"

namespace warpscope::testing {
namespace {

// Directories made by MakeTempDir, removed when the test binary exits.
std::vector<std::string>& TempDirs() {
  static auto* dirs = [] {
    auto* list = new std::vector<std::string>();
    std::atexit([] {
      std::error_code ignored;
      for (const std::string& dir : TempDirs()) std::filesystem::remove_all(dir, ignored);
    });
    return list;
  }();
  return *dirs;
}

}  // namespace

CliResult RunCli(const std::string& args) {
  const char* build = std::getenv("WARPSCOPE_BUILD_DIR");
  const std::string binary = absl::StrCat(build != nullptr ? build : ".", "/bin/warpscope");
  const std::string out_path = WriteTempFile("", "stdout.txt");
  const std::string err_path = WriteTempFile("", "stderr.txt");
  const std::string command = absl::StrCat(binary, " ", args, " >", out_path, " 2>", err_path);
  const int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFileOrDie(out_path);
  r.err = ReadFileOrDie(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

std::string MakeTempDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/warpscope_test_XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "cannot create a temporary directory from %s\n", pattern.c_str());
    std::abort();
  }
  TempDirs().push_back(pattern);
  return pattern;
}

int CountLines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace warpscope::testing
