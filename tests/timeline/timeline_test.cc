// `warpscope timeline` on tests/export/export_small.textproto (the exporters' fixture, whose
// events are listed at its top): the SVG is well-formed, every kernel in the window is drawn
// once, every row is labelled, the default window follows its rule, and the command checks
// its flags.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/timeline.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/export/export_fixture.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::warpscope::testing::CliResult;
using ::warpscope::testing::ExportFixtureText;
using ::warpscope::testing::FixtureWire;
using ::warpscope::testing::MakeTempDir;
using ::warpscope::testing::ReadFileOrDie;
using ::warpscope::testing::RunCli;
using ::warpscope::testing::TextprotoToWire;
using ::warpscope::testing::WriteTempFile;

TraceModel Load(const std::string& text, const std::string& name) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(WriteTempFile(TextprotoToWire(text), name));
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Well-formed XML as far as an SVG viewer cares: every element closed in order, attribute
// values quoted, no bare '&' or '<' in text.
void ExpectWellFormed(const std::string& svg) {
  std::vector<std::string> open;
  size_t i = 0;
  while ((i = svg.find('<', i)) != std::string::npos) {
    const size_t close = svg.find('>', i);
    ASSERT_NE(close, std::string::npos);
    const std::string tag = svg.substr(i + 1, close - i - 1);
    ASSERT_FALSE(tag.empty());
    ASSERT_EQ(Count(tag, "\"") % 2, 0u) << tag;
    ASSERT_EQ(tag.find('<'), std::string::npos) << tag;
    const std::string name = tag.substr(tag[0] == '/' ? 1 : 0, tag.find_first_of(" /", 1) -
                                                                    (tag[0] == '/' ? 1 : 0));
    if (tag[0] == '/') {
      ASSERT_FALSE(open.empty()) << "</" << name << "> closes nothing";
      ASSERT_EQ(open.back(), name);
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(name);
    }
    const size_t next = svg.find('<', close);
    const std::string text = svg.substr(close + 1, next == std::string::npos ? std::string::npos
                                                                             : next - close - 1);
    for (size_t amp = text.find('&'); amp != std::string::npos; amp = text.find('&', amp + 1)) {
      ASSERT_NE(text.find(';', amp), std::string::npos) << "bare & in " << text;
    }
    i = close;
  }
  EXPECT_TRUE(open.empty()) << open.size() << " elements left open, first <" << open[0] << ">";
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
}

TEST(TimelineTest, DefaultWindowIsTheFirstGpuOperationsWithoutSteps) {
  const TraceModel model = Load(ExportFixtureText(), "timeline.wst");
  absl::StatusOr<TimelinePicture> picture = RenderTimelineSvg(model, {});
  ASSERT_TRUE(picture.ok()) << picture.status();
  // One "step" range only: no steps; five GPU operations from the gemm to the orphan kernel.
  EXPECT_EQ(picture->window.begin_ns, 10000u);
  EXPECT_EQ(picture->window.end_ns, 42000u);
  EXPECT_EQ(picture->window.rule, "the first 5 GPU operations");
  const std::string& svg = picture->svg;
  ExpectWellFormed(svg);
  // Every kernel once, with its full name as the tooltip.
  EXPECT_EQ(picture->kernels, 3u);
  EXPECT_EQ(Count(svg, "<rect class=\"kernel\""), 3u);
  EXPECT_EQ(Count(svg, "<title>void gemm&lt;float, 4&gt;(float const*, int) ("), 1u);
  EXPECT_EQ(Count(svg, "<title>softmax(float*) ("), 1u);
  EXPECT_EQ(Count(svg, "<title>orphan(int*) ("), 1u);
  EXPECT_EQ(Count(svg, "<rect class=\"copy\""), 1u);
  EXPECT_EQ(Count(svg, "<rect class=\"memset\""), 1u);
  // Rows with something in the window, each labelled: thread 100's "step" range (its API
  // calls came before), thread 200's memset call, thread 300's recording overhead, both
  // streams.
  EXPECT_EQ(Count(svg, "<text class=\"row\""), 5u);
  for (const char* row : {"thread 100 main", "thread 200 loader", "thread 300",
                          "GPU 0 stream 7", "GPU 0 stream 9"}) {
    EXPECT_THAT(svg, HasSubstr(absl::StrCat("\">", row, "</text>"))) << row;
  }
  // Axis and legend: ms ticks, and the classes drawn.
  EXPECT_THAT(svg, HasSubstr(" ms</text>"));
  EXPECT_THAT(svg, HasSubstr(">kernel</text>"));
  EXPECT_THAT(svg, HasSubstr(">memory copy</text>"));
  EXPECT_EQ(Count(svg, "<rect class=\"overhead\""), 1u);
  EXPECT_THAT(svg, HasSubstr(">recording overhead</text>"));
}

