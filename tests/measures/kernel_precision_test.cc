// The kernel math classes (measures/kernel_precision.h): each naming scheme's names as the
// libraries write them, names no row reads (unknown, never guessed), the peaks per
// architecture, and every kernel name of the bundled traces against a golden listing.
#include "analyzers/measures/kernel_precision.h"

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using M = KernelMath;

struct Named {
  const char* name;
  KernelMath math;
  bool long_reduction = false;
};

// Names as cuBLAS, cuBLASLt, cutlass, cuDNN, TensorRT, Triton and PyTorch launch them (from
// profiles of real programs), and names of programs' own kernels.
const std::vector<Named>& KnownNames() {
  static const std::vector<Named> names = {
      {"sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_"
       "aligna4_alignc4_execute_kernel__5x_cublas",
       M::kFp32Simt},
      {"sm80_xmma_gemm_tf32tf32_tf32f32_f32_nt_n_tilesize128x128x16_stage4_warpsize2x2x1_"
       "tensor16x8x8",
       M::kTf32Tensor},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
       "segment_k_off_kernel__5x_cublas",
       M::kBf16Tensor},
      {"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize96x128x32_stage4_warpsize2x2x1_"
       "tensor16x8x16_kernel",
       M::kFp16Tensor},
      {"sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x64x32_"
       "warpgroupsize1x1x1_g1_execute_split_k_kernel__5x_cudnn",
       M::kTf32Tensor, true},
      {"sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize128x128x8_stage3_"
       "warpsize2x2x1_g1_ffma",
       M::kFp32Simt},
      {"sm86_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_"
       "stage3_warpsize2x2x1_g1_tensor16x8x8_execute_kernel",
       M::kTf32Tensor},
      {"sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_tensor16x8x8", M::kUnknown},
      {"sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128", M::kFp8Tensor},
      {"void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_"
       "128x32_8x5_nn_align1::Params)",
       M::kFp32Simt},
      {"cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4", M::kTf32Tensor},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_"
       "align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
       M::kBf16Tensor},
      {"void cutlass__5x_cudnn::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_64x64_16x10_"
       "nhwc_align4>(cutlass_tensorop_s1688fprop_optimized_tf32_64x64_16x10_nhwc_align4::Params)",
       M::kTf32Tensor},
      {"cutlass_80_tensorop_f16_s16816gemm_relu_f16_64x64_64x4_tn_align8", M::kFp16Tensor},
      {"cutlass_tensorop_h16816gemm_128x128_32x3_nn_align8", M::kFp16Tensor},
      {"cutlass_tensorop_i16832gemm_s8_128x128_64x3_tn_align16", M::kInt8Tensor},
      {"cutlass_tensorop_d884gemm_64x64_16x4_nn_align1", M::kFp64},
      {"cutlass_simt_dgemm_128x128_8x2_nn_align1", M::kFp64},
      {"cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_128x256x128_1x2x1_0_tnt_align16",
       M::kFp8Tensor},
      {"cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_64x64x16_1x1x1_3_nnn_align1_bias",
       M::kFp32Simt},
      {"ampere_sgemm_128x64_nn", M::kFp32Simt},
      {"volta_sgemm_128x64_nt", M::kFp32Simt},
      {"maxwell_scudnn_128x128_stridedB_splitK_interior_nn", M::kFp32Simt, true},
      {"cudnn_infer_ampere_scudnn_128x64_relu_small_nn_v1", M::kFp32Simt},
      {"sgemm_largek_lds64", M::kFp32Simt, true},
      {"volta_s884gemm_fp16_128x128_ldg8_f2f_nn", M::kFp16Tensor},
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", M::kBf16Tensor},
      {"trt_ampere_h16816gemm_128x64_ldg8_nn_v1", M::kFp16Tensor},
      {"volta_dgemm_128x64_nn", M::kFp64},
      {"ampere_s1688gemm_128x128_nn", M::kUnknown},  // no operand type: not guessed
      {"void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, "
       "true>(int, int)",
       M::kFp32Simt},
      {"void cudnn::detail::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int)",
       M::kFp32Simt},
      // Seen without its namespace on the H200 (cuDNN 9, a ResNet-50 backward pass).
      {"void wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int, int, float "
       "const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, "
       "int, int, int, int)",
       M::kFp32Simt},
      {"void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int)",
       M::kFp32Simt},
      {"my_dgrad_engine<float>(int)", M::kUnknown},  // an engine of no known library
      {"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float)",
       M::kNotMatrix},
      {"void cudnn::engines_precompiled::scalePackedTensor_kernel<float, float>(long, float*, "
       "float)",
       M::kNotMatrix},
      {"void cublasLt::epilogue::impl::globalKernel<8, 32, float, float, float, true, true, "
       "1>(int)",
       M::kNotMatrix},
      {"void sgemm_largek_lds64<true, false, 5, 5, 4, 4, 4, 34>(float*, float const*)",
       M::kFp32Simt, true},
      {"void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*)",
       M::kUnknown},  // an FFT convolution's transform: not read
      {"void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, "
       "float, float, float, float, float, float>(int)",
       M::kNotMatrix},
      {"nvjet_tst_128x64_64x8_1x1_v_bz_coopA_NNT", M::kBf16Tensor},
      {"nvjet_tst_64x32_64x16_2x2_2cta_h_bz_splitK_TNT", M::kBf16Tensor, true},
      {"nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", M::kFp16Tensor},
      {"nvjet_qqtst_128x256_128x6_2x1_2cta_v_bz_TNT", M::kFp8Tensor},
      {"nvjet_sss_tf32_128x256_TNT", M::kTf32Tensor},
      {"nvjet_sss_128x64_TNT", M::kUnknown},
      {"triton_mm", M::kUnknown},
      {"triton_tem_fused_mm_0", M::kUnknown},
      {"triton_tem_fused_addmm_relu_1", M::kUnknown},
      {"triton_poi_fused_add_0", M::kNotMatrix},
      {"triton_red_fused__softmax_1", M::kNotMatrix},
      {"fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
       "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
       M::kFp32SimtAttention},
      {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, "
       "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, "
       "true>(Flash_fwd_params)",
       M::kBf16Tensor},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int)",
       M::kNotMatrix},
      {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, "
       "false>(float)",
       M::kNotMatrix},
      {"void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(int)",
       M::kNotMatrix},
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", M::kNotMatrix},
      // Programs' own kernels: their names say nothing the table can read.
      {"sgemm_128x128(float*, ...)", M::kUnknown},
      {"gemm_kernel(float const*, float const*, float*, int)", M::kUnknown},
      {"my_kernel_sm80_bf16(float*)", M::kUnknown},
  };
  return names;
}

