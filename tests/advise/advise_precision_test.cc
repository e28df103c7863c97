// The fp32-matrix rule of `warpscope advise` on synthetic traces (an H200, sm_90: TF32 peaks 8x
// FP32, BF16 16x, taken at half): its cost by the documented model, its place and call site,
// the fix for the framework seen, and the programs it must leave alone (already on tensor
// cores, FP64).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/advise/advise.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/advise/advise_test_util.h"
#include "tests/fixtures/synthetic_trace.h"

namespace warpscope {
namespace {

using advise_testing::Advise;
using advise_testing::AdviseWritten;
using advise_testing::FindRule;
using advise_testing::NamedKernel;
using advise_testing::WrittenModel;
using fixtures::SyntheticTraceBuilder;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kFp32Gemm =
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
    "alignc4_execute_kernel__5x_cublas";
constexpr const char* kBf16Gemm =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas";
constexpr const char* kTorchElementwise =
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int)";

// `steps` steps of NVTX "train_step" > "forward": `gemms` launches of `gemm` of `gemm_ns` each,
// then one 50 us kernel `other`; a sync at the end of each step.
auto Steps(int steps, const char* gemm, int gemms, uint64_t gemm_ns, const char* other) {
  return [=](SyntheticTraceBuilder& b) {
    for (int s = 0; s < steps; ++s) {
      b.PushRange("train_step");
      b.PushRange("forward");
      for (int i = 0; i < gemms; ++i) b.LaunchKernel(NamedKernel(gemm, gemm_ns));
      b.LaunchKernel(NamedKernel(other, 50'000));
      b.PopRange();
      b.DeviceSynchronize();
      b.PopRange();
    }
  };
}

// The saving of the documented model over the launches [first, first + count) of kernels whose
// name holds `name` (file order is launch order here): each runs `peak_ratio` x 0.5 faster,
// none in under 3 us.
uint64_t ModelSaving(const TraceModel& model, std::string_view name, double peak_ratio,
                     size_t first = 0, size_t count = SIZE_MAX) {
  uint64_t saving = 0;
  size_t seen = 0;
  for (const KernelEvent& k : model.kernels) {
    if (k.name.find(name) == std::string_view::npos) continue;
    const size_t index = seen++;
    if (index < first || index - first >= count) continue;
    const double t = static_cast<double>(k.duration_ns);
    saving += k.duration_ns - static_cast<uint64_t>(std::llround(
                                  std::max(t / (peak_ratio / 2), std::min(t, 3'000.0))));
  }
  return saving;
}

TEST(AdvisePrecisionTest, Fp32GemmsUnderPyTorchCostTheTf32Saving) {
  absl::StatusOr<TraceModel> model =
      WrittenModel(Steps(10, kFp32Gemm, 4, 400'000, kTorchElementwise));
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = Advise(*model);
  const AdviseFinding* f = FindRule(report, kRulePrecision);
  ASSERT_NE(f, nullptr);
  // Each ~400 us launch runs at 8 x 0.5 = 4x: ~300 us saved, 4 a step, 10 steady steps.
  EXPECT_EQ(report.steady_steps, 10u);
  const uint64_t tf32 = ModelSaving(*model, "sm80_xmma", 8);
  EXPECT_NEAR(static_cast<double>(f->cost_ns), static_cast<double>(tf32), 40);  // 1 ns a launch
  EXPECT_NEAR(static_cast<double>(tf32), 12e6, 0.03 * 12e6);
  EXPECT_NEAR(static_cast<double>(f->cost_per_step_ns), static_cast<double>(tf32) / 10, 10);
  EXPECT_EQ(f->occurrences, 40u);
  EXPECT_EQ(f->nvtx_path, "train_step/forward");
  EXPECT_EQ(f->kernel, kFp32Gemm);
  EXPECT_FALSE(f->one_time);
  EXPECT_EQ(f->severity, AdviseSeverity::kHigh);
  EXPECT_THAT(f->title, HasSubstr("TF32 tensor cores could run in train_step/forward"));
  EXPECT_THAT(f->evidence, HasSubstr("of FP32 matrix work on the SIMT cores in 40 launches (97% "
                                     "of the kernel time)"));
  EXPECT_THAT(f->evidence, HasSubstr("sm_90 peaks over FP32: TF32 8x, BF16 16x"));
  EXPECT_THAT(f->evidence,
              HasSubstr(absl::StrCat("TF32 would save ", FormatDuration(static_cast<double>(f->cost_ns)), ", BF16 ",
                                     FormatDuration(static_cast<double>(ModelSaving(*model, "sm80_xmma", 16))))));
  EXPECT_THAT(f->fix, HasSubstr("torch.backends.cuda.matmul.allow_tf32 = True"));
  EXPECT_THAT(f->fix, HasSubstr("torch.set_float32_matmul_precision(\"high\")"));
  EXPECT_THAT(f->fix, HasSubstr("torch.autocast"));
  EXPECT_THAT(f->fix, Not(HasSubstr("cudnn")));  // no convolutions ran
  // The finding as the table shows it (the report quotes it).
  std::cout << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
}

TEST(AdvisePrecisionTest, WithoutPyTorchTheFixIsCublasMathMode) {
  const AdviseReport report =
      AdviseWritten(Steps(4, kFp32Gemm, 2, 200'000, "scale_kernel(float*, int)"));
  const AdviseFinding* f = FindRule(report, kRulePrecision);
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->fix, HasSubstr("CUBLAS_TF32_TENSOR_OP_MATH"));
  EXPECT_THAT(f->fix, HasSubstr("CUBLAS_COMPUTE_32F_FAST_TF32"));
  EXPECT_THAT(f->fix, Not(HasSubstr("torch")));
  // The other kernel's name is a program's own: its math is unknown, and the evidence says
  // what share of the kernel time the names classify.
  EXPECT_THAT(f->evidence, HasSubstr("kernel names tell the math of 89% of the kernel time"));
}

TEST(AdvisePrecisionTest, CudnnConvolutionsNameTheCudnnFlag) {
  const AdviseReport report = AdviseWritten(Steps(
      3, "void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>"
         "(int, int)",
      2, 300'000, kTorchElementwise));
  const AdviseFinding* f = FindRule(report, kRulePrecision);
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->fix, HasSubstr("torch.backends.cudnn.allow_tf32 = True"));
}

TEST(AdvisePrecisionTest, ShortLaunchesSaveNoMoreThanTheFloor) {
  // ~5 us launches: at 4x they would take ~1.25 us, but none is taken to end under 3 us.
  absl::StatusOr<TraceModel> model = WrittenModel(Steps(5, kFp32Gemm, 100, 5'000, kTorchElementwise));
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseFinding* f = FindRule(Advise(*model), kRulePrecision);
  ASSERT_NE(f, nullptr);
  uint64_t fp32_ns = 0;
  for (const KernelEvent& k : model->kernels) fp32_ns += k.name == kFp32Gemm ? k.duration_ns : 0;
  EXPECT_EQ(f->cost_ns, fp32_ns - 500 * 3'000);
}

TEST(AdvisePrecisionTest, SplitKAndAttentionAreCalledOut) {
  absl::StatusOr<TraceModel> model = WrittenModel([](SyntheticTraceBuilder& b) {
    for (int s = 0; s < 3; ++s) {
      b.PushRange("train_step");
      b.LaunchKernel(NamedKernel("ampere_sgemm_128x64_nn", 300'000));
      b.LaunchKernel(NamedKernel("sgemm_largek_lds64", 100'000));
      b.LaunchKernel(NamedKernel(
          "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float,"
          " cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
          160'000));
      b.DeviceSynchronize();
      b.PopRange();
    }
  });
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseFinding* f = FindRule(Advise(*model), kRulePrecision);
  ASSERT_NE(f, nullptr);
  // TF32 moves the GEMMs only (at 4x); attention counts for BF16 (everything at 8x).
  EXPECT_NEAR(static_cast<double>(f->cost_ns),
              static_cast<double>(ModelSaving(*model, "sgemm", 8)), 10);
  EXPECT_THAT(f->evidence, HasSubstr("of it FP32 attention, which TF32 leaves"));
  EXPECT_THAT(f->evidence,
              HasSubstr(FormatDuration(static_cast<double>(ModelSaving(*model, "sgemm", 16) +
                                                           ModelSaving(*model, "fmha", 16)))));
  EXPECT_THAT(f->evidence, HasSubstr("is split-K GEMMs (long reductions)"));
  EXPECT_THAT(f->fix, HasSubstr("which also moves the FP32 attention"));
}

TEST(AdvisePrecisionTest, AProgramOnBf16TensorCoresHasNoFinding) {
  const AdviseReport report = AdviseWritten(Steps(6, kBf16Gemm, 4, 400'000, kTorchElementwise));
  EXPECT_EQ(FindRule(report, kRulePrecision), nullptr);
  for (const std::string& note : report.notes) EXPECT_THAT(note, Not(HasSubstr("FP32 matrix")));
}

TEST(AdvisePrecisionTest, FewFp32GemmsBesideTensorCoresAreLeftAlone) {
  const AdviseReport report = AdviseWritten([](SyntheticTraceBuilder& b) {
    for (int s = 0; s < 4; ++s) {
      b.PushRange("train_step");
      for (int i = 0; i < 20; ++i) b.LaunchKernel(NamedKernel(kBf16Gemm, 100'000));
      b.LaunchKernel(NamedKernel(kFp32Gemm, 100'000));  // 1 of 21: under a tenth
      b.DeviceSynchronize();
      b.PopRange();
    }
  });
  EXPECT_EQ(FindRule(report, kRulePrecision), nullptr);
  EXPECT_THAT(report.notes, ::testing::Contains(HasSubstr(
                                "matrix work runs on tensor cores (BF16 tensor core); the ")));
  EXPECT_THAT(report.notes, ::testing::Contains(HasSubstr(
                                "us of FP32 matrix work left (5%) is taken as chosen")));
}

TEST(AdvisePrecisionTest, Fp64WorkGetsANoteNotAdvice) {
  const AdviseReport report =
      AdviseWritten(Steps(3, "volta_dgemm_128x64_nn", 2, 500'000, kTorchElementwise));
  EXPECT_EQ(FindRule(report, kRulePrecision), nullptr);
  EXPECT_THAT(report.notes,
              ::testing::Contains(HasSubstr("ms of FP64 matrix work in 6 launches (95% of")));
  EXPECT_THAT(report.notes, ::testing::Contains(HasSubstr("double precision is a numerical choice")));
}

TEST(AdvisePrecisionTest, WarmUpLaunchesAreOneTime) {
  absl::StatusOr<TraceModel> model = WrittenModel([](SyntheticTraceBuilder& b) {
    for (int s = 0; s < 8; ++s) {
      b.PushRange("train_step");
      // The first step is long (warm-up): its GEMMs are paid once.
      for (int i = 0; i < (s == 0 ? 10 : 2); ++i) b.LaunchKernel(NamedKernel(kFp32Gemm, 200'000));
      b.DeviceSynchronize();
      b.PopRange();
    }
  });
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = Advise(*model);
  ASSERT_EQ(report.warmup_steps, 1u);
  int steady = 0, once = 0;
  for (const AdviseFinding& f : report.findings) {
    if (f.rule != kRulePrecision) continue;
    (f.one_time ? once : steady)++;
    const uint64_t expected = f.one_time ? ModelSaving(*model, "sm80_xmma", 8, 0, 10)
                                         : ModelSaving(*model, "sm80_xmma", 8, 10);
    EXPECT_NEAR(static_cast<double>(f.cost_ns), static_cast<double>(expected), 20);
  }
  EXPECT_EQ(steady, 1);
  EXPECT_EQ(once, 1);
}

}  // namespace
}  // namespace warpscope
