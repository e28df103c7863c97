// Tests of trace file names (proto/writer/output_name.h): the escapes, %r and the folder form,
// whether a pattern names each process apart, the "_<pid>" suffix, the wildcard that finds a
// pattern's files, and the folder the folder form makes.
#include "proto/writer/output_name.h"

#include <fnmatch.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "tests/writer/writer_test_support.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using writer_test::TempDir;

using Env = std::map<std::string, std::string>;

OutputGetEnv GetEnvOf(const Env& env) {
  return [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

class ExpandTest : public ::testing::Test {
 protected:
  bool Expand(std::string_view pattern, std::string* out, std::string* error) {
    return ExpandOutputPattern(
        pattern, 4242, "node1.cluster", GetEnvOf(env_),
        [this](const std::string& path) { return existing_.count(path) > 0; }, out, error);
  }
  std::string ExpandOk(std::string_view pattern) {
    std::string out, error;
    EXPECT_TRUE(Expand(pattern, &out, &error)) << pattern << ": " << error;
    EXPECT_EQ(error, "");
    return out;
  }
  std::string ExpandError(std::string_view pattern) {
    std::string out, error;
    EXPECT_FALSE(Expand(pattern, &out, &error)) << pattern << " gave " << out;
    EXPECT_THAT(error, StartsWith("warpscope: "));
    EXPECT_EQ(error.find('\n'), std::string::npos);
    return error;
  }
  Env env_ = {{"RANK", "3"}, {"EMPTY", ""}, {"JOB", "run.7"}};
  std::set<std::string> existing_;
};

TEST_F(ExpandTest, SubstitutesEscapes) {
  EXPECT_EQ(ExpandOk("trace"), "trace.wst");
  EXPECT_EQ(ExpandOk("trace.wst"), "trace.wst");
  EXPECT_EQ(ExpandOk("trace.pb"), "trace.pb");
  EXPECT_EQ(ExpandOk("trace_%p"), "trace_4242.wst");
  EXPECT_EQ(ExpandOk("/tmp/x/%h_%p.wst"), "/tmp/x/node1.cluster_4242.wst");
  EXPECT_EQ(ExpandOk("rank%q{RANK}"), "rank3.wst");
  EXPECT_EQ(ExpandOk("rank%q{UNSET}_x"), "rank_x.wst");
  EXPECT_EQ(ExpandOk("rank%q{EMPTY}"), "rank.wst");
  EXPECT_EQ(ExpandOk("100%%"), "100%.wst");
  EXPECT_EQ(ExpandOk("%%p"), "%p.wst");
  EXPECT_EQ(ExpandOk("%q{RANK}%q{RANK}"), "33.wst");
}

TEST_F(ExpandTest, ExtensionIsDecidedByTheLiteralLastComponent) {
  // Dots that come from substitutions or from directories do not count as an extension.
  EXPECT_EQ(ExpandOk("trace_%h"), "trace_node1.cluster.wst");
  EXPECT_EQ(ExpandOk("job_%q{JOB}"), "job_run.7.wst");
  EXPECT_EQ(ExpandOk("out.d/trace"), "out.d/trace.wst");
  EXPECT_EQ(ExpandOk(".hidden"), ".hidden.wst");
  EXPECT_EQ(ExpandOk("trace."), "trace.");
}

TEST_F(ExpandTest, SequenceNumberPicksTheFirstFreeName) {
  EXPECT_EQ(ExpandOk("run_%n"), "run_1.wst");
  existing_ = {"run_1.wst", "run_2.wst", "run_4.wst"};
  EXPECT_EQ(ExpandOk("run_%n"), "run_3.wst");
  // Several %n take the same number; the check is on the full name.
  existing_ = {"a1/b1.wst"};
  EXPECT_EQ(ExpandOk("a%n/b%n"), "a2/b2.wst");
  existing_ = {"r3_1.wst"};
  EXPECT_EQ(ExpandOk("r%q{RANK}_%n"), "r3_2.wst");
}

TEST_F(ExpandTest, WindowNumber) {
  EXPECT_EQ(ExpandOk("run_w%w"), "run_w1.wst");  // the first window by default
  std::string out, error;
  ASSERT_TRUE(ExpandOutputPattern("run_%r_w%w.wst", 5, "h", GetEnvOf(env_), nullptr, &out, &error,
                                  12));
  EXPECT_EQ(out, "run_3_w12.wst");
  EXPECT_TRUE(OutputPatternHasWindow("run_%w"));
  EXPECT_TRUE(OutputPatternHasWindow("%%%w"));
  EXPECT_FALSE(OutputPatternHasWindow("run_%%w"));  // a literal "%w"
  EXPECT_FALSE(OutputPatternHasWindow("run_%p_%r"));
  EXPECT_FALSE(OutputPatternHasWindow("run%"));
  EXPECT_EQ(OutputPatternGlob("run_%w.wst"), "run_*.wst");
}

TEST_F(ExpandTest, RejectsMalformedPatterns) {
  EXPECT_THAT(ExpandError("trace_%x"), HasSubstr("unknown escape %x; use %p, %h, %r, %q{VAR}"));
  EXPECT_THAT(ExpandError("trace_%"), HasSubstr("lone '%'"));
  EXPECT_THAT(ExpandError("trace_%q"), HasSubstr("unterminated %q{"));
  EXPECT_THAT(ExpandError("trace_%qRANK"), HasSubstr("unterminated %q{"));
  EXPECT_THAT(ExpandError("trace_%q{RANK"), HasSubstr("unterminated %q{"));
  EXPECT_THAT(ExpandError("trace_%q{}"), HasSubstr("empty %q{}"));
  EXPECT_THAT(ExpandError("dir_%x/"), HasSubstr("unknown escape %x"));
}

TEST_F(ExpandTest, SequenceNumberRunsOut) {
  std::string out, error;
  const bool ok = ExpandOutputPattern(
      "t%n", 1, "h", [](const char*) -> const char* { return nullptr; },
      [](const std::string&) { return true; }, &out, &error);
  EXPECT_FALSE(ok);
  EXPECT_THAT(error, HasSubstr("%n found no free number"));
}

// %r is the first rank variable that is set, in the order of job_variables.h, whichever
// launcher set it; without one it is the pid.
TEST_F(ExpandTest, RankIsTheFirstRankVariableSetElseThePid) {
  const std::pair<const char*, const char*> launchers[] = {{"RANK", "5"},
                                                           {"OMPI_COMM_WORLD_RANK", "6"},
                                                           {"PMIX_RANK", "7"},
                                                           {"PMI_RANK", "8"},
                                                           {"SLURM_PROCID", "9"}};
  for (const auto& [variable, value] : launchers) {
    env_ = {{variable, value}};
    EXPECT_EQ(ExpandOk("run_%r.wst"), std::string("run_") + value + ".wst") << variable;
  }
  env_ = {};
  EXPECT_EQ(ExpandOk("run_%r.wst"), "run_pid4242.wst");
  env_ = {{"RANK", ""}};  // set but empty says nothing
  EXPECT_EQ(ExpandOk("run_%r"), "run_pid4242.wst");
  // torchrun's RANK wins over the Slurm task id of the srun that started torchrun.
  env_ = {{"SLURM_PROCID", "0"}, {"RANK", "12"}, {"PMI_RANK", "3"}};
  EXPECT_EQ(ExpandOk("%h/r%r"), "node1.cluster/r12.wst");
}

TEST_F(ExpandTest, AFolderPatternNamesOneTracePerRankInIt) {
  EXPECT_TRUE(IsFolderPattern("out/"));
  EXPECT_FALSE(IsFolderPattern("out"));
  EXPECT_FALSE(IsFolderPattern(""));
  EXPECT_EQ(ExpandOk("out/"), "out/rank3.wst");
  EXPECT_EQ(ExpandOk("/scratch/job_%q{JOB}/"), "/scratch/job_run.7/rank3.wst");
  env_ = {};
  EXPECT_EQ(ExpandOk("out/"), "out/rankpid4242.wst");
}

TEST(OutputNameTest, PerProcessPatterns) {
  const Env env = {{"RANK", "0"}, {"EMPTY", ""}};
  const OutputGetEnv get = GetEnvOf(env);
  EXPECT_TRUE(OutputPatternIsPerProcess("run_%p.wst", get));
  EXPECT_TRUE(OutputPatternIsPerProcess("run_%r.wst", get));
  EXPECT_TRUE(OutputPatternIsPerProcess("run_%q{RANK}.wst", get));
  EXPECT_TRUE(OutputPatternIsPerProcess("out/", get));                     // rank%r.wst
  EXPECT_FALSE(OutputPatternIsPerProcess("run_%q{LOCAL_RANK}.wst", get));  // not set here
  EXPECT_FALSE(OutputPatternIsPerProcess("run_%q{EMPTY}.wst", get));
  EXPECT_FALSE(OutputPatternIsPerProcess("run_%h_%n.wst", get));
  EXPECT_FALSE(OutputPatternIsPerProcess("run_%%p.wst", get));  // a literal "%p"
  EXPECT_FALSE(OutputPatternIsPerProcess("run_%p%", get));      // malformed
}

TEST(OutputNameTest, SuffixGoesBeforeTheExtension) {
  EXPECT_EQ(WithSuffixBeforeExtension("run.wst", "_%p"), "run_%p.wst");
  EXPECT_EQ(WithSuffixBeforeExtension("run_%q{RANK}.wst", "_%p"), "run_%q{RANK}_%p.wst");
  EXPECT_EQ(WithSuffixBeforeExtension("run", "_%p"), "run_%p");
  EXPECT_EQ(WithSuffixBeforeExtension("out.d/run", "_7"), "out.d/run_7");
  EXPECT_EQ(WithSuffixBeforeExtension("out/.hidden", "_7"), "out/.hidden_7");
  EXPECT_EQ(WithSuffixBeforeExtension("/t/run_0.wst", "_7"), "/t/run_0_7.wst");
}

TEST(OutputNameTest, GlobMatchesEveryNameThePatternGives) {
  EXPECT_EQ(OutputPatternGlob("run_%q{RANK}.wst"), "run_*.wst");
  EXPECT_EQ(OutputPatternGlob("run_%p_%h"), "run_*_*.wst");
  EXPECT_EQ(OutputPatternGlob("d/r%r_%n.x"), "d/r*_*.x");
  EXPECT_EQ(OutputPatternGlob("out/"), "out/rank*.wst");
  EXPECT_EQ(OutputPatternGlob("a[1]*?\\%%.wst"), "a\\[1]\\*\\?\\\\%.wst");
  EXPECT_EQ(OutputPatternGlob("bad%"), "");
  // Each name a process can expand the pattern to matches it; others do not.
  const Env env = {{"RANK", "2"}};
  for (const char* pattern : {"run_%q{RANK}.wst", "r%r_%p", "x[%h].wst", "d/", "t%n", "w%w"}) {
    std::string name, error;
    ASSERT_TRUE(ExpandOutputPattern(pattern, 77, "h.1", GetEnvOf(env), nullptr, &name, &error));
    EXPECT_EQ(fnmatch(OutputPatternGlob(pattern).c_str(), name.c_str(), FNM_PATHNAME), 0)
        << pattern << " gave " << name;
  }
  EXPECT_NE(fnmatch(OutputPatternGlob("run_%r.wst").c_str(), "walk_1.wst", FNM_PATHNAME), 0);
  EXPECT_NE(fnmatch(OutputPatternGlob("run_%r.wst").c_str(), "run_1/x.wst", FNM_PATHNAME), 0);
}

TEST(OutputNameTest, MakeOutputFolderMakesOneLevel) {
  TempDir dir;
  std::string error;
  const std::string folder = dir.File("job");
  EXPECT_TRUE(MakeOutputFolder(folder + "/rank0.wst", &error)) << error;
  struct stat st {};
  ASSERT_EQ(stat(folder.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0755u & ~static_cast<unsigned>(umask(umask(0))));
  EXPECT_TRUE(MakeOutputFolder(folder + "/rank1.wst", &error)) << "already there";
  EXPECT_TRUE(MakeOutputFolder("rank0.wst", &error)) << "the current folder";
  // Only one level, and not over a file.
  EXPECT_FALSE(MakeOutputFolder(dir.File("a/b/rank0.wst"), &error));
  EXPECT_THAT(error, StartsWith("warpscope: cannot create the trace folder '" + dir.File("a/b")));
  EXPECT_THAT(error, HasSubstr("No such file or directory"));
  { std::ofstream(dir.File("file")) << "x"; }
  EXPECT_FALSE(MakeOutputFolder(dir.File("file/rank0.wst"), &error));
  EXPECT_THAT(error, HasSubstr("a file has that name"));
  rmdir(folder.c_str());
}

}  // namespace
}  // namespace warpscope
