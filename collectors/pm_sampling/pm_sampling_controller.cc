// PM sampling controller. Lifecycle per device (docs/cupti_notes.md §3):
//   OnDevice (inside the context-created callback, on the thread creating the context):
//     Initialize (once) -> PrepareDevice (chip, availability, host object, config image,
//     pass count: refuse != 1) -> EnableDevice (enable, time-based trigger, counter data
//     image) -> PmMetricSetRecord -> Start when a capture window is open
//   StartCapture: Start on each enabled device; the worker decodes every poll_interval_ms
//   StopCapture: Stop -> final decode
//   Shutdown: StopCapture -> join the worker -> DisableDevice (disable, host deinit)
//     -> Deinitialize
// Every failure is one `warpscope:` line plus a pm_sampling.* counter; tracing goes on.
#include "collectors/pm_sampling/pm_sampling_controller.h"

#include <algorithm>

#include <pthread.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace warpscope {
namespace {

constexpr int64_t kSameClockWindowNs = 60'000'000'000;  // 60 s

int64_t AbsDiff(uint64_t a, uint64_t b) {
  return a > b ? static_cast<int64_t>(a - b) : static_cast<int64_t>(b - a);
}

uint64_t MicrosecondsSince(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - t0)
                                   .count());
}

uint64_t ReadClock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

PmClockReadings ReadSystemClocks(uint64_t trace_now_ns) {
  PmClockReadings r;
  r.trace_ns = trace_now_ns;
  r.realtime_ns = ReadClock(CLOCK_REALTIME);
  r.monotonic_ns = ReadClock(CLOCK_MONOTONIC);
  return r;
}

PmSamplingController::PmSamplingController(PmSamplingApi& api, PmRecordSink& sink,
                                           PmSamplingConfig config, PmClockReader clocks,
                                           bool worker_thread)
    : api_(api),
      sink_(sink),
      config_(std::move(config)),
      clocks_(std::move(clocks)),
      worker_thread_(worker_thread) {}

PmSamplingController::~PmSamplingController() { Shutdown(); }

bool PmSamplingController::sampling(uint32_t device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(device);
  return it != devices_.end() && it->second.state == DeviceState::kSampling;
}

void PmSamplingController::Fail(uint32_t device, const PmResult& result, std::string_view step) {
  const StatDef* counter = &stats::kPmDisabledError;
  std::string advice;
  switch (result.kind) {
    case PmErrorKind::kInsufficientPrivileges:
      counter = &stats::kPmDisabledPrivileges;
      advice =
          "GPU performance counters are restricted to admin users; load the driver with "
          "NVreg_RestrictProfilingToAdminUsers=0 or run as root";
      break;
    case PmErrorKind::kHardwareBusy:
      counter = &stats::kPmDisabledHardwareBusy;
      advice =
          "another profiler (DCGM profiling, Nsight) holds the counters; pause it or run "
          "without WARPSCOPE_PM_SAMPLING";
      break;
    case PmErrorKind::kUnsupported:
      counter = &stats::kPmDisabledUnsupported;
      advice =
          "this device or configuration does not support PM sampling (vGPU, MIG, "
          "confidential computing, or a metric unknown on this chip)";
      break;
    default:
      advice = "see the CUPTI error";
      break;
  }
  sink_.AddToCounter(*counter, 1);
  std::string line = "PM sampling off on device " + std::to_string(device) + ": " +
                     std::string(step) + " failed (" + result.message + "); " + advice +
                     "; tracing goes on";
  sink_.Report(Severity::kError, line);
}

void PmSamplingController::OnDevice(uint32_t device) {
  std::lock_guard<std::mutex> lock(mu_);
  SetupLocked(device);
  StartThreadLocked();
}

