// ActivityController: the activity side of the tracer. It hands CUPTI its record buffers
// (pooled), translates each completed buffer into one TraceWriter::Batch, turns the
// configured activity kinds on and off at capture window edges, flushes, moves dropped-record
// counts into the trace and publishes its counters. CUPTI-free: it drives an ActivityApi, so
// unit tests run it against a fake. One per process in libwarpscope (CUPTI's activity state
// is global).
#ifndef WARPSCOPE_COLLECTORS_ACTIVITY_ACTIVITY_CONTROLLER_H_
#define WARPSCOPE_COLLECTORS_ACTIVITY_ACTIVITY_CONTROLLER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectors/activity/activity_api.h"
#include "collectors/activity/trace_kinds.h"
#include "proto/writer/stats_table.h"

namespace warpscope {

class ActivityTranslator;
class RecordSink;
class TraceWriter;
struct DeviceRecord;

// The kinds of warpscope's own overhead records (OverheadEvent.kind_id): a flush call, and the
// translation of one completed buffer (inside a flush, or on CUPTI's thread).
inline constexpr const char* kFlushOverheadKind = "WARPSCOPE_FLUSH";
inline constexpr const char* kBufferOverheadKind = "WARPSCOPE_BUFFER";

struct ActivityOptions {
  TraceKinds kinds;
  size_t buffer_bytes = 2 << 20;
  size_t device_buffer_bytes = 0;   // 0 = CUPTI's default (3.2 MB)
  uint32_t device_buffer_pool = 0;  // 0 = CUPTI's default
  std::string suppress_nvtx_name;   // the NVTX capture range (session writes it itself)
  std::string suppress_nvtx_domain;
  bool monotonic_clock = false;    // register a CLOCK_MONOTONIC timestamp callback
  bool filter_trivial_api = true;  // trivial runtime queries neither recorded nor written
  // Kernel records on from the start, not only inside capture windows: CUPTI refuses to
  // enable CONCURRENT_KERNEL once PC sampling is enabled on a context
  // (CUPTI_ERROR_NOT_COMPATIBLE, seen on the H200), so with PC sampling and a window that
  // opens later the trace would hold no kernels at all.
  bool kernels_always_on = false;
  // Capture windows open later than the start (--delay, -c): switch every window kind on and
  // off once in Init, so that CUPTI's first-time attach happens then, in a process that has
  // loaded few modules, rather than when the first window opens (docs/record.md).
  bool attach_early = false;
  // Every allocation, free and pool record also goes to ProcessLiveBlocks() (the flight
  // recorder's out-of-memory dump).
  bool live_blocks = false;
};

// How long enabling one activity kind took, at the last SetEnabled(true).
struct KindEnableTime {
  ActivityKind kind;
  uint64_t ns = 0;
};

class ActivityController final : public ActivityBufferHandler {
 public:
  explicit ActivityController(ActivityApi& api);
  ~ActivityController() override;  // unmaps the pooled buffers
  ActivityController(const ActivityController&) = delete;
  ActivityController& operator=(const ActivityController&) = delete;

