// The fp32-matrix rule of `warpscope advise` on synthetic traces (an H200, sm_90: TF32 peaks 8x
// FP32, BF16 16x, taken at half): its cost by the documented model, its place and call site,
// the fix for the framework seen, and the programs it must leave alone (already on tensor
// cores, FP64).
#include <iostream>
#include <string>

#include "analyzers/analyses/advise/advise.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/advise/advise_test_util.h"
#include "tests/fixtures/synthetic_trace.h"

namespace warpscope {
namespace {

using advise_testing::AdviseWritten;
using advise_testing::FindRule;
using advise_testing::NamedKernel;
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

TEST(AdvisePrecisionTest, Fp32GemmsUnderPyTorchCostTheTf32Saving) {
  const AdviseReport report = AdviseWritten(Steps(10, kFp32Gemm, 4, 400'000, kTorchElementwise));
  const AdviseFinding* f = FindRule(report, kRulePrecision);
  ASSERT_NE(f, nullptr);
  // Each 400 us launch runs at 8 x 0.5 = 4x: 300 us saved, 4 a step, 10 steady steps.
  EXPECT_EQ(report.steady_steps, 10u);
  EXPECT_EQ(f->cost_ns, 10u * 4 * 300'000);
  EXPECT_EQ(f->cost_per_step_ns, 4u * 300'000);
  EXPECT_EQ(f->occurrences, 40u);
  EXPECT_EQ(f->nvtx_path, "train_step/forward");
  EXPECT_EQ(f->kernel, kFp32Gemm);
  EXPECT_FALSE(f->one_time);
  EXPECT_EQ(f->severity, AdviseSeverity::kHigh);
  EXPECT_THAT(f->title, HasSubstr("TF32 tensor cores could run in train_step/forward"));
  EXPECT_THAT(f->evidence, HasSubstr("16.00 ms of FP32 matrix work on the SIMT cores in 40 "
                                     "launches (97% of the kernel time)"));
  EXPECT_THAT(f->evidence, HasSubstr("sm_90 peaks over FP32: TF32 8x, BF16 16x"));
  EXPECT_THAT(f->evidence, HasSubstr("TF32 would save 12.00 ms, BF16 14.00 ms"));
  EXPECT_THAT(f->fix, HasSubstr("torch.backends.cuda.matmul.allow_tf32 = True"));
  EXPECT_THAT(f->fix, HasSubstr("torch.set_float32_matmul_precision(\"high\")"));
  EXPECT_THAT(f->fix, HasSubstr("torch.autocast"));
  EXPECT_THAT(f->fix, Not(HasSubstr("cudnn")));  // no convolutions ran
  // The finding as the table shows it (the report quotes it).
  std::cout << RenderAdviseReport(report, OutputFormat::kTable);
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
  // 5 us launches: at 4x they would take 1.25 us, but none is taken to end under 3 us.
  const AdviseReport report = AdviseWritten(Steps(5, kFp32Gemm, 100, 5'000, kTorchElementwise));
  const AdviseFinding* f = FindRule(report, kRulePrecision);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->cost_ns, 5u * 100 * 2'000);
}

TEST(AdvisePrecisionTest, SplitKAndAttentionAreCalledOut) {
  const AdviseReport report = AdviseWritten([](SyntheticTraceBuilder& b) {
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
  const AdviseFinding* f = FindRule(report, kRulePrecision);
  ASSERT_NE(f, nullptr);
  // TF32 moves the GEMMs only (300 + 100 us at 4x); attention counts for BF16 (all at 8x).
  EXPECT_EQ(f->cost_ns, 3u * (225'000 + 75'000));
  EXPECT_THAT(f->evidence, HasSubstr("480.00 us of it FP32 attention, which TF32 leaves"));
  EXPECT_THAT(f->evidence, HasSubstr("BF16 1.47 ms"));
  EXPECT_THAT(f->evidence, HasSubstr("18% is split-K GEMMs (long reductions)"));
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
                                "matrix work runs on tensor cores (BF16 tensor core); the 400.00 "
                                "us of FP32 matrix work left (5%) is taken as chosen")));
}

TEST(AdvisePrecisionTest, Fp64WorkGetsANoteNotAdvice) {
  const AdviseReport report =
      AdviseWritten(Steps(3, "volta_dgemm_128x64_nn", 2, 500'000, kTorchElementwise));
  EXPECT_EQ(FindRule(report, kRulePrecision), nullptr);
  EXPECT_THAT(report.notes,
              ::testing::Contains(HasSubstr("device 0: 3.00 ms of FP64 matrix work in 6 launches")));
  EXPECT_THAT(report.notes, ::testing::Contains(HasSubstr("double precision is a numerical choice")));
}

TEST(AdvisePrecisionTest, WarmUpLaunchesAreOneTime) {
  const AdviseReport report = AdviseWritten([](SyntheticTraceBuilder& b) {
    for (int s = 0; s < 8; ++s) {
      b.PushRange("train_step");
      // The first step is long (warm-up): its GEMMs are paid once.
      for (int i = 0; i < (s == 0 ? 10 : 2); ++i) b.LaunchKernel(NamedKernel(kFp32Gemm, 200'000));
      b.DeviceSynchronize();
      b.PopRange();
    }
  });
  ASSERT_EQ(report.warmup_steps, 1u);
  int steady = 0, once = 0;
  for (const AdviseFinding& f : report.findings) {
    if (f.rule != kRulePrecision) continue;
    (f.one_time ? once : steady)++;
    EXPECT_EQ(f.cost_ns, (f.one_time ? 10u : 14u) * 150'000);
  }
  EXPECT_EQ(steady, 1);
  EXPECT_EQ(once, 1);
}

}  // namespace
}  // namespace warpscope