void PmSamplingController::SetupLocked(uint32_t device) {
  if (process_disabled_ || shut_down_ || devices_.count(device) != 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  SetupDeviceLocked(device);
  sink_.AddToCounter(stats::kPmSetupUs, MicrosecondsSince(t0));
}

void PmSamplingController::SetupDeviceLocked(uint32_t device) {
  Device& d = devices_[device];
  d.device = device;
  d.state = DeviceState::kFailed;
  if (!initialized_) {
    PmResult r = api_.Initialize();
    if (!r.ok()) {
      Fail(device, r, "cuptiProfilerInitialize");
      process_disabled_ = true;
      return;
    }
    initialized_ = true;
  }
  PmDeviceSettings settings;
  settings.device_index = device;
  settings.metrics = config_.metrics;
  settings.interval_ns = config_.interval_ns;
  settings.hardware_buffer_bytes = config_.hardware_buffer_bytes;
  settings.max_samples_per_decode = DecodeBatchFor(config_);
  settings.evaluate = config_.evaluation != PmEvaluation::kOffline;
  settings.keep_raw = config_.evaluation != PmEvaluation::kProcess;
  settings.image_headroom_samples = 2 * SamplesPerPoll(config_);
  std::string chip;
  std::string availability;
  size_t passes = 0;
  auto t0 = std::chrono::steady_clock::now();
  PmResult r = api_.PrepareDevice(settings, &chip, &availability, &passes);
  sink_.AddToCounter(stats::kPmSetupPrepareUs, MicrosecondsSince(t0));
  if (!r.ok()) {
    Fail(device, r, "configuring the metric set");
    api_.DisableDevice(device);
    return;
  }
  if (passes != 1) {
    sink_.AddToCounter(stats::kPmDisabledMultiplePasses, 1);
    sink_.Report(Severity::kError,
                 "PM sampling off on device " + std::to_string(device) + ": the metric set needs " +
                     std::to_string(passes) + " passes on " + chip +
                     " and PM sampling can only collect one-pass sets; use the default set or "
                     "fewer metrics in WARPSCOPE_PM_METRICS; tracing goes on");
    api_.DisableDevice(device);
    return;
  }
  t0 = std::chrono::steady_clock::now();
  r = api_.EnableDevice(device);
  sink_.AddToCounter(stats::kPmSetupEnableUs, MicrosecondsSince(t0));
  if (!r.ok()) {
    Fail(device, r, "cuptiPmSamplingEnable/SetConfig");
    api_.DisableDevice(device);
    return;
  }
  d.state = DeviceState::kEnabled;
  d.metric_set_id = device + 1;
  PmMetricSetRecord set;
  set.id = d.metric_set_id;
  set.device_id = device;
  set.metric_names = config_.metrics;
  set.interval_ns = config_.interval_ns;
  if (settings.keep_raw) {
    set.chip_name = chip;
    set.counter_availability = std::move(availability);
  }
  d.raw.metric_set_id = d.metric_set_id;
  sink_.Write(set);
  if (capture_active_) StartSamplingLocked(d);
}

void PmSamplingController::StartSamplingLocked(Device& d) {
  PmResult r = api_.Start(d.device);
  if (!r.ok()) {
    FailDeviceLocked(d, r, "cuptiPmSamplingStart");
    return;
  }
  d.state = DeviceState::kSampling;
  d.last_end = 0;
}

void PmSamplingController::FailDeviceLocked(Device& d, const PmResult& r, std::string_view step) {
  Fail(d.device, r, step);
  d.state = DeviceState::kFailed;
  api_.DisableDevice(d.device);
}

void PmSamplingController::OnDeviceGone(uint32_t device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(device);
  if (it == devices_.end()) return;
  if (it->second.state == DeviceState::kSampling) {
    PmResult r = api_.Stop(device);
    if (!r.ok()) sink_.AddToCounter(stats::kPmDecodeErrors, 1);
    DecodeLocked(/*allow_restart=*/false);  // this device's last samples (others as usual)
  }
  if (it->second.state != DeviceState::kFailed) api_.DisableDevice(device);
  devices_.erase(it);  // a later context on the device is set up afresh
}

void PmSamplingController::StartCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_ || capture_active_) return;
  capture_active_ = true;
  for (auto& [device, d] : devices_) {
    if (d.state == DeviceState::kEnabled && !d.stopped_for_good) StartSamplingLocked(d);
  }
  StartThreadLocked();
}

