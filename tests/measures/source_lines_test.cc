// Tests of PC-to-source-line mapping (analyzers/measures/source_lines.h): the lookup protocol with
// a fake locator (lines, cubins without line info, refusals, PCs without a cubin, a lookup that
// crashes), and CUPTI's own SASS-to-source correlation on the cubins of a trace recorded on an
// H200 from tests/gpu/pc_kernels.cu built with -lineinfo.
#include "analyzers/measures/source_lines.h"

#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/model/cupti_host.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;

std::string FakeElf(char tag) {
  std::string image =
      "\x7f"
      "ELF";
  image.resize(128, tag);
  return image;
}

// A model to hang stand-in cubins on (its own events do not matter here).
TraceModel Model() {
  absl::StatusOr<TraceModel> model = TraceModel::Load(::warpscope::testing::WriteTempFile(
      ::warpscope::testing::FixtureWire("synthetic/basic.textproto"), "basic.wst"));
  EXPECT_TRUE(model.ok()) << model.status();
  model->cubins.clear();
  return *std::move(model);
}

TEST(JoinSourcePathTest, RelativeFilesJoinTheirDirectory) {
  EXPECT_EQ(JoinSourcePath("/src", "k.cu"), "/src/k.cu");
  EXPECT_EQ(JoinSourcePath("/src/", "k.cu"), "/src/k.cu");
  EXPECT_EQ(JoinSourcePath("/src", "/abs/k.cu"), "/abs/k.cu");
  EXPECT_EQ(JoinSourcePath("", "k.cu"), "k.cu");
}

// The fake locator answers by offset: 0x10 -> line 7 of a relative file, 0x20 -> no line
// table, 0x30 -> refused; and by cubin byte: cubin 'B' gives line 9 of an absolute file.
absl::StatusOr<SassSourceLine> FakeLocator(std::span<const uint8_t> cubin,
                                           const std::string& function, uint64_t pc) {
  if (function != "_Z1kv") return absl::NotFoundError("no function " + function);
  if (cubin[10] == 'B') return SassSourceLine{"/ignored", "/abs/b.cu", 9};
  if (pc == 0x10) return SassSourceLine{"/src", "a.cu", 7};
  if (pc == 0x20) return SassSourceLine{};
  return absl::NotFoundError("refused at 0x30");
}

TEST(MapPcsToSourceTest, SortsEveryPcIntoOneOutcome) {
  TraceModel first = Model(), second = Model();
  first.cubins[1] = FakeElf('A');
  second.cubins[2] = FakeElf('B');
  first.cubins[3] = "not an ELF image";
  const std::vector<PcKey> pcs = {{1, "_Z1kv", 0x10},    {1, "_Z1kv", 0x20}, {1, "_Z1kv", 0x30},
                                  {2, "_Z1kv", 0x10},    {3, "_Z1kv", 0x10}, {4, "_Z1kv", 0x10},
                                  {1, "_Z5otherv", 0x10}};
  const SourceMapping m = MapPcsToSource({&first, &second}, pcs, FakeLocator);
  EXPECT_EQ(m.pcs, 7u);
  ASSERT_EQ(m.lines.size(), 2u);
  EXPECT_EQ(m.lines.at(pcs[0]).path, "/src/a.cu");
  EXPECT_EQ(m.lines.at(pcs[0]).line, 7u);
  EXPECT_EQ(m.lines.at(pcs[3]).path, "/abs/b.cu");  // the cubin of the second trace
  EXPECT_EQ(m.lines.at(pcs[3]).line, 9u);
  EXPECT_EQ(m.without_line_info, 1u);
  EXPECT_EQ(m.without_cubin, 2u);  // crc 3 is not ELF, crc 4 is in no trace
  EXPECT_EQ(m.failed, 2u);         // refused at 0x30, unknown function
  EXPECT_EQ(m.problem, "refused at 0x30");
}

TEST(MapPcsToSourceTest, NoCubinsNeedNoLookup) {
  TraceModel model = Model();
  int calls = 0;
  const SourceMapping m = MapPcsToSource(
      {&model}, {{9, "_Z1kv", 0x10}},
      [&](std::span<const uint8_t>, const std::string&,
          uint64_t) -> absl::StatusOr<SassSourceLine> {
        ++calls;  // would run in the child, so this count could not reach the test anyway
        return SassSourceLine{};
      });
  EXPECT_EQ(m.without_cubin, 1u);
  EXPECT_TRUE(m.lines.empty());
  EXPECT_EQ(m.failed, 0u);
}

