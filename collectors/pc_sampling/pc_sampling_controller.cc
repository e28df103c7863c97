// PC sampling controller. Lifecycle per context (docs/cupti_notes.md §4):
//   OnContextCreated (in the CUPTI callback): Enable -> GetNumStallReasons/GetStallReasons
//     -> PcStallReasons record (once per device) -> SetConfigurationAttribute (period,
//     buffers, CONTINUOUS, ENABLE_START_STOP_CONTROL, PARSED, our data buffer)
//     -> Start if a capture window is open
//   capture start: Start; the worker drains (GetData while remainingNumPcs > 0) every
//     drain_interval_ms, and module loads drain too
//   capture stop: Stop -> drain
//   OnModuleLoaded (in the CUPTI callback): cuptiGetCubinCrc -> CubinImage (once per CRC)
//     -> drain if sampling
//   OnContextDestroying: Stop -> drain -> Disable -> what CUPTI left in the configured buffer
//   Shutdown: capture stop -> join the worker -> Disable what is left (and write its data)
// Calls made on threads that are not the application's (the drain thread, capture edges from
// the session's watcher, process end) first make the context current on that thread
// (ScopedBinding): CUPTI's per-context calls act on it there as on the application's threads.
// Every failure is one `warpscope:` line plus a pc_sampling.* counter; tracing goes on.
#include "collectors/pc_sampling/pc_sampling_controller.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "collectors/pc_sampling/pc_sample_translation.h"

namespace warpscope {

PcSamplingController::PcSamplingController(PcSamplingApi& api, PcRecordSink& sink,
                                           PcSamplingConfig config, bool worker_thread)
    : api_(api), sink_(sink), config_(config), worker_thread_(worker_thread) {}

PcSamplingController::~PcSamplingController() { Shutdown(); }

bool PcSamplingController::sampling(PcContext ctx) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = contexts_.find(ctx);
  return it != contexts_.end() && it->second.sampling;
}

bool PcSamplingController::enabled(PcContext ctx) const {
  std::lock_guard<std::mutex> lock(mu_);
  return contexts_.count(ctx) != 0;
}

void PcSamplingController::FailLocked(PcContext ctx, uint32_t device, const PcResult& result,
                                      std::string_view step, bool enabled) {
  const StatDef* counter = &stats::kPcDisabledError;
  std::string advice;
  switch (result.kind) {
    case PcErrorKind::kInsufficientPrivileges:
      counter = &stats::kPcDisabledPrivileges;
      advice =
          "GPU profiling is restricted to admin users; load the driver with "
          "NVreg_RestrictProfilingToAdminUsers=0 or run as root";
      process_disabled_ = true;  // every other context would fail the same way
      break;
    case PcErrorKind::kBusy:
      counter = &stats::kPcDisabledBusy;
      advice = "one process per GPU can sample PCs (another warpscope run, Nsight Compute)";
      break;
    case PcErrorKind::kUnsupported:
      counter = &stats::kPcDisabledUnsupported;
      advice = "this device or configuration (vGPU, MIG, another profiler) has no PC sampling";
      break;
    default:
      advice = "see the CUPTI error";
      break;
  }
  // Disable waits for the context's teardown (or the session's end): called inside the
  // context-created callback after a failed Start, it left CUPTI in a state where the
  // program's next NVTX call crashed inside libcupti (H200, a second process on a GPU whose
  // PC sampler another process held).
  if (enabled) enabled_not_sampled_.push_back(ctx);
  sink_.AddToCounter(*counter, 1);
  sink_.Report(Severity::kError, "PC sampling off on device " + std::to_string(device) + ": " +
                                     std::string(step) + " failed (" + result.message + "); " +
                                     advice + "; tracing goes on");
}