void PmSamplingController::StopCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!capture_active_) return;
  capture_active_ = false;
  for (auto& [device, d] : devices_) {
    if (d.state != DeviceState::kSampling) continue;
    PmResult r = api_.Stop(device);
    if (!r.ok()) {
      sink_.AddToCounter(stats::kPmDecodeErrors, 1);
      sink_.Report(Severity::kError, "PM sampling: cuptiPmSamplingStop failed on device " +
                                         std::to_string(device) + " (" + r.message + ")");
    }
  }
  DecodeLocked(/*allow_restart=*/false);  // what the hardware buffer still holds
  for (auto& [device, d] : devices_) {
    if (d.state == DeviceState::kSampling) d.state = DeviceState::kEnabled;
  }
}

void PmSamplingController::Shutdown() {
  StopCapture();
  StopThread();
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& [device, d] : devices_) {
    if (d.state != DeviceState::kFailed) api_.DisableDevice(device);
    d.state = DeviceState::kFailed;
  }
  if (initialized_) api_.Deinitialize();
  initialized_ = false;
}

void PmSamplingController::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  DecodeLocked(/*allow_restart=*/true);
}

void PmSamplingController::DecodeLocked(bool allow_restart) {
  // Decoding holds mu_, which the program's own threads need at context teardown and exit:
  // every drain has a time budget. A periodic poll that cannot drain within its budget means
  // the decoder falls behind the interval; at 50 us on the H200 it then spun on many cores
  // and held the program's exit for tens of seconds. After overloaded_polls_limit such polls
  // in a row sampling stops on that device, with one line.
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(allow_restart ? config_.decode_budget_ms
                                              : config_.final_decode_budget_ms);
  PmDecodeResult totals;
  for (auto& [device, d] : devices_) {
    if (d.state != DeviceState::kSampling) continue;
    const DrainOutcome drained = DrainLocked(device, d, allow_restart, deadline, totals);
    if (drained.cut_short) {
      if (CutShortLocked(device, d, allow_restart)) continue;  // stopped for good
    } else if (allow_restart) {
      d.overloaded_polls = 0;
    }
    // Only while a window is open: the final drains after Stop (window closed, device gone)
    // must not start sampling again.
    if (drained.overflowed && allow_restart && capture_active_ &&
        d.state == DeviceState::kSampling) {
      RestartLocked(d);
    }
  }
  if (totals.samples > 0) sink_.AddToCounter(stats::kPmSamples, totals.samples);
  if (totals.decode_ns >= 1000) {
    sink_.AddToCounter(stats::kPmDecodeDataUs, totals.decode_ns / 1000);
  }
  if (totals.evaluate_ns >= 1000) {
    sink_.AddToCounter(stats::kPmEvaluateUs, totals.evaluate_ns / 1000);
  }
  if (totals.reset_ns >= 1000) {
    sink_.AddToCounter(stats::kPmImageResetUs, totals.reset_ns / 1000);
  }
  if (totals.info_ns >= 1000) sink_.AddToCounter(stats::kPmSampleInfoUs, totals.info_ns / 1000);
}