TEST(MapPcsToSourceTest, ALookupThatCrashesCostsOnlyTheRemainingLines) {
  TraceModel model = Model();
  model.cubins[1] = FakeElf('A');
  const std::vector<PcKey> pcs = {{1, "_Z1kv", 0x10}, {1, "_Z1kv", 0x99}, {1, "_Z1kv", 0x20}};
  const SourceMapping m =
      MapPcsToSource({&model}, pcs,
                     [](std::span<const uint8_t> cubin, const std::string& function,
                        uint64_t pc) -> absl::StatusOr<SassSourceLine> {
                       if (pc == 0x99) std::raise(SIGSEGV);  // as CUPTI does on some corrupt cubins
                       return FakeLocator(cubin, function, pc);
                     });
  ASSERT_EQ(m.lines.size(), 1u);  // the line found before the crash is kept
  EXPECT_EQ(m.lines.at(pcs[0]).line, 7u);
  EXPECT_EQ(m.failed, 2u);
  EXPECT_THAT(m.problem, HasSubstr("crashed (signal 11)"));
  EXPECT_THAT(m.problem, HasSubstr("corrupt"));
}

// CUPTI itself, on the cubins of the recorded trace: needs libcupti on this machine (any
// CUDA toolkit or the nvidia-cuda-cupti wheel), no GPU.
class CuptiSourceLinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::StatusOr<std::string> lib = CuptiHostLibraryPath(); !lib.ok()) {
      GTEST_SKIP() << "no libcupti here: " << lib.status();
    }
    absl::StatusOr<TraceModel> loaded = TraceModel::Load(
        ::warpscope::testing::SourceDir() + "/tests/data/cuda13.0_sm90/pc_kernels.wst");
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    model_.emplace(*std::move(loaded));
  }
  // The PC record of `function` with the most samples.
  PcKey HottestPc(std::string_view function) const {
    PcKey best;
    uint64_t most = 0;
    for (const PcSampleBatch& batch : model_->pc_sample_batches) {
      for (const PcRecord& r : batch.records) {
        if (r.function_name != function) continue;
        uint64_t samples = 0;
        for (const auto& [index, n] : r.stall_samples) samples += n;
        if (samples > most) {
          most = samples;
          best = {r.cubin_crc, std::string(r.function_name), r.pc_offset};
        }
      }
    }
    return best;
  }
  std::optional<TraceModel> model_;
};

TEST_F(CuptiSourceLinesTest, MapsThePointerChaseToItsLine) {
  const PcKey pc = HottestPc("_Z12ws_pc_memoryPKjPjy");
  ASSERT_NE(pc.cubin_crc, 0u);
  const std::string* cubin = model_->FindCubin(pc.cubin_crc);
  ASSERT_NE(cubin, nullptr);
  absl::StatusOr<SassSourceLine> line = CuptiSassToSource(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(cubin->data()), cubin->size()),
      pc.function, pc.pc_offset);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->file, "pc_kernels.cu") << line->dir;
  EXPECT_THAT(line->dir, HasSubstr("tests/gpu"));
  // tests/gpu/pc_kernels.cu line 44: `i = next[i & ((1u << 24) - 1)];`
  EXPECT_EQ(line->line, 44u);

  // A function the cubin does not have is refused, not guessed.
  line = CuptiSassToSource(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(cubin->data()), cubin->size()),
      "_Z9no_such_kv", pc.pc_offset);
  EXPECT_FALSE(line.ok());

  const SourceMapping m = MapPcsToSource({&*model_}, {pc});
  ASSERT_EQ(m.lines.size(), 1u) << m.problem;
  EXPECT_EQ(m.lines.begin()->second.line, 44u);
  EXPECT_TRUE(m.lines.begin()->second.path.ends_with("tests/gpu/pc_kernels.cu"));
}

TEST_F(CuptiSourceLinesTest, ACorruptCubinCostsItsLinesNotTheProcess) {
  const PcKey pc = HottestPc("_Z12ws_pc_memoryPKjPjy");
  std::string& cubin = model_->cubins.at(pc.cubin_crc);
  // Keep the ELF header, scramble everything after it.
  for (size_t i = 64; i < cubin.size(); ++i) cubin[i] = static_cast<char>(i * 131 + 7);
  const SourceMapping m = MapPcsToSource({&*model_}, {pc});
  EXPECT_TRUE(m.lines.empty());
  EXPECT_EQ(m.failed + m.without_line_info, 1u);
}

}  // namespace
}  // namespace warpscope
