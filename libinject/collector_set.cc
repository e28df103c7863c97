// The session's collectors (see collector_set.h).
#include "libinject/collector_set.h"

#include <string>
#include <utility>

#include "libinject/config.h"
#include "proto/settings/setting_error.h"

namespace warpscope {

CollectorSet::CollectorSet(std::span<const CollectorRegistration> registry, OnFailure on_failure)
    : on_failure_(std::move(on_failure)) {
  entries_.reserve(registry.size());
  for (const CollectorRegistration& r : registry) {
    const bool always = r.enable_env == nullptr || r.enable_env[0] == '\0';
    entries_.push_back(Entry{&r, always && r.factory != nullptr, nullptr});
  }
}

void CollectorSet::Select(const GetEnv& env, const LogLine& log) {
  for (Entry& e : entries_) {
    const CollectorRegistration& r = *e.registration;
    if (r.enable_env == nullptr || r.enable_env[0] == '\0' || r.factory == nullptr) continue;
    const char* v = env(r.enable_env);
    bool on = false;
    std::string what;
    if (v && !ParseBool(v, &on, &what)) {
      log("warpscope: " + SettingError{r.enable_env, v, " is not " + what}.ForVariable() + "; " +
          r.name + " stays off");
      on = false;
    }
    e.on = on;
  }
}

bool CollectorSet::kernel_records_throughout() const {
  for (const Entry& e : entries_) {
    if (e.on && e.registration->kernel_records_throughout) return true;
  }
  return false;
}

bool CollectorSet::Start(CollectorStage stage, SessionServices& services) {
  bool all = true;
  for (Entry& e : entries_) {
    const CollectorRegistration& r = *e.registration;
    if (!e.on || r.stage != stage) continue;
    try {
      std::unique_ptr<SessionListener> l = r.factory();
      if (l && l->OnSessionStart(services)) {
        e.listener = std::move(l);
        continue;
      }
    } catch (...) {
      on_failure_(r.name, std::string("warpscope: collector '") + r.name +
                              "' failed to start and was disabled");
    }
    if (stage != CollectorStage::kOptional) all = false;
    if (!all) break;
  }
  return all;
}

void CollectorSet::FinishStart() {
  size_t optional = 0;
  for (const Entry& e : entries_) {
    optional += e.listener && e.registration->stage == CollectorStage::kOptional ? 1 : 0;
  }
  OnCollectorsStarted(optional);
}

void CollectorSet::AbandonStart() {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (!it->listener) continue;
    try {
      it->listener->OnStartAbandoned();
    } catch (...) {
      // Giving up already: nothing more to say.
    }
    it->listener.reset();
  }
}

std::vector<std::string_view> CollectorSet::running() const {
  std::vector<std::string_view> names;
  for (const Entry& e : entries_) {
    if (e.listener) names.push_back(e.registration->name);
  }
  return names;
}

template <typename Fn>
void CollectorSet::ForEach(Fn&& fn) {
  for (Entry& e : entries_) {
    if (!e.listener) continue;
    try {
      fn(*e.listener);
    } catch (...) {
      on_failure_(e.registration->name, "warpscope: collector '" +
                                            std::string(e.registration->name) +
                                            "' failed and was disabled");
      e.listener.reset();
    }
  }
}

void CollectorSet::OnCollectorsStarted(size_t optional_running) {
  ForEach([&](SessionListener& l) { l.OnCollectorsStarted(optional_running); });
}
void CollectorSet::OnContextCreated(void* ctx, uint32_t context_id, uint32_t device_id) {
  ForEach([&](SessionListener& l) { l.OnContextCreated(ctx, context_id, device_id); });
}
void CollectorSet::OnContextDestroying(void* ctx, uint32_t context_id) {
  ForEach([&](SessionListener& l) { l.OnContextDestroying(ctx, context_id); });
}
void CollectorSet::AfterContextDestroying(void* ctx, uint32_t context_id) {
  ForEach([&](SessionListener& l) { l.AfterContextDestroying(ctx, context_id); });
}
void CollectorSet::OnModuleLoaded(void* ctx, uint64_t module_id, const void* cubin, size_t size) {
  ForEach([&](SessionListener& l) { l.OnModuleLoaded(ctx, module_id, cubin, size); });
}
void CollectorSet::OnProfilerApi(bool start) {
  ForEach([&](SessionListener& l) { l.OnProfilerApi(start); });
}
void CollectorSet::OnNvtxPush(uint32_t os_tid, std::string_view name, std::string_view domain) {
  ForEach([&](SessionListener& l) { l.OnNvtxPush(os_tid, name, domain); });
}
void CollectorSet::OnNvtxPop(uint32_t os_tid, std::string_view domain) {
  ForEach([&](SessionListener& l) { l.OnNvtxPop(os_tid, domain); });
}
void CollectorSet::OnNewDevice(uint32_t device) {
  ForEach([&](SessionListener& l) { l.OnNewDevice(device); });
}
void CollectorSet::OnCaptureOpening(const CaptureWindowEdgeRecord& edge, uint64_t nvtx_thread,
                                    uint32_t nvtx_depth) {
  ForEach([&](SessionListener& l) { l.OnCaptureOpening(edge, nvtx_thread, nvtx_depth); });
}
void CollectorSet::OnCaptureClosing(const CaptureWindowEdgeRecord& edge) {
  ForEach([&](SessionListener& l) { l.OnCaptureClosing(edge); });
}
void CollectorSet::OnCaptureStart(uint32_t window_id, uint64_t timestamp_ns) {
  ForEach([&](SessionListener& l) { l.OnCaptureStart(window_id, timestamp_ns); });
}
void CollectorSet::OnCaptureStop(uint32_t window_id, uint64_t timestamp_ns) {
  ForEach([&](SessionListener& l) { l.OnCaptureStop(window_id, timestamp_ns); });
}
void CollectorSet::OnFlush() {
  ForEach([](SessionListener& l) { l.OnFlush(); });
}
void CollectorSet::OnShutdown() {
  ForEach([](SessionListener& l) { l.OnShutdown(); });
}
void CollectorSet::OnForkChild() {
  ForEach([](SessionListener& l) { l.OnForkChild(); });
}

}  // namespace warpscope