PmSamplingController::DrainOutcome PmSamplingController::DrainLocked(
    uint32_t device, Device& d, bool allow_restart,
    std::chrono::steady_clock::time_point deadline, PmDecodeResult& totals) {
  Device* dev = &d;
  const PmSampleVisitor visitor = [this, dev](uint32_t index, uint64_t start, uint64_t end,
                                              const double* v, size_t n) {
    HandleSample(*dev, index, start, end, v, n);
  };
  const PmImageVisitor image_visitor = [this, dev](std::span<const uint8_t> image) {
    WriteImage(*dev, image);
  };
  // Drain: the counter data image holds max_samples_per_decode samples at a time.
  DrainOutcome outcome;
  for (int round = 0; round < 1024; ++round) {
    PmDecodeResult result;
    PmResult r = api_.Decode(device, visitor, image_visitor, /*flush=*/!allow_restart, &result);
    totals.samples += result.samples;
    totals.decode_ns += result.decode_ns;
    totals.evaluate_ns += result.evaluate_ns;
    totals.reset_ns += result.reset_ns;
    totals.info_ns += result.info_ns;
    if (result.overflow || r.kind == PmErrorKind::kOutOfMemory) {
      outcome.overflowed = true;
      sink_.AddToCounter(stats::kPmOverflows, 1);
      if (!d.overflow_reported) {
        d.overflow_reported = true;
        sink_.Report(Severity::kDataLoss,
                     "PM sampling: the hardware buffer overflowed on device " +
                         std::to_string(device) +
                         "; samples were lost (raise WARPSCOPE_PM_BUFFER or "
                         "WARPSCOPE_PM_INTERVAL)");
      }
    }
    if (!r.ok() && r.kind != PmErrorKind::kOutOfMemory) {
      sink_.AddToCounter(stats::kPmDecodeErrors, 1);
      if (!d.error_reported) {
        d.error_reported = true;
        sink_.Report(Severity::kError, "PM sampling: decoding failed on device " +
                                           std::to_string(device) + " (" + r.message +
                                           "); later samples may be missing");
      }
      break;
    }
    if (!result.more) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      outcome.cut_short = true;
      break;
    }
  }
  return outcome;
}

bool PmSamplingController::CutShortLocked(uint32_t device, Device& d, bool allow_restart) {
  sink_.AddToCounter(stats::kPmDecodesCutShort, 1);
  if (allow_restart && ++d.overloaded_polls >= config_.overloaded_polls_limit) {
    sink_.AddToCounter(stats::kPmDisabledDecoderOverloaded, 1);
    sink_.Report(Severity::kError,
                 "PM sampling off on device " + std::to_string(device) +
                     ": decoding cannot keep up with one sample every " +
                     std::to_string(config_.interval_ns / 1000) +
                     " us on this machine; use a longer --pm-interval "
                     "(WARPSCOPE_PM_INTERVAL); tracing goes on");
    api_.Stop(device);
    d.state = DeviceState::kEnabled;
    d.stopped_for_good = true;
    return true;
  }
  if (!allow_restart && !d.final_cut_reported) {
    d.final_cut_reported = true;
    sink_.Report(Severity::kDataLoss,
                 "PM sampling: decoding the last samples of device " + std::to_string(device) +
                     " stopped after " + std::to_string(config_.final_decode_budget_ms) +
                     " ms; the samples still in the hardware buffer were dropped");
  }
  return false;
}

void PmSamplingController::WriteImage(Device& d, std::span<const uint8_t> image) {
  if (d.raw.sample_index.empty()) return;  // nothing usable in it
  d.raw.image = image;
  if (sink_.Write(d.raw)) {
    sink_.AddToCounter(stats::kPmRawImages, 1);
    sink_.AddToCounter(stats::kPmRawImageBytes, image.size());
  } else {
    sink_.AddToCounter(stats::kPmRawImagesDropped, 1);
    sink_.AddToCounter(stats::kPmSamplesDropped, d.raw.sample_index.size());
  }
  d.raw.image = {};
  d.raw.sample_index.clear();
  d.raw.start_ns.clear();
  d.raw.end_ns.clear();
}

void PmSamplingController::RestartLocked(Device& d) {
  // The samples already in the image were drained above; stop and start again so the
  // hardware buffer takes records again. last_end is kept, so the time lost shows as a gap
  // on the first sample after the restart (which spans the pause and is then discarded as
  // overlong).
  PmResult r = api_.Stop(d.device);
  if (r.ok()) r = api_.Start(d.device);
  if (!r.ok()) {
    FailDeviceLocked(d, r, "restarting after an overflow");
    return;
  }
  sink_.AddToCounter(stats::kPmRestarts, 1);
}

