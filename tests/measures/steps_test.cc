// The step rule (analyzers/measures/steps.h) on NVTX ranges written out by hand, and on a
// program recorded on an H200 that has no step range of its own.
#include "analyzers/measures/steps.h"

#include <string>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

// Ranges own their names here (NvtxRange keeps views).
class Ranges {
 public:
  Ranges& Add(std::string name, uint64_t start, uint64_t end, uint32_t depth = 0,
              uint64_t thread = 1, std::string domain = "") {
    names_.push_back(std::make_unique<std::string>(std::move(name)));
    domains_.push_back(std::make_unique<std::string>(std::move(domain)));
    NvtxRange r;
    r.name = *names_.back();
    r.domain = *domains_.back();
    r.start_ns = start;
    r.duration_ns = end - start;
    r.depth = depth;
    r.thread_id = thread;
    r.is_push_pop = true;
    ranges_.push_back(r);
    return *this;
  }
  const std::vector<NvtxRange>& get() const { return ranges_; }

 private:
  std::vector<std::unique_ptr<std::string>> names_, domains_;
  std::vector<NvtxRange> ranges_;
};

TEST(Steps, AFamilyHasItsNumbersReplaced) {
  EXPECT_EQ(RangeFamily("step_12"), "step_<N>");
  EXPECT_EQ(RangeFamily("ProfilerStep#3"), "ProfilerStep#<N>");
  EXPECT_EQ(RangeFamily("iteration 12"), "iteration <N>");
  EXPECT_EQ(RangeFamily("epoch 3 step 12"), "epoch <N> step <N>");
  EXPECT_EQ(RangeFamily("step12"), "step<N>");
  EXPECT_EQ(RangeFamily("Iter7"), "Iter<N>");
  EXPECT_EQ(RangeFamily("layers.3.attn"), "layers.<N>.attn");
  EXPECT_EQ(RangeFamily("1234"), "<N>");
  EXPECT_EQ(RangeFamily("forward"), "forward");
  // Digits that are part of a word stay.
  EXPECT_EQ(RangeFamily("conv2d"), "conv2d");
  EXPECT_EQ(RangeFamily("layer3"), "layer3");
  EXPECT_EQ(RangeFamily("matmul_fp16"), "matmul_fp16");
  EXPECT_EQ(RangeFamily("sm90_kernel"), "sm90_kernel");
  EXPECT_EQ(RangeFamily("stepper2x"), "stepper2x");
  // A path's parts are families on their own: "/" is no letter.
  EXPECT_EQ(RangeFamily("step_12/layers.0/conv2d"), "step_<N>/layers.<N>/conv2d");
  EXPECT_EQ(RangeFamily(""), "");
}

TEST(Steps, NumberedOutermostRangesAreTheStepsFromStartToStart) {
  Ranges r;
  for (uint64_t k = 0; k < 3; ++k) {
    const uint64_t t = 1000 * k;
    r.Add("step_" + std::to_string(k + 5), t, t + 800);
    r.Add("forward", t + 10, t + 300, 1).Add("backward", t + 300, t + 700, 1);
  }
  const StepSet s = FindSteps(r.get());
  EXPECT_EQ(s.family, "step_<N>");
  EXPECT_EQ(s.how, "numbered NVTX range step_<N>");
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(s.steps[0].number, 5u);
  EXPECT_EQ(s.steps[0].end_ns, 1000u);  // the next step's start: the gap belongs to it
  EXPECT_EQ(s.steps[2].end_ns, 2800u);  // the last: its own end
  EXPECT_EQ(s.StepAt(900), 0);
  EXPECT_EQ(s.StepAt(1000), 1);
  EXPECT_EQ(s.StepAt(2900), -1);
  EXPECT_EQ(s.StepAt(0), 0);
}

TEST(Steps, AStepNamedRangeWinsOverOtherRepeatedOnes) {
  Ranges r;
  for (uint64_t k = 0; k < 4; ++k) {
    r.Add("data", 1000 * k, 1000 * k + 100).Add("train_step", 1000 * k + 100, 1000 * k + 900);
  }
  const StepSet s = FindSteps(r.get());
  EXPECT_EQ(s.family, "train_step");
  EXPECT_EQ(s.steps.size(), 4u);
}

TEST(Steps, WithoutNumbersOrStepNamesTheMostRepeatedOutermostRange) {
  Ranges r;
  for (uint64_t k = 0; k < 5; ++k) {
    r.Add("forward", 1000 * k, 1000 * k + 400).Add("backward", 1000 * k + 400, 1000 * k + 900);
  }
  r.Add("setup", 9000, 9100).Add("setup", 9200, 9300);
  const StepSet s = FindSteps(r.get());
  EXPECT_EQ(s.family, "forward");  // as many as backward: the one that starts each cycle
  EXPECT_NE(s.how.find("--step-range"), std::string::npos);
}

