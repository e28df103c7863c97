// The interface between the injection session and optional collectors (PM sampling, PC
// sampling, ...): lifecycle hooks, the services a collector may use, and what the session's
// one explicit list of collectors (libinject/collector_registry.h) holds for each. CUPTI-free.
#ifndef WARPSCOPE_COLLECTORS_COLLECTOR_INTERFACE_H_
#define WARPSCOPE_COLLECTORS_COLLECTOR_INTERFACE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proto/writer/trace_records.h"

namespace warpscope {

class TraceWriter;

// What the session lends a collector. Valid from OnSessionStart until OnShutdown returns.
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
};

// Hooks a collector receives. All are optional; all are called from CUPTI callback threads
// or the session's own thread, never concurrently for the same collector unless noted. They
// must not throw (the session catches, logs one line and disables the collector).
class SessionListener {
 public:
  virtual ~SessionListener() = default;
  virtual std::string_view name() const = 0;

  // After CUPTI subscription, before any activity kind is enabled and before cuInit returns.
  // Return false to take no further part (say why with services.Report).
  virtual bool OnSessionStart(SessionServices& services) = 0;

  // Resource callbacks, forwarded from the session's single CUPTI subscriber. `cu_context`
  // is a CUcontext, `cubin` points at the module's cubin (valid only during the call).
  virtual void OnContextCreated(void* /*cu_context*/, uint32_t /*context_id*/,
                                uint32_t /*device_id*/) {}
  virtual void OnContextDestroying(void* /*cu_context*/, uint32_t /*context_id*/) {}
  // Module callbacks are enabled only when at least one collector started (they may cost
  // host memory in programs that load many modules).
  virtual void OnModuleLoaded(void* /*cu_context*/, uint64_t /*module_id*/,
                              const void* /*cubin*/, size_t /*cubin_size*/) {}

  // A capture window opened or closed (also called once at start with window 1 when the
  // whole run is captured). Timestamps are absolute, in the trace clock.
  virtual void OnCaptureStart(uint32_t /*window_id*/, uint64_t /*timestamp_ns*/) {}
  virtual void OnCaptureStop(uint32_t /*window_id*/, uint64_t /*timestamp_ns*/) {}

  // Periodic (about every WARPSCOPE_FLUSH_INTERVAL_MS) from the session's flush thread.
  virtual void OnFlush() {}
  // Process exit, signal or detach: drain, write what is left. The writer is still open.
  virtual void OnShutdown() {}
};

// A collector the core can run: its factory and its switch. The session creates it when the
// environment variable `enable_env` (e.g. "WARPSCOPE_PM_SAMPLING") is set to a true value
// (1, true, yes, on), or always when `enable_env` is empty.
using CollectorFactory = std::unique_ptr<SessionListener> (*)();

struct CollectorRegistration {
  const char* name;        // "pm_sampling"
  const char* enable_env;  // "WARPSCOPE_PM_SAMPLING"
  CollectorFactory factory;
  // Kernel records must be on before the collector starts and stay on, capture windows or
  // not: CUPTI refuses to enable them once PC sampling is enabled on a context
  // (CUPTI_ERROR_NOT_COMPATIBLE).
  bool kernel_records_throughout = false;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_COLLECTOR_INTERFACE_H_
