// Activity controller. Lifecycle (each step an ActivityApi call):
//   Init: RegisterMonotonicTimestampCallback (opt-in; before any kind is enabled) → device
//     buffer size and pool limit (when set) → system thread ids → the allocation source (trace
//     kind alloc) → RegisterCallbacks → enable
//     CONTEXT and DEVICE (and CONCURRENT_KERNEL with kernels_always_on)
//   each capture window: SetEnabled(true) enables the window kinds … SetEnabled(false)
//   periodically, from the session's thread: Flush(false) → FlushAll(0), its WARPSCOPE_FLUSH
//     overhead record, dropped records, spare buffers faulted in
//   on CUPTI's threads: BufferRequested → … → BufferCompleted → one TraceWriter::Batch
//   Shutdown: disable the window kinds, CONTEXT, DEVICE → FlushAll(forced) → dropped records
//     → counters → later buffers are ignored
#include "collectors/activity/activity_controller.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <optional>

#include "collectors/activity/activity_translator.h"
#include "collectors/common/record_sink.h"
#include "collectors/memory/live_blocks.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

// Activity buffers come from mmap and go back to a small pool: malloc would keep the freed
// 8 MB blocks in per-thread arenas (seen: +180 MB RSS in a PyTorch run), while pooled
// buffers stay bounded and already faulted in.
constexpr size_t kMaxPooledBuffers = 4;
// Buffers the session's thread keeps in the pool, faulted in, at start and after each flush.
// The program's thread that next writes a record after a flush takes a new buffer, and its
// wait grows with the buffer's size and more than doubles when the buffer is fresh (H200, 1.5
// ms steps: 2.8-3.1 ms from the pool and 15-17 ms fresh for 32 MB buffers; docs/record.md),
// so the fault-in happens here instead.
constexpr size_t kSpareBuffers = 2;

// The kinds a capture window turns on and off, in the order they are enabled. `runtime` and
// `sync`: whether RUNTIME and SYNCHRONIZATION records are among them (not when the launch log
// records those calls).
std::vector<ActivityKind> WindowKinds(const ActivityOptions& o, bool runtime, bool sync) {
  const TraceKinds& k = o.kinds;
  std::vector<ActivityKind> kinds;
  if (k.kernel && !o.kernels_always_on) kinds.push_back(ActivityKind::kConcurrentKernel);
  if (k.launch) kinds.push_back(ActivityKind::kInternalLaunchApi);
  if (k.memory) {
    kinds.push_back(ActivityKind::kMemcpy);
    kinds.push_back(ActivityKind::kMemcpy2);
    kinds.push_back(ActivityKind::kMemset);
  }
  if (k.alloc) {
    kinds.push_back(ActivityKind::kMemory2);
    kinds.push_back(ActivityKind::kMemoryPool);
  }
  if (k.runtime && runtime) kinds.push_back(ActivityKind::kRuntime);
  if (k.driver) kinds.push_back(ActivityKind::kDriver);
  if (k.nvtx) {
    kinds.push_back(ActivityKind::kMarker);  // MARKER before MARKER_DATA
    kinds.push_back(ActivityKind::kMarkerData);
  }
  if (k.sync && sync) kinds.push_back(ActivityKind::kSynchronization);
  if (k.overhead) kinds.push_back(ActivityKind::kOverhead);
  if (k.graph) kinds.push_back(ActivityKind::kGraphTrace);
  return kinds;
}

}  // namespace

ActivityController::ActivityController(ActivityApi& api) : api_(api) {}

ActivityController::~ActivityController() {
  for (uint8_t* buffer : pool_) munmap(buffer, options_.buffer_bytes);
}

