// CuptiHost: CUPTI's host API (cupti_profiler_host.h) loaded at run time, so the analyzers
// build and run without CUDA and use CUPTI only for what needs it: evaluating raw PM
// samples (PmCounterData) into metric values. The host API needs no GPU and no driver.
#ifndef WARPSCOPE_ANALYZERS_LIB_CUPTI_HOST_H_
#define WARPSCOPE_ANALYZERS_LIB_CUPTI_HOST_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warpscope {

// Where libcupti is looked for, in order: $WARPSCOPE_CUPTI_LIBRARY (a file, e.g. the
// libcupti.so.13 of the PyPI wheel nvidia-cuda-cupti), the dynamic loader's search path
// (LD_LIBRARY_PATH, ldconfig), then $CUDA_HOME and /usr/local/cuda (extras/CUPTI/lib64,
// lib64).
inline constexpr char kCuptiLibraryEnv[] = "WARPSCOPE_CUPTI_LIBRARY";

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

// The path of the libcupti that was loaded, or the reason none could be.
absl::StatusOr<std::string> CuptiHostLibraryPath();

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_LIB_CUPTI_HOST_H_
