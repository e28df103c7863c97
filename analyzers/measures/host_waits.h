// Host waits: the calls that held a host thread until the GPU was done (synchronize calls,
// synchronizations CUPTI recorded without such a call, copies the calling thread waited
// for), found one way for `advise` (its wait rules) and `summary` (its syncs report).
#ifndef WARPSCOPE_ANALYZERS_MEASURES_HOST_WAITS_H_
#define WARPSCOPE_ANALYZERS_MEASURES_HOST_WAITS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/measures/call_sites.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

struct HostWait {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t thread_id = 0;
  // Of the API call (or SyncEvent): joins the wait to its stack (TraceModel::StackOfCall).
  uint32_t correlation_id = 0;
  std::string label;                  // the API call's name, or "stream synchronization"
  const MemcpyEvent* copy = nullptr;  // the copy waited for, for blocking copies
  uint64_t duration_ns() const { return end_ns - start_ns; }
  // A copy from the device the host waited for: a blocking read (`.item()`, `.cpu()`).
  bool is_read() const { return copy != nullptr && copy->copy_kind == v1::COPY_KIND_DTOH; }
};

// cudaStreamSynchronize, cudaDeviceSynchronize, cuCtxSynchronize, ...
bool IsSynchronizeCall(std::string_view name);

// Every host wait of `model`, in no particular order: each API call named *Synchronize*;
// each SyncEvent of a host thread that no such call made (a stream waiting for an event is
// the GPU waiting, left out); each copy whose API call returned after the copy ended (on
// `device` only, when set). A call in both the runtime and the driver API counts once, as
// the runtime call the program wrote.
std::vector<HostWait> FindHostWaits(const TraceModel& model, std::optional<uint32_t> device);

// Host time blocked, by call site: adds `wait`'s whole duration (the host thread held in the
// call, whether or not the GPU was busy meanwhile) to the site of its call, under its label.
// The one measure behind `summary --report syncs` and the blocked time `advise` puts under a
// line.
// Returns the site's group.
const CallSiteGroup& AddBlockedTime(const TraceModel& model, const HostWait& wait,
                                    CallSiteGroups* sites);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_HOST_WAITS_H_