TEST(TimelineTest, AskedWindowDrawsOnlyWhatOverlapsIt) {
  const TraceModel model = Load(ExportFixtureText(), "timeline.wst");
  TimelineOptions options{.from_ns = 30500, .to_ns = 38000, .device = {}, .window = {}};
  absl::StatusOr<TimelinePicture> picture = RenderTimelineSvg(model, options);
  ASSERT_TRUE(picture.ok()) << picture.status();
  ExpectWellFormed(picture->svg);
  EXPECT_EQ(picture->kernels, 1u);  // softmax [32000, 37000]; gemm ended at 30000
  EXPECT_EQ(Count(picture->svg, "<title>softmax(float*) ("), 1u);
  EXPECT_EQ(Count(picture->svg, "<rect class=\"copy\""), 1u);  // [37000, 41000], clipped
  EXPECT_EQ(Count(picture->svg, "stream 9"), 0u);               // nothing there then
  options.device = 3;
  EXPECT_FALSE(RenderTimelineSvg(model, options).ok());
}

// A call with a recorded stack lists it in its tooltip (tests/data/synthetic/stacks.textproto:
// train.py:61 synchronizes the stream); the box still reads the call.
TEST(TimelineTest, ApiCallTooltipsCarryTheirStack) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(WriteTempFile(FixtureWire("synthetic/stacks.textproto"), "stacks.wst"));
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<TimelinePicture> picture =
      RenderTimelineSvg(*model, TimelineOptions{.from_ns = 0, .to_ns = 80000, .device = {},
                                                .window = {}});
  ASSERT_TRUE(picture.ok()) << picture.status();
  ExpectWellFormed(picture->svg);
  EXPECT_THAT(picture->svg, HasSubstr("<title>cudaStreamSynchronize\ntrain.py:61 train_step\n"));
  // The call without a stack keeps the bare name.
  EXPECT_THAT(picture->svg, HasSubstr("<title>cudaDeviceSynchronize ("));
}

TEST(TimelineTest, HostRowsStackByDepth) {
  const TraceModel model = Load(ExportFixtureText(), "timeline.wst");
  TimelineOptions options{.from_ns = 0, .to_ns = 9000, .device = {}, .window = {}};
  absl::StatusOr<TimelinePicture> picture = RenderTimelineSvg(model, options);
  ASSERT_TRUE(picture.ok()) << picture.status();
  const std::string& svg = picture->svg;
  ExpectWellFormed(svg);
  // "step" at depth 0, the runtime calls inside it at 1, the driver call beneath the first
  // at 2; thread 300's recording overhead; the start/end range "load" on its own row; no GPU
  // work yet.
  EXPECT_EQ(Count(svg, "<text class=\"row\""), 5u);
  for (const char* row : {"thread 100 main", "thread 100 main [1]", "thread 100 main [2]",
                          "thread 300", "NVTX start/end ranges"}) {
    EXPECT_THAT(svg, HasSubstr(absl::StrCat("\">", row, "</text>"))) << row;
  }
  EXPECT_EQ(picture->kernels, 0u);
  // Two launches, the driver call and cudaMemcpyAsync, which does not wait.
  EXPECT_EQ(Count(svg, "<rect class=\"api\""), 4u);
  EXPECT_EQ(Count(svg, "<rect class=\"wait\""), 0u);
}

TEST(TimelineTest, DefaultWindowIsThreeStepsFromTheSecond) {
  std::string text = ExportFixtureText();
  for (int step = 0; step < 5; ++step) {
    absl::StrAppend(&text, "packet { nvtx_range { name_id: 10 start_ns: ", 100000 + step * 10000,
                    " duration_ns: 8000 thread_id: 2 end_thread_id: 2 is_push_pop: true } }\n");
  }
  const TraceModel model = Load(text, "steps.wst");
  const TimelineWindow window = DefaultTimelineWindow(model, std::nullopt);
  // Six "step" ranges (the fixture's and five more): steps 2-4 are the first three added.
  EXPECT_EQ(window.begin_ns, 100000u);
  EXPECT_EQ(window.end_ns, 128000u);
  EXPECT_EQ(window.rule, "steps 2-4 of 6 (NVTX range step)");
}

TEST(TimelineCliTest, WritesTheSvgAndChecksFlags) {
  const std::string trace = WriteTempFile(TextprotoToWire(ExportFixtureText()), "cli.wst");
  const std::string svg = MakeTempDir() + "/t.svg";
  CliResult r = RunCli(absl::StrCat("timeline ", trace, " --svg ", svg, " --window 0.03:0.038"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A slice keeps what overlaps [0.03, 0.038) ms: gemm, which ends at 0.03 ms, is left out.
  EXPECT_THAT(r.err, HasSubstr("asked for, 1 kernels"));
  ExpectWellFormed(ReadFileOrDie(svg));
  EXPECT_EQ(RunCli(absl::StrCat("timeline ", trace)).exit_code, 2);
  CliResult both = RunCli(absl::StrCat("timeline ", trace, " --svg ", svg,
                                       " --window 1:2 --from 1"));
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("give one of --from/--to, --step or --window"));
  CliResult bad = RunCli(absl::StrCat("timeline ", trace, " --svg ", svg, " --window 2:x"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("expected milliseconds from the trace's start"));
  CliResult empty = RunCli(absl::StrCat("timeline ", trace, " --svg ", svg, " --from 2 --to 1"));
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_THAT(empty.err, HasSubstr("the end is not after the start"));
  CliResult device = RunCli(absl::StrCat("timeline ", trace, " --svg ", svg, " --device 4"));
  EXPECT_EQ(device.exit_code, 2);
  EXPECT_THAT(device.err, HasSubstr("it has 0"));
}

}  // namespace
}  // namespace warpscope