bool ActivityController::Init(const ActivityOptions& options, TraceWriter* writer,
                              std::string* error) {
  options_ = options;
  writer_ = writer;
  {
    auto translator = std::make_unique<ActivityTranslator>(
        [this](bool runtime, uint32_t cbid) { return api_.CallbackName(runtime, cbid); },
        [this](DeviceRecord* r) { DeviceFixup(r); });
    translator->set_filter_trivial_api(options.filter_trivial_api);
    if (options.live_blocks) {
      translator->set_memory_observer(
          [](const MemoryRecord& r) { ProcessLiveBlocks().OnMemory(r); });
    }
    if (!options.suppress_nvtx_name.empty()) {
      translator->nvtx().SuppressRange(options.suppress_nvtx_name, options.suppress_nvtx_domain);
    }
    std::lock_guard<std::mutex> lock(translate_mu_);
    translator_ = std::move(translator);
  }
  // The timestamp callback must be registered before any kind is enabled. It costs about
  // 0.3 us per record on the H200 machine (docs/record.md), so it is opt-in.
  if (options.monotonic_clock) {
    ActivityResult r = api_.RegisterMonotonicTimestampCallback();
    if (!r.ok()) {
      *error = "warpscope: cuptiActivityRegisterTimestampCallback failed: " + api_.ErrorText(r);
      return false;
    }
  }
  if (options.device_buffer_bytes != 0) {
    ActivityResult r = api_.SetDeviceBufferSize(options.device_buffer_bytes);
    if (!r.ok()) {
      std::fprintf(stderr, "warpscope: cannot set the CUPTI device buffer size: %s\n",
                   api_.ErrorText(r).c_str());
    }
  }
  if (options.device_buffer_pool) api_.SetDeviceBufferPoolLimit(options.device_buffer_pool);
  api_.UseSystemThreadIds();
  // The library behind each allocation (NCCL, cuBLAS, PyTorch); a CUPTI without it records
  // allocations all the same.
  if (options.kinds.alloc) api_.EnableAllocationSource(true);
  ActivityResult r = api_.RegisterCallbacks(this);
  if (!r.ok()) {
    *error = "warpscope: cuptiActivityRegisterCallbacks failed: " + api_.ErrorText(r);
    return false;
  }
  accepting_.store(true, std::memory_order_release);
  TopUpSpareBuffers();
  api_.Enable(ActivityKind::kContext);
  api_.Enable(ActivityKind::kDevice);
  if (options.kinds.kernel && options.kernels_always_on) {
    // On failure the windows enable kernel records as usual.
    if (!api_.Enable(ActivityKind::kConcurrentKernel).ok()) options_.kernels_always_on = false;
  }
  if (options.attach_early) {
    // Nothing runs inside cuInit, so no record is made meanwhile; what CUPTI did to attach
    // stays done for the windows to come.
    const uint64_t start = api_.Now();
    std::string ignored;
    SetEnabled(true, &ignored);
    SetEnabled(false, &ignored);
    early_attach_ns_ = api_.Now() - start;
  }
  return true;
}

bool ActivityController::SetEnabled(bool enabled, std::string* error) {
  if (abandoned_.load()) return false;
  bool ok = true;
  std::vector<KindEnableTime> times;
  if (enabled) {
    std::lock_guard<std::mutex> lock(translate_mu_);
    translator_->set_launch_calls_elsewhere(launch_calls_elsewhere_.load());
  }
  // Disabling covers every kind, so that a kind enabled before the launch log took the
  // runtime calls over is turned off too.
  const bool runtime_records = !enabled || !runtime_calls_elsewhere_.load();
  const bool sync_records = !enabled || !sync_calls_elsewhere_.load();
  for (ActivityKind kind : WindowKinds(options_, runtime_records, sync_records)) {
    const uint64_t start = enabled ? api_.Now() : 0;
    ok = SetKindEnabled(kind, enabled, error) && ok;
    if (enabled) times.push_back({kind, api_.Now() - start});
  }
  if (enabled) {
    std::lock_guard<std::mutex> lock(enable_times_mu_);
    enable_times_ = std::move(times);
  }
  enabled_.store(enabled);
  return ok;
}

bool ActivityController::SetKindEnabled(ActivityKind kind, bool enabled, std::string* error) {
  ActivityResult r = enabled ? api_.Enable(kind) : api_.Disable(kind);
  if (r.ok() && enabled && kind == ActivityKind::kRuntime) {
    LeaveOutTrivialRuntimeApis();
    LeaveOutRuntimeLaunchApis();
  }
  if (r.ok() || kind == ActivityKind::kInternalLaunchApi) return true;
  if (error->empty()) {
    *error = std::string("warpscope: cannot ") + (enabled ? "enable" : "disable") +
             " CUPTI activity kind " + std::to_string(static_cast<int>(kind)) + ": " +
             api_.ErrorText(r);
  }
  return false;
}