TEST(KernelPrecisionTest, EveryRowCompiles) { EXPECT_TRUE(KernelMathTableCompiles()); }

TEST(KernelPrecisionTest, NamesOfEachScheme) {
  for (const Named& n : KnownNames()) {
    const KernelMathClass c = ClassifyKernelMath(n.name);
    EXPECT_EQ(KernelMathName(c.math), KernelMathName(n.math)) << n.name;
    EXPECT_EQ(c.long_reduction, n.long_reduction) << n.name;
  }
}

// A cutlass GEMM whose name says its precision in no form the table reads is still a matrix
// multiply (advise's memory-bound-gemm rule asks), of unknown precision.
TEST(KernelPrecisionTest, AnyOtherCutlassGemmIsAMatrixMultiplyOfUnknownPrecision) {
  const KernelMathClass c = ClassifyKernelMath(
      "cutlass3x_sm100_bstensorop_gemm_ue8m0xe2m1_ue8m0xe2m1_f32_void_f32_128x128x256_1x1x1_0_"
      "tnt_align32_1sm");  // block-scaled FP4: no row reads its precision
  EXPECT_EQ(c.math, M::kUnknown);
  EXPECT_EQ(c.scheme, "cutlass");
  EXPECT_EQ(ClassifyKernelMath("cutlass_kernel_copy(float*)").scheme, "");  // no GEMM named
}

TEST(KernelPrecisionTest, ClassifierRemembersEachName) {
  KernelMathClassifier classifier;
  const std::string name = "ampere_sgemm_128x64_nn";
  const KernelMathClass& first = classifier.Classify(name);
  EXPECT_EQ(first.math, M::kFp32Simt);
  EXPECT_EQ(&classifier.Classify(name), &first);
  EXPECT_EQ(classifier.Classify("spin_kernel(int)").math, M::kUnknown);
}

TEST(KernelPrecisionTest, TensorCoreClasses) {
  EXPECT_TRUE(OnTensorCores(M::kTf32Tensor));
  EXPECT_TRUE(OnTensorCores(M::kBf16Tensor));
  EXPECT_FALSE(OnTensorCores(M::kFp32Simt));
  EXPECT_FALSE(OnTensorCores(M::kFp64));
  EXPECT_TRUE(IsFp32Simt(M::kFp32SimtAttention));
  EXPECT_FALSE(IsFp32Simt(M::kUnknown));
}

TEST(KernelPrecisionTest, PeaksByComputeCapability) {
  const std::optional<MathPeaks> hopper = MathPeaksOf(9, 0);
  ASSERT_TRUE(hopper.has_value());
  EXPECT_EQ(hopper->tf32_tensor / hopper->fp32_simt, 8);
  EXPECT_EQ(hopper->bf16_tensor / hopper->fp32_simt, 16);
  const std::optional<MathPeaks> ampere = MathPeaksOf(8, 0);
  ASSERT_TRUE(ampere.has_value());
  EXPECT_EQ(ampere->tf32_tensor / ampere->fp32_simt, 8);
  EXPECT_EQ(MathPeaksOf(7, 0)->tf32_tensor, 0);  // Volta has no TF32
  EXPECT_FALSE(MathPeaksOf(12, 0).has_value());
}

// The traces the project ships: their kernel names, each with its class, as a golden listing
// (a new trace or a changed row shows in the diff), and the count of known and unknown names.
TEST(KernelPrecisionTest, BundledTraceNames) {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  for (const char* dir : {"examples/traces", "tests/data/cuda13.0_sm90"}) {
    for (const auto& entry : fs::recursive_directory_iterator(testing::SourceDir() + "/" + dir)) {
      if (entry.path().extension() != ".wst") continue;
      absl::StatusOr<TraceModel> model = TraceModel::Load(entry.path().string());
      ASSERT_TRUE(model.ok()) << entry.path() << ": " << model.status();
      for (const KernelEvent& k : model->kernels) names.insert(std::string(k.name));
    }
  }
  ASSERT_FALSE(names.empty());
  std::map<std::string, int> count;
  std::string listing;
  for (const std::string& name : names) {
    const KernelMathClass c = ClassifyKernelMath(name);
    count[c.math == M::kUnknown ? "unknown" : "known"]++;
    absl::StrAppend(&listing, std::string(KernelMathName(c.math)), " | ", std::string(c.scheme), " | ",
                    name, "\n");
  }
  listing = absl::StrCat(count["known"], " known, ", count["unknown"], " unknown of ",
                         names.size(), " names\n", listing);
  const std::string problem = testing::CompareWithGolden("measures/golden/kernel_math.txt", listing);
  EXPECT_EQ(problem, "") << problem;
}

}  // namespace
}  // namespace warpscope
