// CUPTI PM sampling wrapper and the collector's registration. Call sequence (docs/cupti_notes.md §3):
//   cuptiProfilerInitialize -> cuptiDeviceGetChipName -> GetCounterAvailability (size, fill)
//   -> cuptiProfilerHostInitialize(PM_SAMPLING) -> ConfigAddMetrics -> GetConfigImage(Size)
//   -> GetNumOfPasses (the controller refuses != 1) -> cuptiPmSamplingEnable -> SetConfig
//   (GPU_TIME_INTERVAL, KEEP_OLDEST) -> GetCounterDataSize + CounterDataImageInitialize
//   -> Start -> [DecodeData -> GetCounterDataInfo -> per sample GetSampleInfo +
//   EvaluateToGpuValues -> image reset]* -> Stop -> final decode. Disable, host and profiler
//   deinitialization are skipped at teardown: they crashed sampled processes at exit on
//   the H200 (see DisableDevice).
#include "collectors/pm_sampling/cupti_pm_sampling.h"

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "collectors/common/cupti_params.h"
#include "collectors/pm_sampling/pm_sampling_collector.h"
#include "collectors/pm_sampling/pm_sampling_config.h"
#include "proto/settings/settings.h"

namespace warpscope {

struct CuptiPmSampling::DeviceState {
  uint32_t device_index = 0;
  std::string chip;
  std::vector<std::string> metric_storage;
  std::vector<const char*> metric_names;
  uint64_t interval_ns = 0;
  uint64_t hardware_buffer_bytes = 0;
  uint32_t max_samples = 0;
  std::vector<uint8_t> availability;
  std::vector<uint8_t> config_image;
  std::vector<uint8_t> counter_data;
  std::vector<double> values;
  bool evaluate = true;
  bool keep_raw = false;
  uint32_t headroom = 0;
  size_t consumed = 0;  // samples of the image already visited
  size_t populated = 0;  // after the last decode (a sample may be populated, not completed)
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_PmSampling_Object* sampler = nullptr;
};

namespace {

PmResult Check(CUptiResult status, const char* call) {
  if (status == CUPTI_SUCCESS) return PmResult::Ok();
  const char* text = nullptr;
  cuptiGetResultString(status, &text);
  PmResult r;
  r.message = std::string(call) + ": " + (text ? text : "unknown CUPTI error") + " (" +
              std::to_string(static_cast<int>(status)) + ")";
  switch (status) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      r.kind = PmErrorKind::kInsufficientPrivileges;
      break;
    case CUPTI_ERROR_HARDWARE_BUSY:
      r.kind = PmErrorKind::kHardwareBusy;
      break;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_METRIC_NAME:
    case CUPTI_ERROR_INVALID_CHIP_NAME:
    case CUPTI_ERROR_INVALID_DEVICE:
      r.kind = PmErrorKind::kUnsupported;
      break;
    case CUPTI_ERROR_OUT_OF_MEMORY:
      r.kind = PmErrorKind::kOutOfMemory;
      break;
    default:
      r.kind = PmErrorKind::kOther;
      break;
  }
  return r;
}

PmResult NotPrepared(uint32_t device) {
  PmResult r;
  r.kind = PmErrorKind::kOther;
  r.message = "device " + std::to_string(device) + " was not prepared";
  return r;
}

PmResult ResetCounterData(CuptiPmSampling::DeviceState& d) {
  auto p = CuptiParams<CUpti_PmSampling_CounterDataImage_Initialize_Params>(
      CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  p.pPmSamplingObject = d.sampler;
  p.counterDataSize = d.counter_data.size();
  p.pCounterData = d.counter_data.data();
  return Check(cuptiPmSamplingCounterDataImageInitialize(&p),
               "cuptiPmSamplingCounterDataImageInitialize");
}

// The profiler host object for the device's metrics, its config image and the number of
// passes it needs.
PmResult BuildConfigImage(CuptiPmSampling::DeviceState& d, size_t* num_passes) {
  auto host = CuptiParams<CUpti_Profiler_Host_Initialize_Params>(
      CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  host.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  host.pChipName = d.chip.c_str();
  host.pCounterAvailabilityImage = d.availability.data();
  if (PmResult r = Check(cuptiProfilerHostInitialize(&host), "cuptiProfilerHostInitialize");
      !r.ok()) {
    return r;
  }
  d.host = host.pHostObject;

  auto add = CuptiParams<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  add.pHostObject = d.host;
  add.ppMetricNames = d.metric_names.data();
  add.numMetrics = d.metric_names.size();
  if (PmResult r =
          Check(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
      !r.ok()) {
    return r;
  }
  auto size = CuptiParams<CUpti_Profiler_Host_GetConfigImageSize_Params>(
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  size.pHostObject = d.host;
  if (PmResult r =
          Check(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
      !r.ok()) {
    return r;
  }
  d.config_image.resize(size.configImageSize);
  auto image = CuptiParams<CUpti_Profiler_Host_GetConfigImage_Params>(
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  image.pHostObject = d.host;
  image.configImageSize = d.config_image.size();
  image.pConfigImage = d.config_image.data();
  if (PmResult r =
          Check(cuptiProfilerHostGetConfigImage(&image), "cuptiProfilerHostGetConfigImage");
      !r.ok()) {
    return r;
  }
  auto passes = CuptiParams<CUpti_Profiler_Host_GetNumOfPasses_Params>(
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  passes.configImageSize = d.config_image.size();
  passes.pConfigImage = d.config_image.data();
  if (PmResult r =
          Check(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses");
      !r.ok()) {
    return r;
  }
  *num_passes = passes.numOfPasses;
  return PmResult::Ok();
}

uint64_t Since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - t0)
                                   .count());
}

// Hands each completed sample not yet visited to `visitor`: its times and, when evaluating,
// its metric values. Adds the time spent to *info_ns and result->evaluate_ns.
PmResult VisitSamples(CuptiPmSampling::DeviceState& d, size_t completed,
                      const PmSampleVisitor& visitor, PmDecodeResult* result, uint64_t* info_ns) {
  for (size_t i = d.consumed; i < completed; ++i) {
    const auto s0 = std::chrono::steady_clock::now();
    auto sample = CuptiParams<CUpti_PmSampling_CounterData_GetSampleInfo_Params>(
        CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE);
    sample.pPmSamplingObject = d.sampler;
    sample.pCounterDataImage = d.counter_data.data();
    sample.counterDataImageSize = d.counter_data.size();
    sample.sampleIndex = i;
    if (PmResult r = Check(cuptiPmSamplingCounterDataGetSampleInfo(&sample),
                           "cuptiPmSamplingCounterDataGetSampleInfo");
        !r.ok()) {
      return r;
    }
    *info_ns += Since(s0);
    const double* values = nullptr;
    size_t count = 0;
    if (d.evaluate) {
      auto eval = CuptiParams<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
          CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
      eval.pHostObject = d.host;
      eval.pCounterDataImage = d.counter_data.data();
      eval.counterDataImageSize = d.counter_data.size();
      eval.rangeIndex = i;
      eval.ppMetricNames = d.metric_names.data();
      eval.numMetrics = d.metric_names.size();
      eval.pMetricValues = d.values.data();
      const auto e0 = std::chrono::steady_clock::now();
      const CUptiResult evaluated = cuptiProfilerHostEvaluateToGpuValues(&eval);
      result->evaluate_ns += Since(e0);
      if (PmResult r = Check(evaluated, "cuptiProfilerHostEvaluateToGpuValues"); !r.ok()) {
        return r;
      }
      values = d.values.data();
      count = d.values.size();
    }
    visitor(static_cast<uint32_t>(i), sample.startTimestamp, sample.endTimestamp, values, count);
    ++result->samples;
  }
  return PmResult::Ok();
}

}  // namespace

CuptiPmSampling::CuptiPmSampling() = default;
CuptiPmSampling::~CuptiPmSampling() {
  for (auto& [device, state] : devices_) DisableDevice(device);
}

PmResult CuptiPmSampling::Initialize() {
  auto p = CuptiParams<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  return Check(cuptiProfilerInitialize(&p), "cuptiProfilerInitialize");
}

PmResult CuptiPmSampling::PrepareDevice(const PmDeviceSettings& settings, std::string* chip_name,
                                        std::string* counter_availability, size_t* num_passes) {
  auto state = std::make_unique<DeviceState>();
  DeviceState& d = *state;
  d.device_index = settings.device_index;
  d.metric_storage = settings.metrics;
  for (const std::string& m : d.metric_storage) d.metric_names.push_back(m.c_str());
  d.values.resize(d.metric_names.size());
  d.interval_ns = settings.interval_ns;
  d.hardware_buffer_bytes = settings.hardware_buffer_bytes;
  d.max_samples = settings.max_samples_per_decode;
  d.evaluate = settings.evaluate;
  d.keep_raw = settings.keep_raw;
  d.headroom = settings.image_headroom_samples;
  devices_[settings.device_index] = std::move(state);

  auto chip = CuptiParams<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  chip.deviceIndex = d.device_index;
  if (PmResult r = Check(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName"); !r.ok()) {
    return r;
  }
  d.chip = chip.pChipName ? chip.pChipName : "";
  *chip_name = d.chip;

  auto avail = CuptiParams<CUpti_PmSampling_GetCounterAvailability_Params>(
      CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE);
  avail.deviceIndex = d.device_index;
  if (PmResult r = Check(cuptiPmSamplingGetCounterAvailability(&avail),
                         "cuptiPmSamplingGetCounterAvailability");
      !r.ok()) {
    return r;
  }
  d.availability.resize(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = d.availability.data();
  if (PmResult r = Check(cuptiPmSamplingGetCounterAvailability(&avail),
                         "cuptiPmSamplingGetCounterAvailability");
      !r.ok()) {
    return r;
  }
  counter_availability->assign(d.availability.begin(), d.availability.end());

  return BuildConfigImage(d, num_passes);
}

PmResult CuptiPmSampling::EnableDevice(uint32_t device_index) {
  auto it = devices_.find(device_index);
  if (it == devices_.end()) return NotPrepared(device_index);
  DeviceState& d = *it->second;
  auto enable = CuptiParams<CUpti_PmSampling_Enable_Params>(CUpti_PmSampling_Enable_Params_STRUCT_SIZE);
  enable.deviceIndex = d.device_index;
  if (PmResult r = Check(cuptiPmSamplingEnable(&enable), "cuptiPmSamplingEnable"); !r.ok()) {
    return r;
  }
  d.sampler = enable.pPmSamplingObject;

  auto config =
      CuptiParams<CUpti_PmSampling_SetConfig_Params>(CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE);
  config.pPmSamplingObject = d.sampler;
  config.configSize = d.config_image.size();
  config.pConfig = d.config_image.data();
  config.hardwareBufferSize = d.hardware_buffer_bytes;
  config.samplingInterval = d.interval_ns;
  config.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  // KEEP_OLDEST: a full buffer takes no new records until the decoder frees room, and the
  // decoder reports `overflow`. KEEP_LATEST overwrote records while the decoder was reading
  // them whenever it fell behind (intervals <= 50 us on the H200): decode failures with
  // CUPTI_ERROR_UNKNOWN, and in 2 of 11 runs at 20 us a SIGFPE inside libnvperf_host that
  // killed the program.
  config.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  if (PmResult r = Check(cuptiPmSamplingSetConfig(&config), "cuptiPmSamplingSetConfig"); !r.ok()) {
    return r;
  }

  // Raw images are written as one trace packet each: halve the capacity until one fits.
  while (true) {
    auto size = CuptiParams<CUpti_PmSampling_GetCounterDataSize_Params>(
        CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE);
    size.pPmSamplingObject = d.sampler;
    size.pMetricNames = d.metric_names.data();
    size.numMetrics = d.metric_names.size();
    size.maxSamples = d.max_samples;
    if (PmResult r =
            Check(cuptiPmSamplingGetCounterDataSize(&size), "cuptiPmSamplingGetCounterDataSize");
        !r.ok()) {
      return r;
    }
    if (d.keep_raw && size.counterDataSize > kMaxPmRawImageBytes && d.max_samples > 16) {
      d.max_samples /= 2;
      continue;
    }
    d.counter_data.resize(size.counterDataSize);
    break;
  }
  // Room for at least two decodes between re-initialisations.
  d.headroom = std::min<uint32_t>(d.headroom, d.max_samples / 2);
  d.consumed = 0;
  d.populated = 0;
  return ResetCounterData(d);
}

PmResult CuptiPmSampling::Start(uint32_t device_index) {
  auto it = devices_.find(device_index);
  if (it == devices_.end() || it->second->sampler == nullptr) return NotPrepared(device_index);
  auto p = CuptiParams<CUpti_PmSampling_Start_Params>(CUpti_PmSampling_Start_Params_STRUCT_SIZE);
  p.pPmSamplingObject = it->second->sampler;
  return Check(cuptiPmSamplingStart(&p), "cuptiPmSamplingStart");
}

PmResult CuptiPmSampling::Stop(uint32_t device_index) {
  auto it = devices_.find(device_index);
  if (it == devices_.end() || it->second->sampler == nullptr) return NotPrepared(device_index);
  auto p = CuptiParams<CUpti_PmSampling_Stop_Params>(CUpti_PmSampling_Stop_Params_STRUCT_SIZE);
  p.pPmSamplingObject = it->second->sampler;
  return Check(cuptiPmSamplingStop(&p), "cuptiPmSamplingStop");
}

PmResult CuptiPmSampling::Decode(uint32_t device_index, const PmSampleVisitor& visitor,
                                 const PmImageVisitor& image_visitor, bool flush,
                                 PmDecodeResult* result) {
  auto it = devices_.find(device_index);
  if (it == devices_.end() || it->second->sampler == nullptr) return NotPrepared(device_index);
  DeviceState& d = *it->second;
  // Hands the image over and re-initialises it; only between whole samples.
  auto recycle = [&]() -> PmResult {
    if (d.keep_raw && d.consumed > 0 && image_visitor) {
      image_visitor(std::span<const uint8_t>(d.counter_data));
      ++result->images;
      result->image_bytes += d.counter_data.size();
    }
    const auto r0 = std::chrono::steady_clock::now();
    PmResult reset = ResetCounterData(d);
    result->reset_ns += Since(r0);
    d.consumed = 0;
    d.populated = 0;
    return reset;
  };
  // Not enough room left for this decode: start a fresh image first, so that a decode never
  // stops at a full image in the middle of a sample.
  if (d.populated == d.consumed && d.consumed > 0 && d.consumed + d.headroom > d.max_samples) {
    if (PmResult r = recycle(); !r.ok()) return r;
  }

  auto decode =
      CuptiParams<CUpti_PmSampling_DecodeData_Params>(CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE);
  decode.pPmSamplingObject = d.sampler;
  decode.pCounterDataImage = d.counter_data.data();
  decode.counterDataImageSize = d.counter_data.size();
  const auto t0 = std::chrono::steady_clock::now();
  PmResult decoded = Check(cuptiPmSamplingDecodeData(&decode), "cuptiPmSamplingDecodeData");
  result->decode_ns += Since(t0);
  result->overflow = decode.overflow != 0;
  if (!decoded.ok() && decoded.kind != PmErrorKind::kOutOfMemory) return decoded;
  const bool full =
      decode.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
  result->more = full;

  const auto i0 = std::chrono::steady_clock::now();
  auto info = CuptiParams<CUpti_PmSampling_GetCounterDataInfo_Params>(
      CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = d.counter_data.data();
  info.counterDataImageSize = d.counter_data.size();
  if (PmResult r =
          Check(cuptiPmSamplingGetCounterDataInfo(&info), "cuptiPmSamplingGetCounterDataInfo");
      !r.ok()) {
    return r;
  }
  if (info.numCompletedSamples < d.consumed) d.consumed = 0;  // CUPTI started the image afresh
  d.populated = info.numPopulatedSamples;
  uint64_t info_ns = Since(i0);
  if (PmResult r = VisitSamples(d, info.numCompletedSamples, visitor, result, &info_ns); !r.ok()) {
    return r;
  }
  result->info_ns += info_ns;
  d.consumed = info.numCompletedSamples;
  if (full || flush) {
    if (PmResult r = recycle(); !r.ok()) return r;
  }
  return decoded;
}

void CuptiPmSampling::DisableDevice(uint32_t device_index) {
  // cuptiPmSamplingDisable and cuptiProfilerHostDeinitialize are deliberately not called.
  // On the H200 (CUPTI 13.0 U1, driver 580) either of them, at context teardown or in our
  // atexit handler, made every run that had sampled kernels abort at exit ("double free
  // detected"); without them all runs exited cleanly with every sample written. The objects
  // are released with the process; a context destroyed and re-created on the same device in
  // one process is not sampled again (Enable reports it, counted).
  auto it = devices_.find(device_index);
  if (it == devices_.end()) return;
  it->second->sampler = nullptr;  // later Start/Stop/Decode answer "not prepared"
  it->second->host = nullptr;
}

void CuptiPmSampling::Deinitialize() {
  // cuptiProfilerDeInitialize is not called either: Deinitialize runs only at process end,
  // where the teardown calls of the profiler API crashed sampled runs on the H200 (see
  // DisableDevice). PyTorch programs with PM sampling still ended with SIGSEGV at exit in
  // the last H200 runs (both with this call made); whether leaving it out is enough has not
  // been checked on a GPU yet (docs/validation.md).
}

namespace {

std::unique_ptr<PmSamplingApi> MakeCuptiPmSampling() { return std::make_unique<CuptiPmSampling>(); }

}  // namespace

std::unique_ptr<SessionListener> MakePmSamplingCollector() {
  return std::make_unique<PmSamplingCollector>(&MakeCuptiPmSampling);
}

}  // namespace warpscope
