// The small interface between the PM sampling controller and CUPTI. CuptiPmSampling (the only
// file that calls CUPTI) implements it; unit tests hand the controller a fake. No CUPTI types.
#ifndef WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_API_H_
#define WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_API_H_

#include <cstddef>
#include <cstdint>
#include <functional>
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
};

// One decoded sample: [start_ns, end_ns] as CUPTI reports them, values in metric order.
using PmSampleVisitor =
    std::function<void(uint64_t start_ns, uint64_t end_ns, const double* values, size_t count)>;

struct PmDecodeResult {
  uint64_t samples = 0;   // samples handed to the visitor
  bool overflow = false;  // the hardware buffer overflowed since the last decode
  bool more = false;      // the counter data image filled up: decode again right away
  uint64_t decode_ns = 0;    // time in cuptiPmSamplingDecodeData (raw records -> image)
  uint64_t evaluate_ns = 0;  // time in cuptiProfilerHostEvaluateToGpuValues
  uint64_t reset_ns = 0;     // time re-initialising the counter data image for the next decode
};

class PmSamplingApi {
 public:
  virtual ~PmSamplingApi() = default;
  // cuptiProfilerInitialize (once per process).
  virtual PmResult Initialize() = 0;
  // Chip name, counter availability, host object, config image; returns how many passes the
  // metric set needs (the controller refuses anything but 1).
  virtual PmResult PrepareDevice(const PmDeviceSettings& settings, std::string* chip_name,
                                 size_t* num_passes) = 0;
  // cuptiPmSamplingEnable, SetConfig (time trigger), counter data image.
  virtual PmResult EnableDevice(uint32_t device_index) = 0;
  virtual PmResult Start(uint32_t device_index) = 0;
  virtual PmResult Stop(uint32_t device_index) = 0;
  // DecodeData, GetCounterDataInfo, per sample GetSampleInfo + EvaluateToGpuValues, image reset.
  virtual PmResult Decode(uint32_t device_index, const PmSampleVisitor& visitor,
                          PmDecodeResult* result) = 0;
  // cuptiPmSamplingDisable and cuptiProfilerHostDeinitialize; safe on a device never enabled.
  virtual void DisableDevice(uint32_t device_index) = 0;
  // cuptiProfilerDeInitialize.
  virtual void Deinitialize() = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_API_H_
