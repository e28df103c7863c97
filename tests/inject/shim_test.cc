// The libwarpscope.so shim when it cannot use the core: one `warpscope:` line that says what
// to do, however many entry points the driver and NVTX call, and the program goes on.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct ShimRun {
  int init_result = -1;  // InitializeInjection's return value (1: the driver carries on)
  std::string err;       // what the shim wrote on stderr
};

// Loads the shim in a child process with `core_path` as WARPSCOPE_CORE_PATH (empty: unset) and
// `disable` as WARPSCOPE_DISABLE (nullptr: unset), calls InitializeInjection twice and the
// NVTX entry point once, as the driver and NVTX would.
ShimRun LoadShim(const std::string& core_path, const char* disable = nullptr) {
  int pipe_fds[2];
  EXPECT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    if (core_path.empty()) {
      unsetenv("WARPSCOPE_CORE_PATH");
    } else {
      setenv("WARPSCOPE_CORE_PATH", core_path.c_str(), 1);
    }
    if (disable != nullptr) {
      setenv("WARPSCOPE_DISABLE", disable, 1);
    } else {
      unsetenv("WARPSCOPE_DISABLE");
    }
    void* shim = dlopen(WARPSCOPE_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
    if (shim == nullptr) _exit(100);
    auto init = reinterpret_cast<int (*)()>(dlsym(shim, "InitializeInjection"));
    auto nvtx = reinterpret_cast<int (*)(void*)>(dlsym(shim, "InitializeInjectionNvtx2"));
    if (init == nullptr || nvtx == nullptr) _exit(101);
    const int first = init();
    const int second = init();
    nvtx(nullptr);
    _exit(first == second ? first : 102);
  }
  close(pipe_fds[1]);
  ShimRun run;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) run.err.append(buf, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  run.init_result = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(ShimTest, CorePathNamingTheShimItselfSaysSoOnce) {
  ShimRun run = LoadShim(WARPSCOPE_SHIM_PATH);
  EXPECT_EQ(run.init_result, 1);
  EXPECT_EQ(Lines(run.err), 1) << run.err;
  EXPECT_THAT(run.err, StartsWith("warpscope: WARPSCOPE_CORE_PATH="));
  EXPECT_THAT(run.err, HasSubstr("is libwarpscope.so, the shim, not the core; point "
                                 "WARPSCOPE_CORE_PATH at libwarpscope_core.so"));
  EXPECT_THAT(run.err, HasSubstr("running without profiling"));
}

TEST(ShimTest, CorePathNamingAnotherLibrarySaysSoOnce) {
  ShimRun run = LoadShim("libm.so.6");
  EXPECT_EQ(run.init_result, 1);
  EXPECT_EQ(Lines(run.err), 1) << run.err;
  EXPECT_THAT(run.err, StartsWith("warpscope: WARPSCOPE_CORE_PATH=libm.so.6 is not warpscope's "
                                  "core library"));
}

TEST(ShimTest, MissingCoreSaysSoOnce) {
  ShimRun run = LoadShim("/nonexistent/libwarpscope_core.so");
  EXPECT_EQ(run.init_result, 1);
  EXPECT_EQ(Lines(run.err), 1) << run.err;
  EXPECT_THAT(run.err, StartsWith("warpscope: cannot load /nonexistent/libwarpscope_core.so"));
  EXPECT_THAT(run.err, HasSubstr("point WARPSCOPE_CORE_PATH at libwarpscope_core.so, or unset it"));
}

TEST(ShimTest, DisabledShimStaysSilent) {
  for (const char* value : {"1", "true", " On ", "YES"}) {
    ShimRun run = LoadShim(WARPSCOPE_SHIM_PATH, value);
    EXPECT_EQ(run.init_result, 1) << value;
    EXPECT_EQ(run.err, "") << value;
  }
}

// A false value profiles: the shim goes on to load the core (here a library that is not one,
// which it says).
TEST(ShimTest, FalseDisableValuesProfile) {
  for (const char* value : {"0", "off", " FALSE", "no", ""}) {
    ShimRun run = LoadShim("libm.so.6", value);
    EXPECT_EQ(run.init_result, 1) << value;
    EXPECT_THAT(run.err, StartsWith("warpscope: WARPSCOPE_CORE_PATH=libm.so.6")) << value;
  }
}

// A value that is neither: one line, and no profiling (the core is not loaded).
TEST(ShimTest, InvalidDisableValueSaysSoOnceAndDoesNotProfile) {
  for (const char* value : {"yesterday", "10", "t"}) {
    ShimRun run = LoadShim("libm.so.6", value);
    EXPECT_EQ(run.init_result, 1) << value;
    EXPECT_EQ(Lines(run.err), 1) << run.err;
    EXPECT_EQ(run.err, "warpscope: WARPSCOPE_DISABLE='" + std::string(value) +
                           "' is not 1/true/yes/on or 0/false/no/off; running without "
                           "profiling\n");
  }
}

}  // namespace
}  // namespace warpscope
