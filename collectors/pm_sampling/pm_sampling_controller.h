// PmSamplingController: the PM sampling state machine per device (prepare, one-pass check,
// enable, start/stop with the capture window), the decode thread, and the translation of
// decoded samples into PmMetricSetRecord/PmSampleRecord. CUPTI-free: it drives a
// PmSamplingApi, so unit tests run it against a fake.
#ifndef WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_CONTROLLER_H_
#define WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_CONTROLLER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "collectors/pm_sampling/pm_sampling_api.h"
#include "collectors/pm_sampling/pm_sampling_config.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

// Counter names, from the stats table (proto/writer/stats_table.h: severities, meanings).
inline constexpr const char* kPmStatSamples = stats::kPmSamples.name.data();
inline constexpr const char* kPmStatSamplesDropped = stats::kPmSamplesDropped.name.data();
inline constexpr const char* kPmStatSamplesInvalid = stats::kPmSamplesInvalid.name.data();
inline constexpr const char* kPmStatOverflows = stats::kPmOverflows.name.data();
inline constexpr const char* kPmStatDecodeErrors = stats::kPmDecodeErrors.name.data();
inline constexpr const char* kPmStatPrivileges = stats::kPmDisabledPrivileges.name.data();
inline constexpr const char* kPmStatHardwareBusy = stats::kPmDisabledHardwareBusy.name.data();
inline constexpr const char* kPmStatUnsupported = stats::kPmDisabledUnsupported.name.data();
inline constexpr const char* kPmStatMultiplePasses = stats::kPmDisabledMultiplePasses.name.data();
inline constexpr const char* kPmStatOtherError = stats::kPmDisabledError.name.data();
inline constexpr const char* kPmStatLibraryMismatch = stats::kPmDisabledLibraryMismatch.name.data();
inline constexpr const char* kPmStatClockRemapped = stats::kPmClockRemapped.name.data();
// Samples much longer than the interval (the first one after start spans the time before
// the counters ran and reads zero) would smear zeros over kernels: dropped and counted.
inline constexpr const char* kPmStatSamplesTooLong = stats::kPmSamplesTooLong.name.data();
// While sampling, each sample starts where the previous one ended. A later start means the
// hardware buffer had no room for them (the decoder fell behind; with KEEP_OLDEST CUPTI also
// sets `overflow`) or, in the KEEP_LATEST mode used before, that they were overwritten
// unflagged: counted as one gap and its length, as data loss.
inline constexpr const char* kPmStatGaps = stats::kPmGaps.name.data();
inline constexpr const char* kPmStatGapNs = stats::kPmGapNs.name.data();
// Time the worker spent decoding and evaluating samples (its CPU cost, roughly), and the two
// parts of it: CUPTI's decode of the raw records (cuptiPmSamplingDecodeData), and the
// metric evaluation (cuptiProfilerHostEvaluateToGpuValues calls only).
inline constexpr const char* kPmStatDecodeBusyUs = stats::kPmDecodeBusyUs.name.data();
inline constexpr const char* kPmStatDecodeDataUs = stats::kPmDecodeDataUs.name.data();
inline constexpr const char* kPmStatEvaluateUs = stats::kPmEvaluateUs.name.data();
// Re-initialising the counter data image after each decode (cuptiPmSamplingCounterData-
// ImageInitialize), which costs in proportion to the image's capacity, not to its samples.
inline constexpr const char* kPmStatImageResetUs = stats::kPmImageResetUs.name.data();
// A full hardware buffer (KEEP_OLDEST) takes no more records until sampling is restarted:
// the controller stops and starts it again after draining; the time between is a gap.
inline constexpr const char* kPmStatRestarts = stats::kPmRestarts.name.data();
// A drain stopped by its time budget with samples left (data loss: they may be overwritten or
// dropped), and devices where sampling stopped because the decoder could not keep up.
inline constexpr const char* kPmStatDecodeCutShort = stats::kPmDecodesCutShort.name.data();
inline constexpr const char* kPmStatOverloaded = stats::kPmDisabledDecoderOverloaded.name.data();
// Time spent setting devices up, in µs: in all (initialize, prepare, enable, start), and
// the two parts that dominate it: PrepareDevice (chip, counter availability, host object,
// configuration image, pass count) and EnableDevice (enable, SetConfig, counter data image).
// Setup runs on the thread that created the context, so this is time added to that thread.
inline constexpr const char* kPmStatSetupUs = stats::kPmSetupUs.name.data();
inline constexpr const char* kPmStatSetupPrepareUs = stats::kPmSetupPrepareUs.name.data();
inline constexpr const char* kPmStatSetupEnableUs = stats::kPmSetupEnableUs.name.data();
// Raw samples (WARPSCOPE_PM_EVALUATE=offline/both): counter data images written, their
// bytes, and time reading sample times from images (GetCounterDataInfo, GetSampleInfo), µs.
inline constexpr const char* kPmStatRawImages = stats::kPmRawImages.name.data();
inline constexpr const char* kPmStatRawImageBytes = stats::kPmRawImageBytes.name.data();
inline constexpr const char* kPmStatSampleInfoUs = stats::kPmSampleInfoUs.name.data();
inline constexpr const char* kPmStatRawImagesDropped = stats::kPmRawImagesDropped.name.data();

