// CuptiHost: CUPTI's host-side functions loaded at run time, so the analyzers build and run
// without CUDA and use CUPTI only for what needs it: evaluating raw PM samples (PmCounterData)
// into metric values (cupti_profiler_host.h), and mapping the PCs of PC samples to source
// lines (cuptiGetSassToSourceCorrelation). Neither needs a GPU or a driver.
#ifndef WARPSCOPE_ANALYZERS_MODEL_CUPTI_HOST_H_
#define WARPSCOPE_ANALYZERS_MODEL_CUPTI_HOST_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/settings/settings.h"

namespace warpscope {

// Where libcupti is looked for, in order: $WARPSCOPE_CUPTI_LIBRARY (a file, e.g. the
// libcupti.so.13 of the PyPI wheel nvidia-cuda-cupti; its row in proto/settings/settings.h), the
// dynamic loader's search path (LD_LIBRARY_PATH, ldconfig), then $CUDA_HOME and
// /usr/local/cuda (extras/CUPTI/lib64, lib64).
inline constexpr const char* kCuptiLibraryEnv = Setting(SettingId::kCuptiLibrary).variable.data();

// Evaluates the samples of PM sampling counter data images of one metric set.
class PmCounterDataEvaluator {
 public:
  virtual ~PmCounterDataEvaluator() = default;
  // Values of `metric_names` (the order given at creation) for sample `sample_index` of
  // `image`, into `values`.
  virtual absl::Status Evaluate(std::span<const uint8_t> image, uint32_t sample_index,
                                std::vector<double>* values) = 0;
};

// A host object for `chip_name` with the device's counter availability image and the
// metric set. Fails with FAILED_PRECONDITION when libcupti cannot be loaded (the message
// says how to get it) and with the CUPTI error when the chip or a metric is unknown.
absl::StatusOr<std::unique_ptr<PmCounterDataEvaluator>> MakePmCounterDataEvaluator(
    std::string_view chip_name, std::span<const uint8_t> counter_availability,
    const std::vector<std::string>& metric_names);

// How many passes PM sampling needs for `metric_names` on `chip_name` ("GH100"), from CUPTI's
// host API alone (no GPU): the recorder samples only sets of one pass. FAILED_PRECONDITION
// without libcupti, INVALID_ARGUMENT for an unknown chip or metric.
absl::StatusOr<size_t> CuptiPmSamplingPasses(std::string_view chip_name,
                                             const std::vector<std::string>& metric_names);

// Where a SASS instruction comes from in the source, from the cubin's line table (-lineinfo).
struct SassSourceLine {
  std::string dir;   // the directory the file was compiled in; may be empty
  std::string file;  // as given to the compiler; empty when the cubin has no line table
  uint32_t line = 0;  // 0 when unknown
};

// cuptiGetSassToSourceCorrelation: the source line of the instruction at `pc_offset` of
// function `function_name` (mangled) in `cubin`. Needs no GPU. FAILED_PRECONDITION when
// libcupti cannot be loaded, NOT_FOUND when CUPTI does not find the function (or the cubin is
// not one). CUPTI trusts the cubin: call it on bytes from a trace only in a child process.
absl::StatusOr<SassSourceLine> CuptiSassToSource(std::span<const uint8_t> cubin,
                                                 const std::string& function_name,
                                                 uint64_t pc_offset);

// The path of the libcupti that was loaded, or the reason none could be.
absl::StatusOr<std::string> CuptiHostLibraryPath();

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_CUPTI_HOST_H_
