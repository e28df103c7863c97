// The table of kernel naming schemes that kernel_precision.h classifies by, and the math peaks
// per architecture. Rows are tried in order; the first whose pattern (RE2, searched anywhere
// in the demangled name) matches gives the class. Specific rows come before the catch-alls of
// their scheme, which say "unknown" rather than let a later scheme guess.
#include "analyzers/measures/kernel_precision.h"

#include <re2/re2.h>

#include <array>
#include <memory>
#include <utility>
#include <vector>

namespace warpscope {
namespace {

using M = KernelMath;

struct NameRow {
  const char* pattern;
  KernelMath math;
  const char* scheme;
};

// The architecture prefix of cuBLAS's and cuDNN's own (non-xmma, non-cutlass) kernels:
// `ampere_sgemm_128x64_nn`, `volta_h884gemm_...`, `trt_ampere_h16816gemm_...`.
#define ARCH "(?:^|\\W|trt_|infer_)(?:maxwell|kepler|volta|turing|ampere|hopper|sm\\d+)_"
#define MMA_OP "\\d{3,6}(?:gemm|cudnn|fprop|dgrad|wgrad)"
#define CONV_OP "(?:gemm|fprop|dgrad|wgrad|conv)"

constexpr std::array kRows = {
    // Fused attention (before cutlass: the memory-efficient kernels are cutlass templates).
    NameRow{R"(fmha_cutlass[FB]_f32)", M::kFp32SimtAttention, "PyTorch memory-efficient attention"},
    NameRow{R"(fmha_cutlass[FB]_bf16)", M::kBf16Tensor, "PyTorch memory-efficient attention"},
    NameRow{R"(fmha_cutlass[FB]_f16)", M::kFp16Tensor, "PyTorch memory-efficient attention"},
    NameRow{R"(flash\w*_(?:fwd|bwd).*bfloat16)", M::kBf16Tensor, "flash attention"},
    NameRow{R"(flash\w*_(?:fwd|bwd).*half_t)", M::kFp16Tensor, "flash attention"},
    // cuBLASLt's nvjet kernels (Hopper and later): nvjet_<A/B><scale><D>, s = FP32, h = FP16,
    // t = BF16, q = FP8 (nvjet_qqtst: FP8 in, BF16 out); FP32 operands as TF32 say `_tf32`.
    NameRow{R"(^nvjet_(?:sm\d+_)?q)", M::kFp8Tensor, "cuBLASLt nvjet"},
    NameRow{R"(^nvjet_(?:sm\d+_)?t)", M::kBf16Tensor, "cuBLASLt nvjet"},
    NameRow{R"(^nvjet_(?:sm\d+_)?h)", M::kFp16Tensor, "cuBLASLt nvjet"},
    NameRow{R"(^nvjet_(?:sm\d+_)?s\w*_tf32)", M::kTf32Tensor, "cuBLASLt nvjet"},
    NameRow{R"(^nvjet_)", M::kUnknown, "cuBLASLt nvjet"},
    // xmma (cuBLAS, cuBLASLt, cuDNN, TensorRT): sm80_xmma_gemm_<A><B>_<C><acc>_<compute>_...,
    // sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_...
    NameRow{R"(xmma_\w*(?:e4m3|e5m2))", M::kFp8Tensor, "xmma"},
    NameRow{R"(xmma_\w*?gemm_(?:indexed_)?\w{0,20}tf32)", M::kTf32Tensor, "xmma"},
    NameRow{R"(xmma_\w*?gemm_(?:indexed_)?bf16)", M::kBf16Tensor, "xmma"},
    NameRow{R"(xmma_\w*?gemm_(?:indexed_)?f16)", M::kFp16Tensor, "xmma"},
    NameRow{R"(xmma_\w*?gemm_(?:indexed_)?[isu]8)", M::kInt8Tensor, "xmma"},
    NameRow{R"(xmma_\w*?gemm_(?:indexed_)?f64)", M::kFp64, "xmma"},
    NameRow{R"(xmma_\w*?gemm_(?:indexed_)?f32f32_f32f32\w*tensor)", M::kUnknown, "xmma"},
    NameRow{R"(xmma_\w*?gemm_(?:indexed_)?f32f32_f32f32)", M::kFp32Simt, "xmma"},
    NameRow{R"(xmma_)", M::kUnknown, "xmma"},
    // cutlass 2.x and 3.x (alone, inside cuBLAS and cuDNN): cutlass_80_simt_sgemm_...,
    // cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_..., cutlass_tensorop_s1688fprop_..._tf32,
    // cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_...; float operands on tensor cores are TF32.
    NameRow{R"(cutlass\w*_simt_[sc])" CONV_OP, M::kFp32Simt, "cutlass"},
    NameRow{R"(cutlass\w*_simt_[dz])" CONV_OP, M::kFp64, "cutlass"},
    NameRow{R"(cutlass\w*(?:e4m3|e5m2))", M::kFp8Tensor, "cutlass"},
    NameRow{R"(cutlass\w*tensorop\w*bf16)", M::kBf16Tensor, "cutlass"},
    NameRow{R"(cutlass\w*tensorop\w*tf32)", M::kTf32Tensor, "cutlass"},
    NameRow{R"(cutlass\w*tensorop\w*?(?:_f16|_h)" MMA_OP ")", M::kFp16Tensor, "cutlass"},
    NameRow{R"(cutlass\w*tensorop\w*?(?:_[su]8|_i)" MMA_OP ")", M::kInt8Tensor, "cutlass"},
    NameRow{R"(cutlass\w*tensorop\w*?(?:_f64|_[dz])" MMA_OP ")", M::kFp64, "cutlass"},
    NameRow{R"(cutlass\w*tensorop\w*?_[sc])" MMA_OP, M::kTf32Tensor, "cutlass"},
    NameRow{R"(cutlass3x_sm\d+_tensorop_(?:\w+_)?gemm_f32_f32)", M::kTf32Tensor, "cutlass"},
    // Any other cutlass GEMM or convolution (cutlass3x_sm90_tensorop_gemm_f16_f16_f32_void_...):
    // a matrix multiply whose precision the name does not say in a form read above.
    NameRow{R"(cutlass\w*(?:gemm|conv|fprop|dgrad|wgrad))", M::kUnknown, "cutlass"},
    // cuBLAS's and cuDNN's own kernels: ampere_sgemm_*, volta_s884gemm_fp16_*,
    // ampere_bf16_s16816gemm_bf16_*, ampere_scudnn_*, trt_ampere_h16816gemm_*.
    NameRow{ARCH R"(\w*bf16)", M::kBf16Tensor, "cuBLAS/cuDNN"},
    NameRow{ARCH R"(\w*tf32)", M::kTf32Tensor, "cuBLAS/cuDNN"},
    NameRow{ARCH R"((?:\w*fp16|(?:\w*_)?h)" MMA_OP ")", M::kFp16Tensor, "cuBLAS/cuDNN"},
    NameRow{ARCH R"((?:\w*_)?(?:int8|i)" MMA_OP ")", M::kInt8Tensor, "cuBLAS/cuDNN"},
    NameRow{ARCH R"((?:\w*_)?s(?:gemm|cudnn))", M::kFp32Simt, "cuBLAS/cuDNN"},
    NameRow{ARCH R"((?:\w*_)?d(?:gemm|cudnn))", M::kFp64, "cuBLAS/cuDNN"},
    NameRow{ARCH R"((?:\w*_)?[hs]?)" MMA_OP, M::kUnknown, "cuBLAS/cuDNN"},
    NameRow{R"((?:^|\s)sgemm_largek_lds\d+)", M::kFp32Simt, "cuBLAS/cuDNN"},
    // cuDNN's older convolution engines, typed by their template.
    NameRow{R"((?:implicit|explicit|precomputed)_convolve_sgemm)", M::kFp32Simt, "cuDNN"},
    NameRow{R"(_convolve_dgemm)", M::kFp64, "cuDNN"},
    // The legacy engines, with or without their namespace (`void wgrad_alg0_engine<float,
    // ...>` is cuDNN's too).
    NameRow{R"(cudnn::\w+::(?:wgrad_alg\d\w*|dgrad\w*)<float)", M::kFp32Simt, "cuDNN"},
    NameRow{R"((?:^|\s)(?:wgrad_alg\d\w*_engine|dgrad\w*_engine)<float)", M::kFp32Simt, "cuDNN"},
    NameRow{R"(conv2d_grouped_direct_kernel|depthwise)", M::kNotMatrix, "cuDNN/PyTorch direct"},
    NameRow{R"(cudnn::winograd_nonfused::winograd|nchwToNhwc|nhwcToNchw|cudnn::ops::|)"
            R"(cudnn::bn_\w+|cudnn::engines_precompiled::|cublasLt::epilogue::)",
            M::kNotMatrix, "cuDNN"},
    // cuBLAS level 1 and 2, and the split-K reduction after a GEMM.
    NameRow{R"(gemv|\bdot_kernel|\bscal_kernel|\baxpy_kernel|\bnrm2_kernel|reduce_1Block_kernel)",
            M::kNotMatrix, "cuBLAS level 1/2"},
    NameRow{R"(splitKreduce_kernel)", M::kNotMatrix, "cuBLAS split-K reduction"},
    NameRow{R"(gemmk1_kernel|gemmSN_[NT][NT]_kernel)", M::kUnknown, "cuBLAS small GEMM"},
    // Triton (torch.compile): pointwise, reduction and persistent reduction kernels; its
    // GEMM templates do not name their precision.
    NameRow{R"(^triton_(?:poi|red|per)_)", M::kNotMatrix, "Triton"},
    NameRow{R"(^triton_(?:\w+_)?(?:mm|bmm|addmm|conv)(?:_|\d|$))", M::kUnknown, "Triton GEMM"},
    // PyTorch's own kernels, CUB, Thrust, NCCL: no matrix multiply.
    NameRow{R"(at::native::|at::cuda::|at_cuda_detail::)", M::kNotMatrix, "PyTorch"},
    NameRow{R"(\bcub::|\bthrust::)", M::kNotMatrix, "CUB/Thrust"},
    NameRow{R"((?:^|\s)nccl\w*Kernel_)", M::kNotMatrix, "NCCL"},
};

#undef ARCH
#undef MMA_OP
#undef CONV_OP

struct CompiledRow {
  std::unique_ptr<RE2> re;
  const NameRow* row;
};

const std::vector<CompiledRow>& CompiledRows() {
  static const std::vector<CompiledRow>* rows = [] {
    auto* out = new std::vector<CompiledRow>;
    RE2::Options options;
    options.set_log_errors(false);
    for (const NameRow& row : kRows) {
      out->push_back({std::make_unique<RE2>(row.pattern, options), &row});
    }
    return out;
  }();
  return *rows;
}

const RE2& LongReduction() {
  static const RE2* re = new RE2(R"((?i)split_?k(?:[^r]|$)|large_?k)");
  return *re;
}

}  // namespace

std::string_view KernelMathName(KernelMath math) {
  switch (math) {
    case M::kNotMatrix:
      return "no matrix multiply";
    case M::kFp32Simt:
      return "FP32 SIMT";
    case M::kFp32SimtAttention:
      return "FP32 SIMT attention";
    case M::kTf32Tensor:
      return "TF32 tensor core";
    case M::kFp16Tensor:
      return "FP16 tensor core";
    case M::kBf16Tensor:
      return "BF16 tensor core";
    case M::kFp8Tensor:
      return "FP8 tensor core";
    case M::kInt8Tensor:
      return "INT8 tensor core";
    case M::kFp64:
      return "FP64";
    case M::kUnknown:
      break;
  }
  return "unknown";
}

bool OnTensorCores(KernelMath math) {
  return math == M::kTf32Tensor || math == M::kFp16Tensor || math == M::kBf16Tensor ||
         math == M::kFp8Tensor || math == M::kInt8Tensor;
}

bool KernelMathTableCompiles() {
  for (const CompiledRow& row : CompiledRows()) {
    if (!row.re->ok()) return false;
  }
  return true;
}

KernelMathClass ClassifyKernelMath(std::string_view name) {
  const re2::StringPiece piece(name.data(), name.size());
  KernelMathClass out;
  for (const CompiledRow& row : CompiledRows()) {
    if (!row.re->ok() || !RE2::PartialMatch(piece, *row.re)) continue;
    out.math = row.row->math;
    out.scheme = row.row->scheme;
    break;
  }
  out.long_reduction = out.math != M::kNotMatrix && RE2::PartialMatch(piece, LongReduction());
  return out;
}

const KernelMathClass& KernelMathClassifier::Classify(std::string_view name) {
  auto it = seen_.find(name);
  if (it == seen_.end()) it = seen_.emplace(name, ClassifyKernelMath(name)).first;
  return it->second;
}

std::optional<MathPeaks> MathPeaksOf(uint32_t major, uint32_t minor) {
  // Dense FLOP per SM per clock, from NVIDIA's architecture whitepapers (tensor figures with
  // FP32 accumulation). sm_86 and sm_89: the GeForce parts' figures, the lower of their family
  // (their TF32 runs no faster than FP32; the professional parts' do, twice).
  static constexpr std::array<MathPeaks, 7> kPeaks = {{
      {7, 0, 128, 0, 1024, 0},       // V100: FP16 only
      {7, 5, 128, 0, 512, 0},        // T4, RTX 20: FP16 only
      {8, 0, 128, 1024, 2048, 0},    // A100
      {8, 6, 256, 256, 512, 0},      // RTX 30, A10, A40
      {8, 9, 256, 256, 512, 1024},   // L4, L40, RTX 40
      {9, 0, 256, 2048, 4096, 8192},  // H100, H200
      {10, 0, 256, 4096, 8192, 16384},  // B200
  }};
  for (const MathPeaks& p : kPeaks) {
    if (p.major == major && p.minor == minor) return p;
  }
  return std::nullopt;
}

}  // namespace warpscope