void PcSamplingController::OnContextCreated(PcContext ctx, uint32_t context_id,
                                            uint32_t device_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (process_disabled_ || shut_down_ || contexts_.count(ctx) != 0) return;
  if (device_owner_.count(device_id) != 0) {
    sink_.AddToCounter(stats::kPcContextsRefused, 1);
    sink_.Report(Severity::kDataLoss,
                 "PC sampling: context " + std::to_string(context_id) + " on device " +
                     std::to_string(device_id) +
                     " is not sampled, CUPTI samples one context per device and context " +
                     std::to_string(contexts_[device_owner_[device_id]].context_id) +
                     " has it; its kernels have no stall reasons");
    return;
  }
  PcResult r = api_.Enable(ctx);
  if (!r.ok()) return FailLocked(ctx, device_id, r, "cuptiPCSamplingEnable", /*enabled=*/false);
  std::vector<PcStallReason> reasons;
  r = api_.GetStallReasons(ctx, &reasons);
  if (r.ok() && reasons.empty()) {
    r.kind = PcErrorKind::kUnsupported;
    r.message = "CUPTI reports no stall reasons";
  }
  if (!r.ok()) return FailLocked(ctx, device_id, r, "cuptiPCSamplingGetStallReasons", /*enabled=*/true);
  PcContextSettings settings;
  settings.period_exponent = config_.period_exponent;
  settings.hardware_buffer_bytes = PcHardwareBufferBytes(config_);
  settings.scratch_buffer_bytes = config_.scratch_buffer_bytes;
  settings.max_pcs_per_read = config_.max_pcs_per_read;
  settings.stall_reason_indices.reserve(reasons.size());
  for (const PcStallReason& reason : reasons) settings.stall_reason_indices.push_back(reason.index);
  r = api_.Configure(ctx, settings);
  if (!r.ok()) return FailLocked(ctx, device_id, r, "cuptiPCSamplingSetConfigurationAttribute", /*enabled=*/true);
  if (reasons_written_.insert(device_id).second) {
    sink_.Write(MakePcStallReasonsRecord(device_id, reasons));
  }
  Context& c = contexts_[ctx];
  c.context_id = context_id;
  c.device_id = device_id;
  device_owner_[device_id] = ctx;
  sink_.AddToCounter(stats::kPcContextsSampled, 1);
  if (capture_active_ && !StartLocked(ctx, c)) return;
  StartThreadLocked();
}

bool PcSamplingController::StartLocked(PcContext ctx, Context& c) {
  PcResult r = api_.Start(ctx);
  if (r.ok()) {
    c.sampling = true;
    return true;
  }
  const uint32_t device = c.device_id;
  device_owner_.erase(device);
  contexts_.erase(ctx);  // c is gone
  FailLocked(ctx, device, r, "cuptiPCSamplingStart", /*enabled=*/true);
  return false;
}

void PcSamplingController::StopLocked(PcContext ctx, Context& c) {
  if (!c.sampling) return;
  c.sampling = false;
  PcResult r = api_.Stop(ctx);
  if (!r.ok()) {
    sink_.AddToCounter(stats::kPcStartStopErrors, 1);
    sink_.Report(Severity::kError, "PC sampling: cuptiPCSamplingStop failed on device " +
                                       std::to_string(c.device_id) + " (" + r.message + ")");
  }
  DrainLocked(ctx, c);  // CUPTI: with start/stop control, drain after every Stop
}

void PcSamplingController::OnContextDestroying(PcContext ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  DisableFailedLocked(ctx);
  auto it = contexts_.find(ctx);
  if (it == contexts_.end()) return;
  StopLocked(ctx, it->second);
  DisableLocked(ctx, it->second);
  device_owner_.erase(it->second.device_id);
  contexts_.erase(it);
}

void PcSamplingController::OnModuleLoaded(PcContext ctx, const void* cubin, size_t cubin_size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = contexts_.find(ctx);
  if (it == contexts_.end()) return;
  if (cubin != nullptr && cubin_size != 0) WriteCubinLocked(it->second.device_id, cubin, cubin_size);
  if (it->second.sampling) DrainLocked(ctx, it->second);
}

void PcSamplingController::WriteCubinLocked(uint32_t device_id, const void* cubin, size_t size) {
  uint64_t crc = 0;
  const PcResult r = api_.CubinCrc(cubin, size, &crc);
  if (!r.ok()) {
    sink_.AddToCounter(stats::kPcCubinsLost, 1);
    return;
  }
  if (cubins_written_.count(crc) != 0) return;
  if (!sink_.Write(CubinImageRecord{crc, device_id, cubin, size})) {
    sink_.AddToCounter(stats::kPcCubinsLost, 1);
    return;  // not remembered: a later load of the same module tries again
  }
  cubins_written_.insert(crc);
  sink_.AddToCounter(stats::kPcCubins, 1);
  sink_.AddToCounter(stats::kPcCubinBytes, size);
}

void PcSamplingController::StartCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_ || capture_active_) return;
  capture_active_ = true;
  std::vector<PcContext> ready;
  for (auto& [ctx, c] : contexts_) ready.push_back(ctx);
  for (PcContext ctx : ready) {
    ScopedBinding bound(api_, ctx);
    StartLocked(ctx, contexts_[ctx]);
  }
  StartThreadLocked();
}

void PcSamplingController::StopCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!capture_active_) return;
  capture_active_ = false;
  for (auto& [ctx, c] : contexts_) {
    ScopedBinding bound(api_, ctx);
    StopLocked(ctx, c);
  }
}