  // Registers the timestamp and buffer callbacks, sets buffer attributes and the thread id
  // type, and enables the always-on kinds (CONTEXT, DEVICE; CONCURRENT_KERNEL with
  // kernels_always_on). Returns false with a one-line *error.
  bool Init(const ActivityOptions& options, TraceWriter* writer, std::string* error);
  // Enables (window open) or disables (window closed) the configured kinds. On failure the
  // other kinds are still tried; *error gets the first failure when it was empty.
  bool SetEnabled(bool enabled, std::string* error);
  // The time each kind took at the last SetEnabled(true), in the order they were enabled.
  std::vector<KindEnableTime> last_enable_times() const;
  // Launch calls of the runtime API are recorded elsewhere (the launch log, from callbacks):
  // from the next SetEnabled(true) on, CUPTI is told not to record them as activity, and any
  // such record that still arrives is counted and not written.
  void SetLaunchCallsElsewhere(bool on);
  // Every other runtime API call is recorded elsewhere too (the launch log): from the next
  // SetEnabled(true) on, RUNTIME activity is not enabled at all.
  void SetRuntimeCallsElsewhere(bool on);
  // Synchronize calls are logged from callbacks (SetSyncCallsFromCallbacks): SYNCHRONIZATION
  // records are not enabled from the next window on.
  void SetSyncCallsElsewhere(bool on);
  // The time Init spent on attach_early (0 without it).
  uint64_t early_attach_ns() const { return early_attach_ns_; }
  // FlushAll(0) or FlushAll(forced); then moves the dropped-record count to the trace. While
  // the kinds are enabled, the flush's time (its buffers' translation included) goes into the
  // trace as an overhead record of kind kFlushOverheadKind on the flushing thread: CUPTI can
  // hold the program's CUDA calls meanwhile, and `advise` must tell that from the program.
  void Flush(bool forced);
  // Disables everything, forced flush, counters; buffers completed later are ignored.
  void Shutdown();
  // After fork() in the child: ignore every later callback, touch nothing.
  void AbandonAfterFork();
  // Stats: records translated, buffers, drops; written into the writer's counters.
  void PublishCounters();
  // Reads the opt-in and reserved shared memory per block of `device` (DEVICE records lack
  // them); later DEVICE records of it carry them. Call from the session's own thread only.
  void QueryDeviceSharedMemoryLimits(uint32_t device);

  // ActivityBufferHandler (CUPTI's threads).
  void BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) override;
  void BufferCompleted(uint8_t* buffer, size_t size, size_t valid_bytes) override;

 private:
  uint8_t* AllocateBuffer();
  void ReleaseBuffer(uint8_t* buffer);
  // Fills the pool up to a few buffers, faulted in (on the calling thread: Init, Flush).
  void TopUpSpareBuffers();
  void CollectDropped();
  void RecordFlush(uint64_t start_ns, uint64_t end_ns);
  // With the API filter on: tells CUPTI not to record TrivialRuntimeApis() (after each
  // enable of kRuntime), so they cost the program nothing.
  void LeaveOutTrivialRuntimeApis();
  // With launch calls recorded elsewhere: tells CUPTI not to record RuntimeLaunchApis().
  void LeaveOutRuntimeLaunchApis();
  // Enables (or disables) one window kind, timing an enable; failures of optional kinds
  // (INTERNAL_LAUNCH_API, which not every CUPTI records) are ignored.
  bool SetKindEnabled(ActivityKind kind, bool enabled, std::string* error);
  void RecordOverhead(RecordSink& sink, const char* kind, uint64_t start_ns, uint64_t end_ns);
  void DeviceFixup(DeviceRecord* record);

  ActivityApi& api_;
  ActivityOptions options_;
  TraceWriter* writer_ = nullptr;

  std::atomic<bool> accepting_{false};  // completed buffers are translated only while true
  std::atomic<bool> abandoned_{false};
  std::atomic<bool> enabled_{false};
  std::atomic<bool> runtime_api_selection_works_{true};  // cuptiActivityEnableRuntimeApi
  std::atomic<bool> launch_calls_elsewhere_{false};
  std::atomic<bool> runtime_calls_elsewhere_{false};
  std::atomic<bool> sync_calls_elsewhere_{false};
  uint64_t early_attach_ns_ = 0;
  mutable std::mutex enable_times_mu_;
  std::vector<KindEnableTime> enable_times_;

  std::mutex translate_mu_;
  std::unique_ptr<ActivityTranslator> translator_;  // guarded by translate_mu_

  std::atomic<uint64_t> buffers_{0};
  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> buffer_bytes_used_max_{0};
  std::atomic<uint64_t> dropped_total_{0};

  // Buffers come from mmap and go back to a small pool (see AllocateBuffer).
  std::mutex pool_mu_;
  std::vector<uint8_t*> pool_;  // buffers of options_.buffer_bytes
  std::atomic<uint64_t> buffers_allocated_{0};

  // Per device, queried from the session's thread.
  std::mutex device_mu_;
  std::map<uint32_t, SharedMemoryLimits> device_smem_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_ACTIVITY_ACTIVITY_CONTROLLER_H_
