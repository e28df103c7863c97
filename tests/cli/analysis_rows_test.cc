// The list of analyses and its one runner (analyzers/analyses/analysis.h,
// analyzers/cli/analysis_runner.cc): `help` lists every row; every command that reads traces
// takes files, folders and globs alike (model/trace_paths.h); counts are checked after
// expansion; --table and -o work for every row; every column holds what it declares.
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/model/trace_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A folder holding the basic fixture twice, as rank_0.wst and rank_1.wst, and a note.txt.
std::string TwoRankFolder() {
  const std::string dir = MakeTempDir();
  const std::string wire = FixtureWire("synthetic/basic.textproto");
  for (const char* name : {"rank_1.wst", "rank_0.wst"}) {
    std::ofstream(absl::StrCat(dir, "/", name), std::ios::binary) << wire;
  }
  std::ofstream(dir + "/note.txt") << "not a trace";
  return dir;
}

TEST(ExpandTracePathsTest, FilesFoldersAndGlobs) {
  const std::string dir = TwoRankFolder();
  const std::string r0 = dir + "/rank_0.wst", r1 = dir + "/rank_1.wst";
  EXPECT_THAT(*ExpandTracePaths({dir}), ElementsAre(r0, r1));            // by name
  EXPECT_THAT(*ExpandTracePaths({dir + "/rank_*.wst"}), ElementsAre(r0, r1));
  EXPECT_THAT(*ExpandTracePaths({r1, dir + "/rank_0*"}), ElementsAre(r1, r0));  // in order
  EXPECT_THAT(*ExpandTracePaths({"missing.wst"}), ElementsAre("missing.wst"));  // the loader's
  absl::StatusOr<std::vector<std::string>> none = ExpandTracePaths({dir + "/x_*.wst"});
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("matches no file"));
  const std::string empty = MakeTempDir();
  absl::StatusOr<std::vector<std::string>> bare = ExpandTracePaths({empty});
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.status().message(), empty + " is a folder without .wst traces");
  EXPECT_FALSE(ExpandTracePaths({}).ok());
}

TEST(AnalysisRowsTest, HelpListsEveryRowAndEachDescribesItself) {
  const std::string help = RunCli("help").out;
  for (const AnalysisRow& row : AnalysisRows()) {
    EXPECT_THAT(help, HasSubstr(absl::StrCat("  ", row.name, " ")));
    CliResult r = RunCli(absl::StrCat(row.name, " --help"));
    EXPECT_EQ(r.exit_code, 0) << row.name;
    EXPECT_THAT(r.out, StartsWith(absl::StrCat("usage: warpscope ", row.name, " ", row.usage)));
    for (const AnalysisOption& option : row.options) {
      EXPECT_THAT(r.out, HasSubstr("--" + option.name)) << row.name;
    }
    EXPECT_THAT(r.out, HasSubstr("-t, --table NAME"));
    EXPECT_THAT(r.out, HasSubstr("-o, --output FILE"));
  }
}

TEST(AnalysisRowsTest, FoldersAndGlobsReadAsTheFilesTheyHold) {
  const std::string dir = TwoRankFolder();
  const std::string files = absl::StrCat(dir, "/rank_0.wst ", dir, "/rank_1.wst");
  for (const char* command : {"summary -f csv", "stalls", "advise -f csv", "job -f csv"}) {
    CliResult by_files = RunCli(absl::StrCat(command, " ", files));
    CliResult by_folder = RunCli(absl::StrCat(command, " ", dir));
    CliResult by_glob = RunCli(absl::StrCat(command, " '", dir, "/rank_*.wst'"));
    EXPECT_EQ(by_folder.exit_code, by_files.exit_code) << command << by_folder.err;
    EXPECT_EQ(by_folder.out, by_files.out) << command;
    EXPECT_EQ(by_glob.out, by_files.out) << command;
    EXPECT_EQ(by_glob.err, by_files.err) << command;
  }
  // diff reads the folder's two traces as BASE and NEW, by name.
  CliResult diff = RunCli("diff -f csv " + dir);
  EXPECT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_EQ(diff.out, RunCli("diff -f csv " + files).out);
  // export takes them too: one process per trace.
  CliResult exported = RunCli(absl::StrCat("export -f chrome -o ", dir, "/out.json ", dir));
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
}

TEST(AnalysisRowsTest, CountsAreCheckedAfterExpansion) {
  const std::string dir = TwoRankFolder();
  CliResult tail = RunCli("tail " + dir);
  EXPECT_EQ(tail.exit_code, 2);
  EXPECT_EQ(tail.err, absl::StrCat("warpscope: tail reads one trace, not 2 (from ", dir,
                                   "): name one of them\n"));
  CliResult diff = RunCli(absl::StrCat("diff ", dir, " ", dir, "/rank_0.wst"));
  EXPECT_EQ(diff.exit_code, 2);
  EXPECT_THAT(diff.err, HasSubstr("diff needs two traces, BASE and NEW"));
  CliResult glob = RunCli(absl::StrCat("info '", dir, "/none_*.wst'"));
  EXPECT_EQ(glob.exit_code, 1);
  EXPECT_THAT(glob.err, HasSubstr("matches no file; check the pattern"));
  CliResult empty = RunCli("export -f chrome -o - " + MakeTempDir());
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_THAT(empty.err, HasSubstr("is a folder without .wst traces"));
}