void PcSamplingController::Shutdown() {
  StopCapture();
  StopThread();
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& [ctx, c] : contexts_) {
    ScopedBinding bound(api_, ctx);
    DisableLocked(ctx, c);
  }
  contexts_.clear();
  while (!enabled_not_sampled_.empty()) DisableFailedLocked(enabled_not_sampled_.back());
  device_owner_.clear();
}

void PcSamplingController::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  DrainAllLocked();
}

void PcSamplingController::DrainAllLocked() {
  for (auto& [ctx, c] : contexts_) {
    if (!c.sampling) continue;
    ScopedBinding bound(api_, ctx);
    DrainLocked(ctx, c);
  }
}

void PcSamplingController::DrainLocked(PcContext ctx, Context& c) {
  uint32_t round = 0;
  for (; round < config_.max_rounds_per_drain; ++round) {
    PcResult r = api_.GetData(ctx, &raw_);
    const bool buffer_full = raw_.hardware_buffer_full || r.kind == PcErrorKind::kOutOfMemory;
    if (!r.ok() && !buffer_full) {
      sink_.AddToCounter(stats::kPcGetDataErrors, 1);
      if (!c.error_reported) {
        c.error_reported = true;
        sink_.Report(Severity::kError, "PC sampling: cuptiPCSamplingGetData failed on device " +
                                           std::to_string(c.device_id) + " (" + r.message +
                                           "); later samples may be missing");
      }
      return;
    }
    if (buffer_full) {
      raw_.hardware_buffer_full = true;
      sink_.AddToCounter(stats::kPcHardwareBufferFull, 1);
      if (!c.buffer_full_reported) {
        c.buffer_full_reported = true;
        sink_.Report(Severity::kDataLoss,
                     "PC sampling: the hardware buffer of device " + std::to_string(c.device_id) +
                         " filled up and samples were lost; raise WARPSCOPE_PC_BUFFER_MB or "
                         "WARPSCOPE_PC_PERIOD");
      }
    }
    WriteBatchLocked(c);
    // A full buffer yields no PC data; asking again at once would spin.
    if (raw_.remaining_num_pcs == 0 || buffer_full) return;
  }
  sink_.AddToCounter(stats::kPcDrainCapped, 1);
}

void PcSamplingController::DisableFailedLocked(PcContext ctx) {
  auto it = std::find(enabled_not_sampled_.begin(), enabled_not_sampled_.end(), ctx);
  if (it == enabled_not_sampled_.end()) return;
  enabled_not_sampled_.erase(it);
  api_.Disable(ctx, &raw_);  // nothing was sampled; anything CUPTI hands back is ignored
  raw_.Clear();
}

void PcSamplingController::DisableLocked(PcContext ctx, Context& c) {
  api_.Disable(ctx, &raw_);
  WriteBatchLocked(c);  // what CUPTI still held for the context
}

void PcSamplingController::WriteBatchLocked(Context& c) {
  if (raw_.pcs.empty() && raw_.total_samples == 0 && raw_.dropped_samples == 0 &&
      !raw_.hardware_buffer_full) {
    return;
  }
  const PcBatchIdentity identity{c.device_id, c.context_id, sink_.NowNs()};
  const uint64_t samples = TranslatePcBatch(
      raw_, identity, [this](std::string_view s) { return sink_.InternString(s); }, &record_);
  if (sink_.Write(record_)) {
    sink_.AddToCounter(stats::kPcBatches, 1);
    sink_.AddToCounter(stats::kPcRecords, record_.records.size());
    sink_.AddToCounter(stats::kPcSamples, samples);
  } else {
    sink_.AddToCounter(stats::kPcBatchesDropped, 1);
  }
  if (raw_.dropped_samples != 0) {
    sink_.AddToCounter(stats::kPcSamplesDropped, raw_.dropped_samples);
  }
}

void PcSamplingController::StartThreadLocked() {
  if (!worker_thread_ || thread_.joinable() || shut_down_) return;
  stop_thread_ = false;
  try {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "ws-pc-sampling");
      WorkerLoop();
    });
  } catch (...) {
    sink_.Report(Severity::kDataLoss,
                 "PC sampling: cannot start the drain thread; samples are read only when a "
                 "capture window closes, so the hardware buffer may overflow");
  }
}

void PcSamplingController::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_thread_) {
    wake_.wait_for(lock, std::chrono::milliseconds(config_.drain_interval_ms),
                   [this] { return stop_thread_; });
    if (stop_thread_) break;
    DrainAllLocked();
  }
}

void PcSamplingController::StopThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_thread_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace warpscope