std::vector<KindEnableTime> ActivityController::last_enable_times() const {
  std::lock_guard<std::mutex> lock(enable_times_mu_);
  return enable_times_;
}

void ActivityController::SetLaunchCallsElsewhere(bool on) { launch_calls_elsewhere_.store(on); }

void ActivityController::SetRuntimeCallsElsewhere(bool on) { runtime_calls_elsewhere_.store(on); }

void ActivityController::SetSyncCallsElsewhere(bool on) { sync_calls_elsewhere_.store(on); }

void ActivityController::LeaveOutRuntimeLaunchApis() {
  // A CUPTI that refuses leaves the translator to drop the records: the same trace, at
  // CUPTI's cost per launch.
  if (!launch_calls_elsewhere_.load() || !runtime_api_selection_works_) return;
  for (uint32_t cbid : RuntimeLaunchApis()) {
    if (!api_.EnableRuntimeApi(cbid, false).ok()) {
      runtime_api_selection_works_ = false;
      return;
    }
  }
}

void ActivityController::LeaveOutTrivialRuntimeApis() {
  // Enabling kRuntime records every runtime API again, so this follows each enable. A CUPTI
  // that refuses it leaves the translator's filter, which drops the records after CUPTI took
  // them: the same trace, at CUPTI's cost per call.
  if (!options_.filter_trivial_api || !runtime_api_selection_works_) return;
  for (uint32_t cbid : TrivialRuntimeApis()) {
    if (!api_.EnableRuntimeApi(cbid, false).ok()) {
      runtime_api_selection_works_ = false;
      return;
    }
  }
}

void ActivityController::Flush(bool forced) {
  if (abandoned_.load() || !accepting_.load()) return;
  const uint64_t start = api_.Now();
  api_.FlushAll(forced);
  if (enabled_.load()) RecordFlush(start, api_.Now());
  CollectDropped();
  TopUpSpareBuffers();
}

void ActivityController::RecordFlush(uint64_t start_ns, uint64_t end_ns) {
  if (writer_ == nullptr) return;
  BatchSink sink(*writer_);
  RecordOverhead(sink, kFlushOverheadKind, start_ns, end_ns);
}

void ActivityController::RecordOverhead(RecordSink& sink, const char* kind, uint64_t start_ns,
                                        uint64_t end_ns) {
  if (end_ns <= start_ns) return;
  const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  OverheadRecord r;
  r.kind_id = sink.InternString(kind);
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.thread_id = sink.InternThread(tid, tid);
  sink.Write(r);
}

void ActivityController::Shutdown() {
  if (abandoned_.load()) return;
  std::string ignored;
  if (enabled_.load()) SetEnabled(false, &ignored);
  api_.Disable(ActivityKind::kContext);
  api_.Disable(ActivityKind::kDevice);
  api_.FlushAll(/*forced=*/true);
  CollectDropped();
  PublishCounters();
  accepting_.store(false, std::memory_order_release);
}

void ActivityController::AbandonAfterFork() {
  abandoned_.store(true);
  accepting_.store(false);
}

void ActivityController::PublishCounters() {
  TranslatorCounters c;
  uint64_t unmatched = 0, open_dropped = 0, demangles = 0;
  {
    std::lock_guard<std::mutex> lock(translate_mu_);
    if (writer_ == nullptr || translator_ == nullptr) return;
    c = translator_->counters();
    unmatched = translator_->nvtx().unmatched_ends();
    open_dropped = translator_->nvtx().dropped_open() + translator_->nvtx().open_ranges();
    demangles = translator_->names().demangle_calls();
  }
  TraceWriter& w = *writer_;
  SetStat(w, stats::kActivityBuffers, buffers_.load());
  SetStat(w, stats::kActivityRecords, records_.load());
  SetStat(w, stats::kActivityKernels, c.kernels);
  SetStat(w, stats::kActivityMemcpys, c.memcpys);
  SetStat(w, stats::kActivityMemsets, c.memsets);
  SetStat(w, stats::kActivitySyncs, c.syncs);
  SetStat(w, stats::kActivityApiCalls, c.api_calls);
  SetStat(w, stats::kActivityApiCallsFiltered, c.api_calls_filtered);
  SetStat(w, stats::kActivityLaunchCallsLeftOut, c.launch_calls_elsewhere);
  SetStat(w, stats::kActivityInternalLaunches, c.internal_launches);
  SetStat(w, stats::kActivityBuffersAllocated, buffers_allocated_.load());
  SetStat(w, stats::kActivityNvtxMarkers, c.nvtx);
  SetStat(w, stats::kActivityKernelNamesDemangled, demangles);
  SetStat(w, stats::kActivityBufferHighWater, buffer_bytes_used_max_.load());
  SetStat(w, stats::kCuptiZeroTimestamps, c.zero_timestamps);
  SetStat(w, stats::kActivityUnknownKinds, c.unknown_kinds);
  SetStat(w, stats::kNvtxUnmatchedEnds, unmatched);
  SetStat(w, stats::kNvtxUnclosedRanges, open_dropped);
  SetStat(w, stats::kCuptiDroppedRecordsTotal, dropped_total_.load());
}

