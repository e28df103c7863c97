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

// What some of the counters (proto/writer/stats_table.h) say beyond their line in the table:
// - kPmSamplesTooLong: samples much longer than the interval (the first one after start spans
//   the time before the counters ran and reads zero) would smear zeros over kernels.
// - kPmGaps, kPmGapNs: while sampling, each sample starts where the previous one ended. A later
//   start means the hardware buffer had no room for them (the decoder fell behind; with
//   KEEP_OLDEST CUPTI also sets `overflow`) or, in the KEEP_LATEST mode used before, that they
//   were overwritten unflagged: counted as one gap and its length, as data loss.
// - kPmDecodeBusyUs, and its two parts kPmDecodeDataUs (CUPTI's decode of the raw records,
//   cuptiPmSamplingDecodeData) and kPmEvaluateUs (cuptiProfilerHostEvaluateToGpuValues calls
//   only): the decode thread's CPU cost, roughly.
// - kPmImageResetUs: re-initialising the counter data image after each decode
//   (cuptiPmSamplingCounterDataImageInitialize) costs in proportion to the image's capacity,
//   not to its samples.
// - kPmRestarts: a full hardware buffer (KEEP_OLDEST) takes no more records until sampling is
//   restarted: the controller stops and starts it again after draining; the time between is a
//   gap.
// - kPmDecodesCutShort: a drain stopped by its time budget with samples left (they may be
//   overwritten or dropped); kPmDisabledDecoderOverloaded: devices where sampling stopped
//   because the decoder could not keep up.
// - kPmSetupUs, and the two parts that dominate it: kPmSetupPrepareUs (chip, counter
//   availability, host object, configuration image, pass count) and kPmSetupEnableUs (enable,
//   SetConfig, counter data image). Setup runs on the thread that created the context, so this
//   is time added to that thread.
// - kPmRawImages, kPmRawImageBytes, kPmSampleInfoUs (WARPSCOPE_PM_EVALUATE=offline/both):
//   counter data images written, their bytes, and time reading sample times from images
//   (GetCounterDataInfo, GetSampleInfo).

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
