// The small interface between the PM sampling controller and CUPTI. CuptiPmSampling (the only
// file that calls CUPTI) implements it; unit tests hand the controller a fake. No CUPTI types.
#ifndef WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_API_H_
#define WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_API_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace warpscope {

// Why a call failed, in the categories the controller treats differently.
enum class PmErrorKind {
  kNone,
  kInsufficientPrivileges,  // CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: counters are admin-only
  kHardwareBusy,            // CUPTI_ERROR_HARDWARE_BUSY: another profiler (DCGM, Nsight) holds them
  kUnsupported,             // device, vGPU/MIG or metric not supported
  kOutOfMemory,             // decode: hardware buffer overflow with KEEP_OLDEST
  kOther,
};

struct PmResult {
  PmErrorKind kind = PmErrorKind::kNone;
  std::string message;  // e.g. "cuptiPmSamplingEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35)"
  bool ok() const { return kind == PmErrorKind::kNone; }
  static PmResult Ok() { return {}; }
};

struct PmDeviceSettings {
  uint32_t device_index = 0;         // CUDA device ordinal
  std::vector<std::string> metrics;  // CUPTI metric names
  uint64_t interval_ns = 0;          // GPU_TIME_INTERVAL trigger
  uint64_t hardware_buffer_bytes = 0;
  uint32_t max_samples_per_decode = 0;  // counter data image capacity
  bool evaluate = true;   // compute metric values in the process (cuptiProfilerHostEvaluate...)
  bool keep_raw = false;  // hand counter data images over (PmImageVisitor) before each reset
  // Re-initialise the image before a decode when fewer free slots than this remain (so a
  // decode never fills it up in the middle of a sample).
  uint32_t image_headroom_samples = 0;
};

// One decoded sample: its index in the counter data image, [start_ns, end_ns] as CUPTI
// reports them, values in metric order (nullptr and 0 when not evaluated in the process).
using PmSampleVisitor = std::function<void(uint32_t sample_index, uint64_t start_ns,
                                           uint64_t end_ns, const double* values, size_t count)>;
// A counter data image about to be re-initialised, with every sample already visited.
using PmImageVisitor = std::function<void(std::span<const uint8_t> image)>;

struct PmDecodeResult {
  uint64_t samples = 0;   // samples handed to the visitor
  bool overflow = false;  // the hardware buffer overflowed since the last decode
  bool more = false;      // the counter data image filled up: decode again right away
  uint64_t decode_ns = 0;    // time in cuptiPmSamplingDecodeData (raw records -> image)
  uint64_t evaluate_ns = 0;  // time in cuptiProfilerHostEvaluateToGpuValues
  uint64_t reset_ns = 0;     // time re-initialising the counter data image for the next decode
  uint64_t info_ns = 0;      // time reading sample times (GetCounterDataInfo, GetSampleInfo)
  uint64_t images = 0;       // images handed to the image visitor
  uint64_t image_bytes = 0;  // their bytes
};

class PmSamplingApi {
 public:
  virtual ~PmSamplingApi() = default;
  // cuptiProfilerInitialize (once per process).
  virtual PmResult Initialize() = 0;
  // Chip name, counter availability, host object, config image; returns how many passes the
  // metric set needs (the controller refuses anything but 1).
  // `counter_availability` receives the device's counter availability image (for raw
  // samples, which the analyzers evaluate with it).
  virtual PmResult PrepareDevice(const PmDeviceSettings& settings, std::string* chip_name,
                                 std::string* counter_availability, size_t* num_passes) = 0;
  // cuptiPmSamplingEnable, SetConfig (time trigger), counter data image.
  virtual PmResult EnableDevice(uint32_t device_index) = 0;
  virtual PmResult Start(uint32_t device_index) = 0;
  virtual PmResult Stop(uint32_t device_index) = 0;
  // DecodeData, GetCounterDataInfo, per new sample GetSampleInfo (+ EvaluateToGpuValues when
  // evaluating). Decodes append to the image; it is handed to `image_visitor` (when keeping
  // raw data) and re-initialised when it is full, when less than the headroom is free before
  // a decode, or when `flush` (the last decode after Stop).
  virtual PmResult Decode(uint32_t device_index, const PmSampleVisitor& visitor,
                          const PmImageVisitor& image_visitor, bool flush,
                          PmDecodeResult* result) = 0;
  // cuptiPmSamplingDisable and cuptiProfilerHostDeinitialize; safe on a device never enabled.
  virtual void DisableDevice(uint32_t device_index) = 0;
  // cuptiProfilerDeInitialize.
  virtual void Deinitialize() = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_API_H_
