// NcclCallTracker: NCCL's calls as NcclCallRecords. NCCL opens an NVTX range in its domain
// "NCCL" around each API call (ncclAllReduce, ncclGroupEnd, ncclCommInitRank, ...) and
// attaches a binary payload to most (the NVTX payload extension: communicator id, message
// size, reduction, root or peer, with layouts fixed by NCCL's schemas). The tracker keeps
// each thread's open NCCL calls, notes the kernel launches made inside them, and writes one
// record per call when it returns. CUPTI-free: the CUPTI callbacks hand it plain arguments.
#ifndef WARPSCOPE_COLLECTORS_NCCL_NCCL_CALLS_H_
#define WARPSCOPE_COLLECTORS_NCCL_NCCL_CALLS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "collectors/callbacks/cupti_callbacks.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

// NVTX's nvtxEventAttributes_t.payloadType for an extended (binary, schema-described)
// payload, whose payload.ullValue points at nvtxPayloadData_t records.
inline constexpr int32_t kNvtxPayloadTypeExt = static_cast<int32_t>(0xDFBD0009);
// nvtxPayloadData_t (nvToolsExtPayload.h): NCCL attaches one per event.
struct NvtxPayloadData {
  uint64_t schema_id;
  size_t size;
  const void* payload;
};

// What one NCCL payload says, decoded by its schema id (NCCL's static schema ids start at
// 1 << 24 and are listed in NCCL's nvtx.h; their layouts in nvtx_payload_schemas.h, the same
// from NCCL 2.19 to 2.30). Fields the payload does not carry keep these defaults.
struct NcclPayloadFields {
  std::string_view function;  // what the schema id says the call is, e.g. "ncclAllReduce"
  uint64_t comm_hash = 0;
  uint64_t bytes = 0;
  int32_t reduction_op = -1;
  int32_t root = -1;
  int32_t peer = -1;
  int32_t comm_size = 0;
  int32_t comm_rank = -1;
};

// Decodes a payload of `size` bytes at `data`. False (fields untouched) for a schema id NCCL
// does not define or a size that does not match its layout: a payload from a NCCL whose
// layouts differ is not read as garbage.
bool DecodeNcclPayload(uint64_t schema_id, const void* data, size_t size, NcclPayloadFields* out);

// Where finished calls go: the collector writes them into the trace (interning the name and
// the thread there).
using NcclCallWriter = std::function<void(const NcclCallRecord& record, std::string_view name,
                                          uint32_t os_tid)>;

class NcclCallTracker final : public NvtxDomainObserver {
 public:
  // `now` gives absolute ns in the trace's clock.
  NcclCallTracker(NcclCallWriter writer, std::function<uint64_t()> now);
  ~NcclCallTracker() override;
  NcclCallTracker(const NcclCallTracker&) = delete;
  NcclCallTracker& operator=(const NcclCallTracker&) = delete;

  // NVTX domain creation and string registration (any domain; only NCCL's are kept).
  void OnDomainCreated(const void* domain, std::string_view name) override;
  void OnStringRegistered(const void* domain, const void* handle, std::string_view value) override;
  // A push in any domain: returns at once unless `domain` is NCCL's. `ascii` is the range's
  // name when given as text, `registered` its registered-string handle otherwise;
  // `payload_type` and `payload_value` are the event attributes' payload members.
  void OnPush(const void* domain, uint32_t os_tid, const char* ascii, const void* registered,
              int32_t payload_type, uint64_t payload_value) override;
  void OnPop(const void* domain, uint32_t os_tid) override;
  // A kernel launch on the calling thread (its CUPTI correlation id): counted for the NCCL
  // call open on this thread, if any. Cheap when none is (one thread-local read).
  void OnLaunch(uint32_t correlation_id) override;
  // Records are written only while on (capture windows).
  void SetRecording(bool on) { recording_.store(on, std::memory_order_relaxed); }

  // Calls whose payload could not be read, calls dropped because NCCL nested them deeper
  // than the tracker follows (never seen: NCCL's calls do not nest).
  uint64_t unreadable_payloads() const { return unreadable_.load(std::memory_order_relaxed); }
  uint64_t too_deep() const { return too_deep_.load(std::memory_order_relaxed); }

 private:
  bool IsNccl(const void* domain) const {
    return domain != nullptr && domain == nccl_domain_.load(std::memory_order_acquire);
  }
  std::string NameOf(const void* registered);
  bool SafeCopy(const void* from, void* to, size_t n);

  NcclCallWriter writer_;
  std::function<uint64_t()> now_;
  std::atomic<const void*> nccl_domain_{nullptr};
  std::atomic<bool> recording_{true};
  std::atomic<uint64_t> unreadable_{0};
  std::atomic<uint64_t> too_deep_{0};
  std::mutex names_mu_;
  std::unordered_map<const void*, std::string> names_;  // NCCL's registered strings
  std::mutex probe_mu_;
  int probe_pipe_[2] = {-1, -1};
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_NCCL_NCCL_CALLS_H_
