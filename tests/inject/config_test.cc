// Tests for WARPSCOPE_* parsing and validation (libinject/config.h).
#include "libinject/config.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/settings/settings.h"

namespace warpscope {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  GetEnvFn fn() {
    return [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(ConfigTest, DefaultsWhenNothingIsSet) {
  Env env;
  Config c;
  std::string error;
  ASSERT_TRUE(ParseConfig(env.fn(), &c, &error)) << error;
  EXPECT_EQ(c.output_pattern, "warpscope_%p.wst");
  EXPECT_EQ(c.capture_range, CaptureRange::kNone);
  EXPECT_EQ(c.capture_signal, SIGUSR2);
  EXPECT_TRUE(c.trace.kernel && c.trace.memory && c.trace.runtime && c.trace.nvtx && c.trace.sync);
  EXPECT_FALSE(c.trace.driver || c.trace.graph || c.trace.overhead);
  EXPECT_EQ(c.max_windows, 1u);
  EXPECT_EQ(c.flush_interval_ms, 250u);
  EXPECT_FALSE(c.monotonic_clock);
  EXPECT_TRUE(c.api_filter);
}

TEST(ConfigTest, BadDelayGivesTheOneLineMessage) {
  Env env;
  env.vars["WARPSCOPE_DELAY"] = "abc";
  Config c;
  std::string error;
  EXPECT_FALSE(ParseConfig(env.fn(), &c, &error));
  EXPECT_EQ(error,
            "warpscope: WARPSCOPE_DELAY='abc' is not a number of seconds; running without "
            "profiling");
}

TEST(ConfigTest, ParsesEveryVariable) {
  Env env;
  env.vars = {{"WARPSCOPE_OUTPUT", "run_%p.wst"},   {"WARPSCOPE_FORCE_OVERWRITE", "yes"},
              {"WARPSCOPE_DELAY", "1.5"},            {"WARPSCOPE_DURATION", "250ms"},
              {"WARPSCOPE_CAPTURE_RANGE", "NVTX"},   {"WARPSCOPE_NVTX_CAPTURE", "train@my.domain"},
              {"WARPSCOPE_CAPTURE_RANGE_END", "repeat:3"}, {"WARPSCOPE_TRACE", "kernel,driver"},
              {"WARPSCOPE_BUFFER_SIZE_MB", "4"},     {"WARPSCOPE_FLUSH_INTERVAL_MS", "200"},
              {"WARPSCOPE_CAPTURE_SIGNAL", "SIGUSR1"}, {"WARPSCOPE_LOG_LEVEL", "debug"},
              {"WARPSCOPE_QUIET", "0"}};
  Config c;
  std::string error;
  ASSERT_TRUE(ParseConfig(env.fn(), &c, &error)) << error;
  EXPECT_EQ(c.output_pattern, "run_%p.wst");
  EXPECT_TRUE(c.force_overwrite);
  EXPECT_DOUBLE_EQ(c.delay_s, 1.5);
  EXPECT_DOUBLE_EQ(c.duration_s, 0.25);
  EXPECT_EQ(c.capture_range, CaptureRange::kNvtx);
  EXPECT_EQ(c.nvtx_range_name, "train");
  EXPECT_EQ(c.nvtx_range_domain, "my.domain");
  EXPECT_EQ(c.capture_range_end, CaptureRangeEnd::kRepeat);
  EXPECT_EQ(c.max_windows, 3u);
  EXPECT_TRUE(c.trace.kernel && c.trace.driver);
  EXPECT_FALSE(c.trace.memory || c.trace.nvtx || c.trace.runtime);
  EXPECT_EQ(c.buffer_size_mb, 4u);
  EXPECT_EQ(c.flush_interval_ms, 200u);
  EXPECT_EQ(c.capture_signal, SIGUSR1);
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
  EXPECT_EQ(c.raw.size(), 13u);
}

TEST(ConfigTest, RejectsBadValuesWithTheirName) {
  const std::pair<const char*, const char*> cases[] = {
      {"WARPSCOPE_DURATION", "-1"},        {"WARPSCOPE_CAPTURE_RANGE", "cupti"},
      {"WARPSCOPE_CAPTURE_RANGE_END", "repeat:0"}, {"WARPSCOPE_TRACE", "cuda,osrt"},
      {"WARPSCOPE_BUFFER_SIZE_MB", "0"},   {"WARPSCOPE_CAPTURE_SIGNAL", "KILL"},
      {"WARPSCOPE_FORCE_OVERWRITE", "maybe"}, {"WARPSCOPE_NVTX_CAPTURE", "@dom"},
      {"WARPSCOPE_FLUSH_INTERVAL_MS", "5"}, {"WARPSCOPE_LOG_LEVEL", "loud"},
      {"WARPSCOPE_DELAY", "nan"},          {"WARPSCOPE_DELAY", ""}};
  for (const auto& [name, value] : cases) {
    Env env;
    env.vars[name] = value;
    Config c;
    std::string error;
    EXPECT_FALSE(ParseConfig(env.fn(), &c, &error)) << name << "=" << value;
    EXPECT_NE(error.find(std::string(name) + "='" + value + "' is not "), std::string::npos) << error;
    EXPECT_NE(error.find("; running without profiling"), std::string::npos) << error;
  }
}

TEST(ConfigTest, SecondsAreRangeCheckedAfterTheUnit) {
  double seconds = 0;
  std::string what;
  ASSERT_TRUE(ParseSeconds("1e7", &seconds, &what));
  EXPECT_DOUBLE_EQ(seconds, 1e7);
  ASSERT_TRUE(ParseSeconds("166666m", &seconds, &what));
  EXPECT_DOUBLE_EQ(seconds, 166666 * 60.0);
  ASSERT_TRUE(ParseSeconds("5e9ms", &seconds, &what));
  EXPECT_DOUBLE_EQ(seconds, 5e6);
  for (const char* text : {"1e7m", "166667m", "1e8", "1e99s", "1e13ms"}) {
    EXPECT_FALSE(ParseSeconds(text, &seconds, &what)) << text;
    EXPECT_EQ(what, "a number of seconds from 0 to 10000000 (115 days)") << text;
  }
  EXPECT_FALSE(ParseSeconds("soon", &seconds, &what));
  EXPECT_EQ(what, "a number of seconds");
  Env env;
  env.vars["WARPSCOPE_DELAY"] = "1e7m";
  Config c;
  std::string error;
  EXPECT_FALSE(ParseConfig(env.fn(), &c, &error));
  EXPECT_EQ(error,
            "warpscope: WARPSCOPE_DELAY='1e7m' is not a number of seconds from 0 to 10000000 "
            "(115 days); running without profiling");
}

TEST(ConfigTest, TypedErrorsSayWhichVariableAndValue) {
  Env env;
  env.vars = {{"WARPSCOPE_DELAY", "2"}, {"WARPSCOPE_FLUSH_INTERVAL_MS", "5"}};
  Config c;
  SettingError error;
  ASSERT_FALSE(ParseConfig(env.fn(), &c, &error));
  EXPECT_EQ(error.variable, "WARPSCOPE_FLUSH_INTERVAL_MS");
  EXPECT_EQ(error.value, "5");
  EXPECT_EQ(error.ForVariable(),
            "WARPSCOPE_FLUSH_INTERVAL_MS='5' is not a flush interval in ms (10-600000)");
  EXPECT_EQ(error.ForFlag("--flush-interval-ms"),
            "--flush-interval-ms '5' is not a flush interval in ms (10-600000)");
  Env clash;
  clash.vars = {{"WARPSCOPE_CAPTURE_RANGE", "signal"}, {"WARPSCOPE_CAPTURE_SIGNAL", "TERM"}};
  ASSERT_FALSE(ParseConfig(clash.fn(), &c, &error));
  EXPECT_EQ(error.ForVariable(),
            "WARPSCOPE_CAPTURE_SIGNAL='TERM' is also a termination signal warpscope handles; "
            "pick another (default SIGUSR2)");
}

TEST(ConfigTest, EchoedValuesAreCutAndKeptOnOneLine) {
  EXPECT_EQ(QuoteValue("abc"), "'abc'");
  EXPECT_EQ(QuoteValue(""), "''");
  EXPECT_EQ(QuoteValue(std::string(80, 'x')), "'" + std::string(80, 'x') + "'");
  EXPECT_EQ(QuoteValue(std::string(100000, 'x')),
            "'" + std::string(80, 'x') + "...' (100000 bytes)");
  EXPECT_EQ(QuoteValue("a\nb\tc\x01"), "'a\\nb\\tc\\x01'");
  // A multi-byte character across the cut is not split: 79 ASCII bytes, then "é" (2 bytes).
  const std::string accented = std::string(79, 'x') + "\xC3\xA9" + std::string(10, 'y');
  EXPECT_EQ(QuoteValue(accented), "'" + std::string(79, 'x') + "...' (91 bytes)");
  // Every message about a bad variable goes through it.
  Env env;
  env.vars["WARPSCOPE_TRACE"] = std::string(100000, 'k');
  Config c;
  std::string error;
  EXPECT_FALSE(ParseConfig(env.fn(), &c, &error));
  EXPECT_LT(error.size(), 300u) << error;
  EXPECT_NE(error.find("...' (100000 bytes) is not a list of trace kinds"), std::string::npos)
      << error;
}

TEST(ConfigTest, CrossFieldChecks) {
  Config c;
  std::string error;
  Env nvtx_without_name;
  nvtx_without_name.vars["WARPSCOPE_CAPTURE_RANGE"] = "nvtx";
  EXPECT_FALSE(ParseConfig(nvtx_without_name.fn(), &c, &error));
  EXPECT_NE(error.find("WARPSCOPE_NVTX_CAPTURE"), std::string::npos);
  Env repeat_without_range;
  repeat_without_range.vars["WARPSCOPE_CAPTURE_RANGE_END"] = "repeat";
  EXPECT_FALSE(ParseConfig(repeat_without_range.fn(), &c, &error));
  Env signal_clash;
  signal_clash.vars = {{"WARPSCOPE_CAPTURE_RANGE", "signal"}, {"WARPSCOPE_CAPTURE_SIGNAL", "TERM"}};
  EXPECT_FALSE(ParseConfig(signal_clash.fn(), &c, &error));
}

TEST(ConfigTest, LongJobSettings) {
  Env env;
  env.vars = {{"WARPSCOPE_CAPTURE_RANGE", "control"},
              {"WARPSCOPE_CAPTURE_RANGE_END", "repeat"},
              {"WARPSCOPE_MAX_SIZE", "1.5G"},
              {"WARPSCOPE_MAX_DURATION", "10m"},
              {"WARPSCOPE_CONTROL", "0"}};
  Config c;
  std::string error;
  ASSERT_TRUE(ParseConfig(env.fn(), &c, &error)) << error;
  EXPECT_EQ(c.capture_range, CaptureRange::kControl);
  EXPECT_EQ(c.max_size_bytes, 1610612736u);
  EXPECT_EQ(c.max_duration_s, 600);
  EXPECT_FALSE(c.control);

  Env flight;
  flight.vars = {{"WARPSCOPE_FLIGHT_RECORDER", "30"},
                 {"WARPSCOPE_FLIGHT_RECORDER_MB", "512"},
                 {"WARPSCOPE_SLOW_STEP", "train_step@app"},
                 {"WARPSCOPE_SLOW_STEP_THRESHOLD", "500ms"},
                 {"WARPSCOPE_SLOW_STEP_FACTOR", "2.5x"}};
  ASSERT_TRUE(ParseConfig(flight.fn(), &c, &error)) << error;
  EXPECT_EQ(c.flight_recorder_s, 30);
  EXPECT_EQ(c.flight_recorder_mb, 512u);
  EXPECT_EQ(c.slow_step_name, "train_step");
  EXPECT_EQ(c.slow_step_domain, "app");
  EXPECT_EQ(c.slow_step_threshold_s, 0.5);
  EXPECT_EQ(c.slow_step_factor, 2.5);
}

TEST(ConfigTest, LongJobRefusals) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"WARPSCOPE_MAX_SIZE", "2X"}}, "WARPSCOPE_MAX_SIZE='2X' is not a size in bytes"},
      {{{"WARPSCOPE_MAX_SIZE", "-1"}}, "is not a size in bytes"},
      {{{"WARPSCOPE_MAX_SIZE", "2P"}}, "is not a size in bytes"},
      {{{"WARPSCOPE_SLOW_STEP_FACTOR", "1"}}, "is not a factor greater than 1"},
      {{{"WARPSCOPE_SLOW_STEP_FACTOR", "abc"}}, "is not a factor greater than 1"},
      {{{"WARPSCOPE_FLIGHT_RECORDER_MB", "2"}}, "is not a memory size in MiB (4-65536)"},
      {{{"WARPSCOPE_SLOW_STEP", "train_step"}}, "needs the flight recorder"},
      {{{"WARPSCOPE_FLIGHT_RECORDER", "30"}, {"WARPSCOPE_CAPTURE_RANGE", "cudaProfilerApi"}},
       "takes no capture range but none, or signal"},
      {{{"WARPSCOPE_FLIGHT_RECORDER", "30"}, {"WARPSCOPE_MAX_SIZE", "1G"}},
       "do not apply to it"},
      {{{"WARPSCOPE_CAPTURE_RANGE", "sometimes"}}, "(none, cudaProfilerApi, nvtx, signal, control)"},
  };
  for (const auto& [vars, expected] : cases) {
    Env env;
    env.vars = vars;
    Config c;
    std::string error;
    EXPECT_FALSE(ParseConfig(env.fn(), &c, &error)) << expected;
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
}