TEST(AnalysisRowsTest, TableAndOutputServeEveryRow) {
  const std::string trace = WriteTempFile(FixtureWire("synthetic/basic.textproto"), "basic.wst");
  CliResult events = RunCli("info " + trace + " -f csv --table events");
  EXPECT_EQ(events.exit_code, 0) << events.err;
  EXPECT_THAT(events.out, StartsWith("kind,count\nkernel,"));
  CliResult rows = RunCli("diff " + trace + " " + trace + " -f json --table scalars");
  EXPECT_EQ(rows.exit_code, 0) << rows.err;
  EXPECT_THAT(rows.out, HasSubstr("\"regressions\":0"));
  CliResult bad = RunCli("occupancy " + trace + " --table nope");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("no table named 'nope'; this report has scalars, occupancy"));
  const std::string dir = MakeTempDir();
  CliResult to_file = RunCli(absl::StrCat("occupancy ", trace, " -f csv -o ", dir, "/occ.csv"));
  EXPECT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  std::ifstream in(dir + "/occ.csv");
  const std::string written((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(written, RunCli("occupancy " + trace + " -f csv").out);
  CliResult folder = RunCli(absl::StrCat("tail ", trace, " -o ", dir));
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_THAT(folder.err, HasSubstr("is a directory; name a file in it, e.g."));
}

// A column cannot be declared without its kind: should Table::Column regain a default, this
// test no longer builds.
static_assert(!std::is_constructible_v<Table::Column, std::string, bool>);
static_assert(!std::is_constructible_v<Table::Column, std::string>);
static_assert(std::is_constructible_v<Table::Column, std::string, bool, CellKind>);

// Whether a cell holds what its column declares (an empty cell fits every kind; a real
// column may hold whole numbers).
bool FitsKind(const Cell& cell, CellKind kind) {
  if (std::holds_alternative<std::monostate>(cell.value)) return true;
  switch (kind) {
    case CellKind::kString:
      return std::holds_alternative<std::string>(cell.value);
    case CellKind::kInt:
    case CellKind::kUint64:
      return std::holds_alternative<int64_t>(cell.value);
    case CellKind::kReal:
      return std::holds_alternative<double>(cell.value) ||
             std::holds_alternative<int64_t>(cell.value);
    case CellKind::kBool:
      return std::holds_alternative<bool>(cell.value);
  }
  return false;
}

// Runs `row` in this process on `given` (files or a folder), its options at their defaults.
absl::StatusOr<AnalysisResult> RunRow(const AnalysisRow& row, std::vector<std::string> given,
                                      std::vector<TraceModel>& models) {
  std::map<std::string, std::string> options;
  for (const AnalysisOption& o : row.options) {
    if (o.required) options[o.name] = MakeTempDir() + "/" + o.example_file;
  }
  const OptionValues values(&row.options, options);
  AnalysisInputs in;
  in.given = std::move(given);
  in.paths = *ExpandTracePaths(in.given);
  models.clear();
  models.reserve(in.paths.size());
  if (LoadsTraces(row, in)) {
    for (const std::string& path : in.paths) {
      models.push_back(*TraceModel::Load(path));
      in.traces.push_back(&models.back());
    }
  }
  return row.run(in, values);
}

// Every column declares its kind (Table::Column has no default), and every table of every row
// on the bundled traces holds in each column only cells of that kind: a column declared with
// the wrong kind, or a cell of another kind added to it, fails here, since CSV, JSON and
// Python's frames type the column by what it declares.
TEST(AnalysisRowsTest, EveryColumnHoldsItsDeclaredKind) {
  const std::string traces = SourceDir() + "/examples/traces/";
  const std::vector<std::string> files = {traces + "synthetic_training_loop.wst",
                                          traces + "cuda13.0_sm90/pipeline_pm.wst",
                                          traces + "cuda13.0_sm90/stall_kernels.wst"};
  size_t cells_checked = 0;
  std::set<std::string> wrong;  // "row: table.column holds VALUE", once per column
  for (const AnalysisRow& row : AnalysisRows()) {
    std::vector<std::vector<std::string>> cases;
    if (row.input == AnalysisInput::kJob) {
      cases.push_back({traces + "cuda13.0_sm90/ddp_late_rank"});
    } else {
      for (const std::string& f : files) {
        cases.push_back(row.input == AnalysisInput::kPair ? std::vector{f, f} : std::vector{f});
      }
    }
    for (const std::vector<std::string>& given : cases) {
      std::vector<TraceModel> models;
      absl::StatusOr<AnalysisResult> result = RunRow(row, given, models);
      if (!result.ok()) continue;  // a trace without what the row reads (no PM samples)
      for (const auto& [name, table] : result->report.tables) {
        for (const std::vector<Cell>& cells : table.rows()) {
          for (size_t c = 0; c < cells.size(); ++c) {
            ++cells_checked;
            if (FitsKind(cells[c], table.columns()[c].kind)) continue;
            wrong.insert(absl::StrCat(row.name, ": ", name, ".", table.columns()[c].name, " holds ",
                                      CellText(cells[c], CellKind::kString)));
          }
        }
      }
    }
  }
  EXPECT_GT(cells_checked, 1000u);
  EXPECT_THAT(wrong, ::testing::IsEmpty());
}

}  // namespace
}  // namespace warpscope::testing
