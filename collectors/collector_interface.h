// The interface between the injection session and its collectors (CUPTI callbacks, activity
// tracing, the NVTX capture range, PM sampling, PC sampling): lifecycle and callback hooks,
// the services a collector may use, and what the session's one explicit list of collectors
// (libinject/collector_registry.h) holds for each. CUPTI-free.
#ifndef WARPSCOPE_COLLECTORS_COLLECTOR_INTERFACE_H_
#define WARPSCOPE_COLLECTORS_COLLECTOR_INTERFACE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proto/writer/trace_records.h"

namespace warpscope {

struct ActivityOptions;  // collectors/activity/activity_controller.h
class SessionListener;
class TraceWriter;

// The parts of the session's settings that its always-on collectors start from (the
// optional ones read their own WARPSCOPE_* variables through GetConfig).
struct CollectorOptions {
  bool profiler_api_callbacks = false;  // capture range cudaProfilerApi
  bool nvtx_callbacks = false;          // capture range nvtx
  // The NVTX range that opens capture windows (capture range nvtx), written by the NVTX
  // collector when its window closes; domain "" = the default domain.
  std::string nvtx_range_name;
  std::string nvtx_range_domain;
  // Flight recorder with trace kind `alloc`: the live memory blocks are kept
  // (ProcessLiveBlocks) for the out-of-memory dump.
  bool live_blocks = false;
};

// What the session lends a collector. Valid from OnSessionStart until OnShutdown returns;
// writer() only once the trace is open (not for kBeforeTrace collectors' OnSessionStart).
class SessionServices {
 public:
  virtual ~SessionServices() = default;
  // The trace being written; collectors write records and counters through it.
  virtual TraceWriter& writer() = 0;
  // Now, in the trace's clock domain (the clock CUPTI timestamps use too), absolute ns.
  virtual uint64_t NowNs() const = 0;
  // Value of a WARPSCOPE_* environment variable as the process saw it at start ("" if unset).
  virtual std::string GetConfig(std::string_view env_name) const = 0;
  // One `warpscope:` line on stderr (respecting WARPSCOPE_QUIET/LOG_LEVEL) plus a Notice
  // packet in the trace.
  virtual void Report(Severity severity, std::string_view source, std::string_view message) = 0;
  // One `warpscope:` line on stderr at error level, for a problem that stops the session
  // before its trace exists.
  virtual void ReportStartError(std::string_view message) = 0;
  // The always-on collectors' settings.
  virtual const CollectorOptions& options() const = 0;
  virtual const ActivityOptions& activity_options() const = 0;
  // Where the CUPTI callbacks collector sends every callback: the session, which acts on the
  // capture-range triggers and forwards the resource callbacks to each collector.
  // A CUDA allocation failed for want of memory. Called inside the failing call's callback:
  // cheap, never throws; the session dumps (flight recorder) or flushes later, on its thread.
  virtual void OnOutOfMemory() {}
  virtual SessionListener& callback_target() = 0;
};

// When the session starts a collector, and what its refusal means.
enum class CollectorStage {
  // Before the trace file exists (the CUPTI subscription: when another CUPTI client holds
  // it, no file is created). Refusal: the session does not run.
  kBeforeTrace,
  // Right after the trace opened, before the optional collectors. Refusal: the trace is
  // closed and the session does not run.
  kRequired,
  // After the required ones, when switched on. Refusal: that collector takes no part.
  kOptional,
};

// Hooks a collector receives, in the order of the registry. All but name and OnSessionStart
// are optional; all are called from CUPTI callback threads or the session's own thread, never
// concurrently for the same collector unless noted. They must not throw (the session catches,
// logs one line and disables the collector).
class SessionListener {
 public:
  virtual ~SessionListener() = default;
  virtual std::string_view name() const = 0;

  // In the collector's stage (CollectorStage); kRequired and kOptional collectors start after
  // the CUPTI subscription, before any activity kind is enabled and before cuInit returns.
  // Return false to take no further part (say why with services.Report).
  virtual bool OnSessionStart(SessionServices& services) = 0;
  // Every collector started; `optional_running` of the kOptional ones took part.
  virtual void OnCollectorsStarted(size_t /*optional_running*/) {}
  // The session gave up starting after this collector had started (a later stage refused):
  // undo what OnSessionStart did. Called in reverse registry order.
  virtual void OnStartAbandoned() {}

