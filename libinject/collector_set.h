// CollectorSet: the session's collectors. It switches on the registry's entries (always, or by
// their WARPSCOPE_* variable), creates and starts them stage by stage, and passes every hook
// to each running collector in registry order; one that throws is disabled and the others go
// on. The session is the only user; tests drive it with fake collectors.
#ifndef WARPSCOPE_LIBINJECT_COLLECTOR_SET_H_
#define WARPSCOPE_LIBINJECT_COLLECTOR_SET_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "collectors/collector_interface.h"

namespace warpscope {

class CollectorSet final : public SessionListener {
 public:
  // Reads an environment variable (nullptr when unset).
  using GetEnv = std::function<const char*(const char*)>;
  // One `warpscope:` line (a switch whose value is not a boolean).
  using LogLine = std::function<void(std::string_view)>;
  // A collector failed and was disabled: say `message` and count it against `name`.
  using OnFailure = std::function<void(std::string_view name, std::string_view message)>;

  CollectorSet(std::span<const CollectorRegistration> registry, OnFailure on_failure);

  // Switches on the collectors with a variable set to a true value; a value that is not a
  // boolean is one line through `log` and leaves that collector off. Collectors without a
  // variable are on from the start.
  void Select(const GetEnv& env, const LogLine& log);
  // Whether a collector switched on needs kernel records throughout.
  bool kernel_records_throughout() const;
  // Creates and starts, in registry order, the collectors of `stage` that are on. Returns
  // false when one of a kBeforeTrace or kRequired stage refused or threw (the session then
  // gives up: AbandonStart).
  bool Start(CollectorStage stage, SessionServices& services);
  // After the last stage: OnCollectorsStarted to each, with the number of optional ones.
  void FinishStart();
  // OnStartAbandoned to each running collector, in reverse registry order.
  void AbandonStart();
  // Names of the running collectors, in registry order.
  std::vector<std::string_view> running() const;

  // SessionListener: each hook goes to every running collector, in registry order.
  std::string_view name() const override { return "collectors"; }
  bool OnSessionStart(SessionServices&) override { return true; }  // see Start
  void OnCollectorsStarted(size_t optional_running) override;
  void OnContextCreated(void* ctx, uint32_t context_id, uint32_t device_id) override;
  void OnContextDestroying(void* ctx, uint32_t context_id) override;
  void AfterContextDestroying(void* ctx, uint32_t context_id) override;
  void OnModuleLoaded(void* ctx, uint64_t module_id, const void* cubin, size_t size) override;
  void OnProfilerApi(bool start) override;
  void OnNvtxPush(uint32_t os_tid, std::string_view name, std::string_view domain) override;
  void OnNvtxPop(uint32_t os_tid, std::string_view domain) override;
  void OnNewDevice(uint32_t device) override;
  void OnCaptureOpening(const CaptureWindowEdgeRecord& edge, uint64_t nvtx_thread,
                        uint32_t nvtx_depth) override;
  void OnCaptureClosing(const CaptureWindowEdgeRecord& edge) override;
  void OnCaptureStart(uint32_t window_id, uint64_t timestamp_ns) override;
  void OnCaptureStop(uint32_t window_id, uint64_t timestamp_ns) override;
  void OnFlush() override;
  void OnShutdown() override;
  void OnForkChild() override;

 private:
  struct Entry {
    const CollectorRegistration* registration;
    bool on;
    std::unique_ptr<SessionListener> listener;  // null until started, or once disabled
  };
  template <typename Fn>
  void ForEach(Fn&& fn);

  std::vector<Entry> entries_;  // one per registration, never resized after construction
  OnFailure on_failure_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_COLLECTOR_SET_H_
