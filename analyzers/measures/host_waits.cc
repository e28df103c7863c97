// Host waits (host_waits.h): synchronize calls, synchronizations and blocking copies.
#include "analyzers/measures/host_waits.h"

#include <unordered_map>
#include <unordered_set>

namespace warpscope {

bool IsSynchronizeCall(std::string_view name) {
  return name.find("Synchronize") != std::string_view::npos;
}

std::vector<HostWait> FindHostWaits(const TraceModel& model, std::optional<uint32_t> device) {
  std::vector<HostWait> waits;
  std::unordered_set<uint32_t> sync_calls;  // correlation ids of synchronize calls
  std::unordered_map<uint32_t, const ApiCallEvent*> copy_calls;
  for (const MemcpyEvent& copy : model.memcpys) copy_calls.emplace(copy.correlation_id, nullptr);
  for (const ApiCallEvent& api : model.api_calls) {
    if (IsSynchronizeCall(api.name)) {
      sync_calls.insert(api.correlation_id);
      waits.push_back({api.start_ns, api.end_ns(), api.thread_id, api.correlation_id,
                       std::string(api.name), nullptr});
    }
    auto it = copy_calls.find(api.correlation_id);
    // The runtime call, not the driver call it made, is what the program wrote.
    if (it != copy_calls.end() && (it->second == nullptr || api.domain == v1::API_DOMAIN_RUNTIME)) {
      it->second = &api;
    }
  }
  for (const SyncEvent& sync : model.syncs) {
    if (sync.thread_id == 0 || sync.kind == v1::SYNC_KIND_STREAM_WAIT_EVENT) continue;
    // The API call that made it is the wait as the program wrote it.
    if (sync.correlation_id != 0 && sync_calls.count(sync.correlation_id) != 0) continue;
    waits.push_back({sync.start_ns, sync.end_ns(), sync.thread_id, sync.correlation_id,
                     std::string(SyncKindName(sync.kind)) + " synchronization", nullptr});
  }
  for (const MemcpyEvent& copy : model.memcpys) {
    if (device.has_value() && copy.device_id != *device) continue;
    if (copy.end_ns() < copy.start_ns) continue;  // corrupt end (counted by the model)
    const ApiCallEvent* api = copy_calls[copy.correlation_id];
    if (api == nullptr || api->end_ns() < copy.end_ns()) continue;
    waits.push_back({api->start_ns, api->end_ns(), api->thread_id, api->correlation_id,
                     std::string(api->name), &copy});
  }
  return waits;
}

const CallSiteGroup& AddBlockedTime(const TraceModel& model, const HostWait& wait,
                                    CallSiteGroups* sites) {
  return sites->Add(model, wait.correlation_id, wait.label, wait.duration_ns());
}

}  // namespace warpscope