  // Resource callbacks, forwarded from the session's single CUPTI subscriber. `cu_context`
  // is a CUcontext, `cubin` points at the module's cubin (valid only during the call).
  virtual void OnContextCreated(void* /*cu_context*/, uint32_t /*context_id*/,
                                uint32_t /*device_id*/) {}
  virtual void OnContextDestroying(void* /*cu_context*/, uint32_t /*context_id*/) {}
  // After every collector's OnContextDestroying, still inside CUPTI's callback: the last
  // moment the context's records can be flushed (cudart may destroy it before atexit).
  virtual void AfterContextDestroying(void* /*cu_context*/, uint32_t /*context_id*/) {}
  // Module callbacks are enabled only when at least one optional collector started (they may
  // cost host memory in programs that load many modules).
  virtual void OnModuleLoaded(void* /*cu_context*/, uint64_t /*module_id*/,
                              const void* /*cubin*/, size_t /*cubin_size*/) {}

  // Driver-API and NVTX callbacks that trigger capture windows (cuProfilerStart/Stop; pushes
  // and pops of NVTX ranges, `os_tid` the calling thread, domain "" = the default domain).
  // The callbacks collector sends them to the session, which drives its capture window.
  virtual void OnProfilerApi(bool /*start*/) {}
  virtual void OnNvtxPush(uint32_t /*os_tid*/, std::string_view /*name*/,
                          std::string_view /*domain*/) {}
  virtual void OnNvtxPop(uint32_t /*os_tid*/, std::string_view /*domain*/) {}

  // A device seen for the first time, on the session's own thread (never inside a CUPTI
  // callback, so CUDA may be called).
  virtual void OnNewDevice(uint32_t /*device*/) {}

  // A capture window opens: OnCaptureOpening before the session writes the edge record
  // (activity kinds go on here), OnCaptureStart after it. `nvtx_thread` and `nvtx_depth`
  // are where the NVTX range that opened it was pushed (trigger NVTX only).
  virtual void OnCaptureOpening(const CaptureWindowEdgeRecord& /*edge*/, uint64_t /*nvtx_thread*/,
                                uint32_t /*nvtx_depth*/) {}
  // A capture window closes: OnCaptureClosing before the session writes the edge record
  // (activity kinds go off, the NVTX range's own record is written), OnCaptureStop after.
  virtual void OnCaptureClosing(const CaptureWindowEdgeRecord& /*edge*/) {}
  // A capture window opened or closed (also called once at start with window 1 when the
  // whole run is captured). Timestamps are absolute, in the trace clock.
  virtual void OnCaptureStart(uint32_t /*window_id*/, uint64_t /*timestamp_ns*/) {}
  virtual void OnCaptureStop(uint32_t /*window_id*/, uint64_t /*timestamp_ns*/) {}

  // Periodic (about every WARPSCOPE_FLUSH_INTERVAL_MS) from the session's flush thread.
  virtual void OnFlush() {}
  // Process exit, signal or detach: drain, write what is left. The writer is still open.
  virtual void OnShutdown() {}
  // In the child after fork(): the parent's threads are gone; ignore every later callback
  // and touch nothing.
  virtual void OnForkChild() {}
};

// A collector the core can run: its factory, its stage and its switch. The session creates
// it when the environment variable `enable_env` (e.g. "WARPSCOPE_PM_SAMPLING") is set to a
// true value (1, true, yes, on), or always when `enable_env` is empty.
using CollectorFactory = std::unique_ptr<SessionListener> (*)();

struct CollectorRegistration {
  const char* name;        // "pm_sampling"
  const char* enable_env;  // "WARPSCOPE_PM_SAMPLING"; "" = always on
  CollectorFactory factory;
  CollectorStage stage = CollectorStage::kOptional;
  // Kernel records must be on before the collector starts and stay on, capture windows or
  // not: CUPTI refuses to enable them once PC sampling is enabled on a context
  // (CUPTI_ERROR_NOT_COMPATIBLE).
  bool kernel_records_throughout = false;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_COLLECTOR_INTERFACE_H_