TEST(Steps, OverlappingInstancesAndNcclRangesAreNotSteps) {
  Ranges r;
  r.Add("step_1", 0, 500).Add("step_2", 400, 900);  // overlap: not a sequence
  r.Add("ncclAllReduce", 10, 20, 0, 1, "NCCL").Add("ncclAllReduce", 30, 40, 0, 1, "NCCL");
  const StepSet s = FindSteps(r.get());
  EXPECT_TRUE(s.steps.empty());
  EXPECT_EQ(s.how, "no repeated NVTX range: no steps");
}

TEST(Steps, TheUsersChoiceByNameOrFamily) {
  Ranges r;
  for (uint64_t k = 0; k < 3; ++k) {
    r.Add("iteration_" + std::to_string(k), 1000 * k, 1000 * k + 900);
    r.Add("forward", 1000 * k, 1000 * k + 500, 1);
  }
  EXPECT_EQ(FindSteps(r.get(), "forward").family, "forward");
  EXPECT_EQ(FindSteps(r.get(), "iteration_7").family, "iteration_<N>");
  EXPECT_EQ(FindSteps(r.get(), "iteration_").family, "iteration_<N>");
  EXPECT_EQ(FindSteps(r.get(), "iteration_<N>").family, "iteration_<N>");
  const StepSet none = FindSteps(r.get(), "optimizer");
  EXPECT_TRUE(none.steps.empty());
  EXPECT_EQ(none.how, "no repeated NVTX range named optimizer (--step-range)");
}

TEST(Steps, LibraryRangesAreNeverTakenForTheSteps) {
  // A program without a step range of its own: PyTorch's CUB calls push a range around each
  // reduction (in the default domain, as seen on an H200) and an operator range repeats too.
  Ranges r;
  for (uint64_t k = 0; k < 6; ++k) {
    r.Add("cub::DeviceReduce::Sum", 1000 * k, 1000 * k + 50);
    r.Add("aten::linear, seq = " + std::to_string(k), 1000 * k + 100, 1000 * k + 300);
    r.Add("cudnn_convolution", 1000 * k + 400, 1000 * k + 500);
    r.Add("ThrustSort", 1000 * k + 600, 1000 * k + 650, 0, 1, "CCCL");
  }
  StepSet s = FindSteps(r.get());
  EXPECT_TRUE(s.steps.empty());
  EXPECT_NE(s.how.find("no repeated NVTX range of the program's own"), std::string::npos) << s.how;
  EXPECT_NE(s.how.find("cub::DeviceReduce::Sum"), std::string::npos) << s.how;
  // The program's own repeated range wins, even inside the library ones' cycle.
  for (uint64_t k = 0; k < 6; ++k) r.Add("train", 1000 * k + 60, 1000 * k + 950);
  s = FindSteps(r.get());
  EXPECT_EQ(s.family, "train");
  EXPECT_NE(s.how.find("library ranges left out"), std::string::npos) << s.how;
  // --step-range still takes a library range when asked.
  EXPECT_EQ(FindSteps(r.get(), "cub::DeviceReduce::Sum").family, "cub::DeviceReduce::Sum");
}

// tests/gpu/advise/no_step_range.py, recorded on an H200 (PyTorch 2.11): boolean masks, sorts
// and scans push CUB's ranges (domain CCCL) 40 and 80 times; the rule before took
// cub::DeviceReduce::Sum for the program's 80 steps.
TEST(Steps, ARecordedProgramWithoutAStepRangeHasNoSteps) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(
      ::warpscope::testing::SourceDir() + "/tests/data/cuda13.0_sm90/no_step_range.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  const StepSet s = FindSteps(model->nvtx_ranges);
  EXPECT_TRUE(s.steps.empty());
  for (const char* range : {"cub::DeviceReduce::Sum", "cub::DeviceScan::InclusiveScan",
                            "cub::DeviceSelect::Flagged"}) {
    EXPECT_NE(s.how.find(range), std::string::npos) << s.how;
  }
  EXPECT_EQ(FindSteps(model->nvtx_ranges, "cub::DeviceReduce::Sum").steps.size(), 80u);
}

TEST(Steps, WhatIsALibraryRange) {
  for (const char* name : {"cub::DeviceReduce::Sum", "thrust::sort", "aten::add, seq = 3",
                           "autograd::engine::evaluate_function: AddBackward0",
                           "c10d::allreduce_", "ncclAllReduce", "cudnnConvolutionForward",
                           "cutlass::Kernel2"}) {
    EXPECT_TRUE(IsLibraryRange(name, "")) << name;
  }
  EXPECT_TRUE(IsLibraryRange("anything", "NCCL"));
  EXPECT_TRUE(IsLibraryRange("DeviceScan", "CCCL"));
  for (const char* name : {"train_step", "forward", "ProfilerStep#3", "data_loader",
                           "attention", "layers.3.attn", "step"}) {
    EXPECT_FALSE(IsLibraryRange(name, "")) << name;
  }
  EXPECT_FALSE(IsLibraryRange("train_step", "my_domain"));
}

TEST(Steps, StepsOnAnotherThreadAreTheirOwnFamily) {
  Ranges r;
  r.Add("step_1", 0, 100, 0, 1).Add("step_2", 150, 250, 0, 2);  // one each: no repeat
  EXPECT_TRUE(FindSteps(r.get()).steps.empty());
}

}  // namespace
}  // namespace warpscope
