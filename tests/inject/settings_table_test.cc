// The settings table (proto/settings/settings.h) against the documentation, its own parsers,
// the structs that carry the defaults, and `warpscope record`'s flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "analyzers/model/trace_reader.h"
#include "analyzers/launcher/record.h"
#include "analyzers/launcher/setting_check.h"
#include "collectors/pc_sampling/pc_sampling_config.h"
#include "collectors/pm_sampling/pm_sampling_config.h"
#include "libinject/config.h"
#include "proto/settings/settings.h"

namespace warpscope {
namespace {

std::string ReadDoc(const std::string& name) {
  const char* root = std::getenv("WARPSCOPE_SOURCE_DIR");
  const std::string path = std::string(root != nullptr ? root : ".") + "/docs/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first cell of each table row of a Markdown page ("| `X` | ..." gives "`X`").
std::vector<std::string> FirstCells(const std::string& markdown) {
  std::vector<std::string> cells;
  std::istringstream lines(markdown);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    const size_t end = line.find(" |", 1);
    cells.push_back(line.substr(2, end == std::string::npos ? std::string::npos : end - 2));
  }
  return cells;
}

// What one set has that the other lacks, for a failure message that says which names differ.
std::string Difference(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string out;
  for (const std::string& x : a) {
    if (b.count(x) == 0) out += " " + x;
  }
  return out.empty() ? " (none)" : out;
}

std::set<std::string> Matches(const std::vector<std::string>& cells, const std::regex& re,
                              int group) {
  std::set<std::string> out;
  for (const std::string& cell : cells) {
    for (std::sregex_iterator it(cell.begin(), cell.end(), re), end; it != end; ++it) {
      out.insert((*it)[group].str());
    }
  }
  return out;
}

TEST(SettingsTableTest, EveryDocumentedVariableIsInTheTableAndBack) {
  // configuration.md lists the library's variables and points to the collectors' pages for
  // theirs (PM and PC sampling, stacks).
  std::set<std::string> documented;
  const std::regex variable("WARPSCOPE_[A-Z0-9_]+");
  for (const char* page : {"configuration.md", "pm_sampling.md", "pc_sampling.md", "stacks.md"}) {
    const std::set<std::string> found = Matches(FirstCells(ReadDoc(page)), variable, 0);
    documented.insert(found.begin(), found.end());
  }
  std::set<std::string> table;
  for (const SettingSpec& s : kSettings) table.insert(std::string(s.variable));
  EXPECT_EQ(documented, table) << "documented, not in the table:" << Difference(documented, table)
                               << "\nin the table, not documented:"
                               << Difference(table, documented);
}

TEST(SettingsTableTest, EveryDocumentedRecordFlagIsInTheTableAndBack) {
  const std::vector<std::string> cells = FirstCells(ReadDoc("record.md"));
  std::vector<std::string> flag_cells;
  for (const std::string& cell : cells) {
    if (cell.rfind("`-", 0) == 0) flag_cells.push_back(cell);
  }
  const std::set<std::string> documented = Matches(flag_cells, std::regex("--([a-z0-9-]+)"), 1);
  const std::set<std::string> short_documented = Matches(flag_cells, std::regex("`-([a-z]),"), 1);
  std::set<std::string> table, short_table;
  for (const SettingSpec& s : kSettings) {
    if (!s.flag.empty()) table.insert(std::string(s.flag));
    if (!s.short_flag.empty()) short_table.insert(std::string(s.short_flag));
  }
  EXPECT_EQ(documented, table) << "in record.md, not in the table:" << Difference(documented, table)
                               << "\nin the table, not in record.md:"
                               << Difference(table, documented);
  EXPECT_EQ(short_documented, short_table);
}

TEST(SettingsTableTest, EveryDefaultParsesWithItsOwnParser) {
  for (const SettingSpec& s : kSettings) {
    if (s.default_value.empty()) continue;
    std::optional<SettingError> e = CheckSettingValue(s, s.default_value);
    EXPECT_FALSE(e.has_value()) << s.variable << ": " << (e ? e->ForVariable() : "");
  }
}

TEST(SettingsTableTest, ParsersRefuseWithTheRowsVariable) {
  for (SettingId id :
       {SettingId::kDelay, SettingId::kBufferSizeMb, SettingId::kPmInterval, SettingId::kPcPeriod,
        SettingId::kPcDebug, SettingId::kPmSampling, SettingId::kMaxTraceGb,
        SettingId::kDisable, SettingId::kStacks, SettingId::kStackDepth,
        SettingId::kStackLaunchEvery}) {
    std::optional<SettingError> e = CheckSettingValue(Setting(id), "junk");
    ASSERT_TRUE(e.has_value()) << Setting(id).variable;
    EXPECT_EQ(e->variable, Setting(id).variable);
    EXPECT_THAT(e->ForVariable(),
                ::testing::StartsWith(std::string(Setting(id).variable) + "='junk'"));
  }
}

// The structs' own initializers (used where a config is built by hand) say what the table
// says.
TEST(SettingsTableTest, StructDefaultsAreTheTables) {
  Config parsed;
  std::string error;
  ASSERT_TRUE(ParseConfig([](const char*) -> const char* { return nullptr; }, &parsed, &error))
      << error;
  const Config initial;
  EXPECT_EQ(parsed.output_pattern, initial.output_pattern);
  EXPECT_EQ(parsed.force_overwrite, initial.force_overwrite);
  EXPECT_EQ(parsed.delay_s, initial.delay_s);
  EXPECT_EQ(parsed.duration_s, initial.duration_s);
  EXPECT_EQ(parsed.capture_range, initial.capture_range);
  EXPECT_EQ(parsed.nvtx_range_name, initial.nvtx_range_name);
  EXPECT_EQ(parsed.capture_range_end, initial.capture_range_end);
  EXPECT_EQ(parsed.max_windows, initial.max_windows);
  EXPECT_EQ(parsed.trace, initial.trace);
  EXPECT_EQ(parsed.buffer_size_mb, initial.buffer_size_mb);
  EXPECT_EQ(parsed.device_buffer_mb, initial.device_buffer_mb);
  EXPECT_EQ(parsed.device_buffer_pool, initial.device_buffer_pool);
  EXPECT_EQ(parsed.writer_memory_mb, initial.writer_memory_mb);
  EXPECT_EQ(parsed.flush_interval_ms, initial.flush_interval_ms);
  EXPECT_EQ(parsed.monotonic_clock, initial.monotonic_clock);
  EXPECT_EQ(parsed.api_filter, initial.api_filter);
  EXPECT_EQ(parsed.capture_signal, initial.capture_signal);
  EXPECT_EQ(parsed.handle_signals, initial.handle_signals);
  EXPECT_EQ(parsed.log_level, initial.log_level);
  EXPECT_EQ(parsed.quiet, initial.quiet);
  EXPECT_EQ(parsed.max_size_bytes, initial.max_size_bytes);
  EXPECT_EQ(parsed.max_duration_s, initial.max_duration_s);
  EXPECT_EQ(parsed.flight_recorder_s, initial.flight_recorder_s);
  EXPECT_EQ(parsed.flight_recorder_mb, initial.flight_recorder_mb);
  EXPECT_EQ(parsed.slow_step_name, initial.slow_step_name);
  EXPECT_EQ(parsed.slow_step_threshold_s, initial.slow_step_threshold_s);
  EXPECT_EQ(parsed.slow_step_factor, initial.slow_step_factor);
  EXPECT_EQ(parsed.control, initial.control);

  PmSamplingConfig pm;
  PcSamplingConfig pc;
  std::string problem;
  for (const SettingSpec& s : kSettings) {
    if (s.default_value.empty()) continue;
    EXPECT_TRUE(ApplyPmSamplingSetting(s, s.default_value, &pm, &problem)) << s.variable;
    EXPECT_TRUE(ApplyPcSamplingSetting(s, s.default_value, &pc, &problem)) << s.variable;
  }
  const PmSamplingConfig pm_initial;
  EXPECT_EQ(pm.interval_ns, pm_initial.interval_ns);
  EXPECT_EQ(pm.hardware_buffer_bytes, pm_initial.hardware_buffer_bytes);
  EXPECT_EQ(pm.evaluation, pm_initial.evaluation);
  const PcSamplingConfig pc_initial;
  EXPECT_EQ(pc.period_exponent, pc_initial.period_exponent);
  EXPECT_EQ(pc.hardware_buffer_bytes, pc_initial.hardware_buffer_bytes);
  EXPECT_EQ(pc.debug, pc_initial.debug);

  EXPECT_EQ(std::stoull(std::string(Setting(SettingId::kMaxTraceGb).default_value)) << 30,
            kDefaultMaxTraceBytes);
}

TEST(SettingsTableTest, EveryRecordFlagFillsTheRequest) {
  for (const SettingSpec& s : kSettings) {
    RecordRequest request;
    EXPECT_EQ(SetRecordFlag(s.id, "1", &request), !s.flag.empty()) << s.variable;
    if (!s.flag.empty() && s.flag_is_switch) {
      EXPECT_TRUE(s.value_name.empty()) << s.variable;
    } else if (!s.flag.empty()) {
      EXPECT_FALSE(s.value_name.empty()) << s.variable;
    }
  }
}

// A refused flag value is named by its flag, from the table, through the typed error.
TEST(SettingsTableTest, RecordNamesTheFlagOfARefusedValue) {
  for (SettingId id :
       {SettingId::kDelay, SettingId::kFlushIntervalMs, SettingId::kLogLevel, SettingId::kTrace}) {
    RecordRequest request;
    request.command = {"./app"};
    ASSERT_TRUE(SetRecordFlag(id, "junk", &request));
    absl::StatusOr<RecordPlan> plan = BuildRecordPlan(request, {}, "/s.so", 1, 1);
    ASSERT_FALSE(plan.ok());
    EXPECT_THAT(std::string(plan.status().message()),
                ::testing::StartsWith(Setting(id).FlagName() + " 'junk' is not"));
  }
}

}  // namespace
}  // namespace warpscope
