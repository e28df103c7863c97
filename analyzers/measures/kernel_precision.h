// Kernel math classes: the precision and unit of a kernel's matrix work (FP32 on the SIMT
// cores, TF32 / FP16 / BF16 / FP8 / INT8 on tensor cores, FP64), read from its name by one table
// of naming schemes (cuBLAS, cuBLASLt and nvjet, cutlass, cuDNN, TensorRT, Triton, PyTorch,
// flash and memory-efficient attention), and the math peaks of each architecture. A name no row
// of the table reads is unknown, never guessed (docs/advise.md, "Precision").
//
// Names only, for now. When PM samples of the tensor pipe are recorded, a kernel's measured
// tensor-pipe activity is the evidence to confirm or overturn its class: it belongs where the
// class of a kernel is looked up (KernelMathClassifier::Classify's callers hold the kernel).
#ifndef WARPSCOPE_ANALYZERS_MEASURES_KERNEL_PRECISION_H_
#define WARPSCOPE_ANALYZERS_MEASURES_KERNEL_PRECISION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace warpscope {

enum class KernelMath : uint8_t {
  kUnknown,    // no row reads the name, or a GEMM whose name does not say its precision
  kNotMatrix,  // a known scheme's kernel that does no matrix multiply (elementwise, reduction,
               // copy, collective, matrix-vector, a GEMM's split-K reduction, direct conv)
  kFp32Simt,   // FP32 GEMM or convolution on the SIMT cores: TF32 or BF16/FP16 would move it
  kFp32SimtAttention,  // FP32 fused attention on the SIMT cores: only BF16/FP16 moves it
  kTf32Tensor,
  kFp16Tensor,
  kBf16Tensor,
  kFp8Tensor,
  kInt8Tensor,
  kFp64,  // FP64 GEMM or convolution, SIMT or tensor core
};

// "FP32 SIMT", "TF32 tensor core", "not a GEMM/convolution", "unknown", ...
std::string_view KernelMathName(KernelMath math);
bool OnTensorCores(KernelMath math);  // TF32, FP16, BF16, FP8, INT8
// FP32 matrix work on the SIMT cores (GEMMs, convolutions, attention).
inline bool IsFp32Simt(KernelMath math) {
  return math == KernelMath::kFp32Simt || math == KernelMath::kFp32SimtAttention;
}

struct KernelMathClass {
  KernelMath math = KernelMath::kUnknown;
  std::string_view scheme;  // the naming scheme that read it ("cuBLAS xmma", ...); "" if none
  // A GEMM that splits its reduction dimension (split-K, large-K kernels): a long reduction,
  // where rounding the inputs to TF32 or BF16 weighs most.
  bool long_reduction = false;
};

// The class of one demangled kernel name, by the first row of the table that matches it.
KernelMathClass ClassifyKernelMath(std::string_view name);

// Whether every row of the table is a valid RE2 pattern (a row that is not matches nothing).
bool KernelMathTableCompiles();

// ClassifyKernelMath with each distinct name read once: a trace launches a kernel many times.
// The names handed in must outlive the classifier (a TraceModel's names do while it lives).
class KernelMathClassifier {
 public:
  const KernelMathClass& Classify(std::string_view name);

 private:
  std::unordered_map<std::string_view, KernelMathClass> seen_;
};

// Dense math throughput of one SM per clock (FLOP; INT8: OP), by compute capability: the
// clock and the SM count cancel in the ratios the precision rule uses. 0 where the
// architecture has no such path.
struct MathPeaks {
  uint32_t major = 0, minor = 0;
  double fp32_simt = 0;
  double tf32_tensor = 0;
  double bf16_tensor = 0;  // FP16 the same
  double fp8_tensor = 0;
};

// The peaks of sm_<major><minor>, or nullopt for an architecture the table does not hold.
std::optional<MathPeaks> MathPeaksOf(uint32_t major, uint32_t minor);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_KERNEL_PRECISION_H_
