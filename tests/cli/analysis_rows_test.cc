// The list of analyses and its one runner (analyzers/analyses/analysis.h,
// analyzers/cli/analysis_runner.cc): `help` lists every row; every command that reads traces
// takes files, folders and globs alike (model/trace_paths.h); counts are checked after
// expansion; --table and -o work for every row.
#include <fstream>
#include <string>
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

}  // namespace
}  // namespace warpscope::testing