void ActivityController::QueryDeviceSharedMemoryLimits(uint32_t device) {
  std::optional<SharedMemoryLimits> limits = api_.QuerySharedMemoryLimits(device);
  if (!limits) return;
  std::lock_guard<std::mutex> lock(device_mu_);
  device_smem_[device] = *limits;
}

void ActivityController::BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = AllocateBuffer();  // page-aligned, so 8-byte aligned
  *size = *buffer ? options_.buffer_bytes : 0;
  *max_records = 0;
}

void ActivityController::BufferCompleted(uint8_t* buffer, size_t, size_t valid) {
  if (buffer == nullptr) return;
  if (valid > 0 && accepting_.load(std::memory_order_acquire) && !abandoned_.load()) {
    try {
      const uint64_t start = api_.Now();
      std::lock_guard<std::mutex> lock(translate_mu_);
      BatchSink sink(*writer_);
      const void* record = nullptr;
      uint64_t n = 0;
      while (api_.NextRecord(buffer, valid, &record)) {
        translator_->Translate(static_cast<const CUpti_Activity*>(record), sink);
        ++n;
      }
      // Not after the window closed (nor at shutdown): the trace's span stays the window's.
      if (enabled_.load()) RecordOverhead(sink, kBufferOverheadKind, start, api_.Now());
      records_.fetch_add(n, std::memory_order_relaxed);
      buffers_.fetch_add(1, std::memory_order_relaxed);
      uint64_t prev = buffer_bytes_used_max_.load();
      while (valid > prev && !buffer_bytes_used_max_.compare_exchange_weak(prev, valid)) {
      }
    } catch (...) {
      // Never let an exception into CUPTI; the records of this buffer are lost and counted.
      if (writer_) AddToStat(*writer_, stats::kActivityBuffersLost, 1);
    }
  }
  ReleaseBuffer(buffer);
}

uint8_t* ActivityController::AllocateBuffer() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      uint8_t* b = pool_.back();
      pool_.pop_back();
      return b;
    }
  }
  void* p = mmap(nullptr, options_.buffer_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  buffers_allocated_.fetch_add(1, std::memory_order_relaxed);
  return static_cast<uint8_t*>(p);
}

void ActivityController::TopUpSpareBuffers() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (pool_.size() >= kSpareBuffers) return;
    }
    void* p = mmap(nullptr, options_.buffer_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) return;
    buffers_allocated_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(pool_mu_);
    pool_.push_back(static_cast<uint8_t*>(p));
  }
}

void ActivityController::ReleaseBuffer(uint8_t* buffer) {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (pool_.size() < kMaxPooledBuffers) {
      pool_.push_back(buffer);
      return;
    }
  }
  munmap(buffer, options_.buffer_bytes);
}

void ActivityController::CollectDropped() {
  size_t dropped = 0;
  if (api_.GetNumDroppedRecords(&dropped).ok() && dropped > 0) {
    dropped_total_.fetch_add(dropped);
    if (writer_) AddToStat(*writer_, stats::kCuptiDroppedRecords, dropped);
  }
}

void ActivityController::DeviceFixup(DeviceRecord* r) {
  std::lock_guard<std::mutex> lock(device_mu_);
  auto it = device_smem_.find(r->id);
  if (it != device_smem_.end()) {
    r->max_shared_memory_per_block_optin = it->second.optin_bytes;
    r->reserved_shared_memory_per_block = it->second.reserved_bytes;
  }
}

}  // namespace warpscope