TEST(ConfigTest, SignalNames) {
  int sig = 0;
  std::string what;
  EXPECT_TRUE(ParseSignal("usr2", &sig, &what));
  EXPECT_EQ(sig, SIGUSR2);
  EXPECT_TRUE(ParseSignal("10", &sig, &what));
  EXPECT_EQ(sig, 10);
  EXPECT_TRUE(ParseSignal("SIGRTMIN+2", &sig, &what));
  EXPECT_EQ(sig, SIGRTMIN + 2);
  EXPECT_FALSE(ParseSignal("SIGSEGV", &sig, &what));
  EXPECT_FALSE(ParseSignal("99", &sig, &what));
}

TEST(ConfigTest, TraceKindsRoundTrip) {
  TraceKinds k;
  std::string what;
  ASSERT_TRUE(ParseTraceKinds("cuda, nvtx", &k, &what));
  EXPECT_EQ(TraceKindsString(k), "kernel,launch,memory,alloc,runtime,nvtx");
  ASSERT_TRUE(ParseTraceKinds("kernel,launch", &k, &what));
  EXPECT_TRUE(k.launch && k.kernel && !k.runtime);
  EXPECT_EQ(TraceKindsString(k), "kernel,launch");
  ASSERT_TRUE(ParseTraceKinds("kernel,alloc", &k, &what));
  EXPECT_TRUE(k.kernel && k.alloc && !k.memory && !k.launch);
  EXPECT_EQ(TraceKindsString(k), "kernel,alloc");
  // The default list records allocations: `alloc` is part of `cuda`, and on in the struct.
  ASSERT_TRUE(ParseTraceKinds(Setting(SettingId::kTrace).default_value, &k, &what));
  EXPECT_TRUE(k.alloc);
  EXPECT_EQ(k, TraceKinds{});
  ASSERT_TRUE(ParseTraceKinds("none", &k, &what));
  EXPECT_EQ(TraceKindsString(k), "none");
  EXPECT_FALSE(ParseTraceKinds(",,", &k, &what));
}

}  // namespace
}  // namespace warpscope