// Where the controller's output goes: the session's TraceWriter in libwarpscope, a fake in
// tests.
class PmRecordSink {
 public:
  virtual ~PmRecordSink() = default;
  virtual bool Write(const PmMetricSetRecord& record) = 0;
  virtual bool Write(const PmSampleRecord& record) = 0;
  virtual bool Write(const PmCounterDataRecord& record) = 0;
  virtual void AddToCounter(std::string_view name, uint64_t delta, Severity severity) = 0;
  // A counter of the stats table, with its severity.
  void AddToCounter(const StatDef& stat, uint64_t delta) {
    AddToCounter(stat.name, delta, stat.severity);
  }
  // One line on stderr plus a Notice in the trace. Messages come without the "warpscope: "
  // prefix; the sink adds it.
  virtual void Report(Severity severity, std::string_view message) = 0;
};

// The trace clock and the two clocks CUPTI may use, read at (nearly) the same instant.
struct PmClockReadings {
  uint64_t trace_ns = 0;
  uint64_t realtime_ns = 0;
  uint64_t monotonic_ns = 0;
};
using PmClockReader = std::function<PmClockReadings()>;
PmClockReadings ReadSystemClocks(uint64_t trace_now_ns);

class PmSamplingController {
 public:
  // With `worker_thread`, decoding runs on the controller's own thread (every
  // poll_interval_ms); without it, only when Poll() is called (tests).
  PmSamplingController(PmSamplingApi& api, PmRecordSink& sink, PmSamplingConfig config,
                       PmClockReader clocks, bool worker_thread = true);
  ~PmSamplingController();  // Shutdown()
  PmSamplingController(const PmSamplingController&) = delete;
  PmSamplingController& operator=(const PmSamplingController&) = delete;

  // A context was created on `device` (called from CUPTI's context-created callback, on the
  // thread that creates the context, before it can launch anything). The device is set up
  // here and now (prepare, one-pass check, enable, and start when a capture window is open),
  // so sampling covers the first kernel. Setting up on the decode thread instead raced with
  // the program: a program that ended while that setup ran was killed by SIGSEGV inside
  // libnvperf_host (seen on the H200 in every run of a short program).
  void OnDevice(uint32_t device);
  // The last context on `device` is being destroyed (the CUDA runtime's teardown runs before
  // our atexit handler): stop, final decode and disable while the context still exists;
  // sampling on a device whose context is gone crashed the process on the H200.
  void OnDeviceGone(uint32_t device);
  // Capture window edges.
  void StartCapture();
  void StopCapture();  // stop, final decode, join the decode thread
  // Process end: stop, final decode, disable every device, deinitialize. Idempotent.
  void Shutdown();
  // Decodes the sampling devices (the worker thread's body).
  void Poll();

  bool sampling(uint32_t device) const;
  bool disabled() const { return process_disabled_; }

 private:
  enum class DeviceState { kFailed, kEnabled, kSampling };
  struct Device {
    DeviceState state = DeviceState::kFailed;
    uint32_t device = 0;
    uint32_t metric_set_id = 0;
    bool overflow_reported = false;
    bool error_reported = false;
    bool gap_reported = false;
    uint64_t last_end = 0;  // CUPTI time of the previous sample's end; 0 after a start
    uint32_t overloaded_polls = 0;  // periodic drains in a row cut short by their budget
    bool stopped_for_good = false;  // the decoder could not keep up: no restart
    bool final_cut_reported = false;
    PmCounterDataRecord raw;  // usable samples of the current image (raw modes)
  };

  void Fail(uint32_t device, const PmResult& result, std::string_view step);  // mu_ held
  void SetupLocked(uint32_t device);        // SetupDeviceLocked, timed      mu_ held
  void SetupDeviceLocked(uint32_t device);                                    // mu_ held
  void StartSamplingLocked(Device& d);  // Start; on failure FailDeviceLocked   mu_ held
  // One line and a counter (Fail), then the device is off for good.             mu_ held
  void FailDeviceLocked(Device& d, const PmResult& r, std::string_view step);
  // Drains every sampling device; after an overflow restarts sampling only when
  // `allow_restart` (the periodic poll) and a window is open.
  void DecodeLocked(bool allow_restart);                                      // mu_ held
  // One device's drain, up to `deadline`; decode times and samples add to `totals`.
  struct DrainOutcome {
    bool overflowed = false;  // samples were lost: restart sampling
    bool cut_short = false;   // the deadline came before the buffer was empty
  };
  DrainOutcome DrainLocked(uint32_t device, Device& d, bool allow_restart,
                           std::chrono::steady_clock::time_point deadline,
                           PmDecodeResult& totals);                             // mu_ held
  // Counts and reports a drain cut short; true when the device's sampling stopped for good.
  bool CutShortLocked(uint32_t device, Device& d, bool allow_restart);        // mu_ held
  void RestartLocked(Device& d);                                              // mu_ held
  void HandleSample(Device& d, uint32_t index, uint64_t start, uint64_t end, const double* v,
                    size_t n);
  void WriteImage(Device& d, std::span<const uint8_t> image);  // mu_ held
  void StartThreadLocked();
  void StopThread();  // mu_ not held

  PmSamplingApi& api_;
  PmRecordSink& sink_;
  const PmSamplingConfig config_;
  PmClockReader clocks_;

  mutable std::mutex mu_;
  std::map<uint32_t, Device> devices_;
  const bool worker_thread_;
  bool initialized_ = false;
  bool process_disabled_ = false;  // Initialize failed: nothing more to do
  bool capture_active_ = false;
  bool shut_down_ = false;

  // Timestamp mapping, decided on the first sample: 0 when CUPTI already uses the trace clock.
  bool clock_decided_ = false;
  int64_t clock_offset_ns_ = 0;
  PmSampleRecord scratch_;

  std::thread thread_;
  std::condition_variable wake_;
  bool stop_thread_ = false;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_CONTROLLER_H_