void PmSamplingController::HandleSample(Device& d, uint32_t index, uint64_t start, uint64_t end,
                                        const double* values, size_t count) {
  if ((values != nullptr && count != config_.metrics.size()) || end <= start) {
    sink_.AddToCounter(stats::kPmSamplesInvalid, 1);
    return;
  }
  // Time without usable samples since the previous one: a late start, plus, after a restart,
  // the overlong first sample that spans the pause (it is discarded below).
  const bool too_long = end - start > 4 * config_.interval_ns;
  uint64_t lost = 0;
  if (d.last_end != 0) {
    if (start > d.last_end + config_.interval_ns / 2) lost += start - d.last_end;
    const uint64_t from = std::max(start, d.last_end);
    if (too_long && end > from) lost += end - from;
  }
  if (lost > 0) {
    sink_.AddToCounter(stats::kPmGaps, 1);
    sink_.AddToCounter(stats::kPmGapNs, lost);
    if (!d.gap_reported) {
      d.gap_reported = true;
      sink_.Report(Severity::kDataLoss,
                   "PM sampling fell behind on device " + std::to_string(d.device) + ": " +
                       std::to_string(lost / 1000) +
                       " us without samples (the decoder fell behind the hardware buffer; "
                       "raise WARPSCOPE_PM_INTERVAL or WARPSCOPE_PM_BUFFER); pm_sampling.gap_ns "
                       "counts the time lost");
    }
  }
  if (end > d.last_end) d.last_end = end;
  if (too_long) {
    sink_.AddToCounter(stats::kPmSamplesTooLong, 1);
    return;
  }
  if (!clock_decided_) {
    clock_decided_ = true;
    const PmClockReadings now = clocks_ ? clocks_() : PmClockReadings{};
    if (AbsDiff(start, now.trace_ns) > kSameClockWindowNs) {
      const char* name = nullptr;
      if (AbsDiff(start, now.realtime_ns) <= kSameClockWindowNs) {
        clock_offset_ns_ =
            static_cast<int64_t>(now.trace_ns) - static_cast<int64_t>(now.realtime_ns);
        name = "CLOCK_REALTIME";
      } else if (AbsDiff(start, now.monotonic_ns) <= kSameClockWindowNs) {
        clock_offset_ns_ =
            static_cast<int64_t>(now.trace_ns) - static_cast<int64_t>(now.monotonic_ns);
        name = "CLOCK_MONOTONIC";
      }
      if (name != nullptr) {
        sink_.AddToCounter(stats::kPmClockRemapped, 1);
        sink_.Report(Severity::kInfo, std::string("PM sample timestamps are in ") + name +
                                          ", not the trace clock; mapped onto it");
      } else {
        sink_.Report(Severity::kError,
                     "PM sample timestamps match no known clock; written as CUPTI "
                     "reports them, so sample-to-kernel attribution may be wrong");
      }
    }
  }
  const uint64_t mapped_start = static_cast<uint64_t>(static_cast<int64_t>(start) + clock_offset_ns_);
  const uint64_t mapped_end = static_cast<uint64_t>(static_cast<int64_t>(end) + clock_offset_ns_);
  if (config_.evaluation != PmEvaluation::kProcess) {
    d.raw.sample_index.push_back(index);
    d.raw.start_ns.push_back(mapped_start);
    d.raw.end_ns.push_back(mapped_end);
  }
  if (values == nullptr) return;
  scratch_.metric_set_id = d.metric_set_id;
  scratch_.start_ns = mapped_start;
  scratch_.end_ns = mapped_end;
  scratch_.values.assign(values, values + count);
  if (!sink_.Write(scratch_)) sink_.AddToCounter(stats::kPmSamplesDropped, 1);
}

void PmSamplingController::StartThreadLocked() {
  if (!worker_thread_ || thread_.joinable() || shut_down_) return;
  stop_thread_ = false;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "ws-pm-sampling");
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_thread_) {
      wake_.wait_for(lock, std::chrono::milliseconds(config_.poll_interval_ms),
                     [this] { return stop_thread_; });
      if (stop_thread_) break;
      const auto t0 = std::chrono::steady_clock::now();
      DecodeLocked(/*allow_restart=*/true);
      if (const uint64_t busy = MicrosecondsSince(t0); busy > 0) {
        sink_.AddToCounter(stats::kPmDecodeBusyUs, busy);
      }
    }
  });
}

void PmSamplingController::StopThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_thread_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace warpscope
