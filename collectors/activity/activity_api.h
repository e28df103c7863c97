// The small interface between the activity controller and CUPTI's activity API. CuptiActivity
// (cupti_activity.cc, the only file that calls CUPTI's activity API) implements it; unit
// tests hand the controller a fake that fills buffers with synthetic records. No CUPTI types.
#ifndef WARPSCOPE_COLLECTORS_ACTIVITY_ACTIVITY_API_H_
#define WARPSCOPE_COLLECTORS_ACTIVITY_ACTIVITY_API_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace warpscope {

// The activity kinds the tracer enables, numbered as CUpti_ActivityKind (cupti_activity.cc
// checks that they match): error messages print the number.
enum class ActivityKind : int {
  kMemcpy = 1,
  kMemset = 2,
  kDriver = 4,
  kRuntime = 5,
  kDevice = 8,
  kContext = 9,
  kConcurrentKernel = 10,
  kMarker = 12,
  kMarkerData = 13,
  kOverhead = 17,
  kMemcpy2 = 22,  // peer-to-peer copies
  kSynchronization = 38,
  kInternalLaunchApi = 48,  // launches the driver makes outside any API function
  kMemory2 = 49,            // allocations and frees
  kMemoryPool = 50,         // stream-ordered memory pools created, trimmed, destroyed
  kGraphTrace = 51,
};

// Shared memory per block the DEVICE record lacks, from the driver (bytes).
struct SharedMemoryLimits {
  uint64_t optin_bytes = 0;     // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  uint64_t reserved_bytes = 0;  // CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK
};

// A CUptiResult as a plain number (0 = CUPTI_SUCCESS). ActivityApi::ErrorText words it.
struct ActivityResult {
  int code = 0;
  bool ok() const { return code == 0; }
};

// Where CUPTI's two buffer callbacks go. CUPTI calls them from its own threads and from the
// thread that flushes; they must return fast and never throw.
class ActivityBufferHandler {
 public:
  virtual ~ActivityBufferHandler() = default;
  // CUPTI wants an empty buffer: *buffer (8-byte aligned; nullptr when there is none),
  // *size its bytes, *max_records 0 (as many as fit).
  virtual void BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) = 0;
  // CUPTI is done with `buffer` (of `size` bytes): its first `valid_bytes` hold records.
  // The buffer is the handler's again.
  virtual void BufferCompleted(uint8_t* buffer, size_t size, size_t valid_bytes) = 0;
};

class ActivityApi {
 public:
  virtual ~ActivityApi() = default;
  // cuptiActivityRegisterTimestampCallback with a CLOCK_MONOTONIC clock; before any kind
  // is enabled.
  virtual ActivityResult RegisterMonotonicTimestampCallback() = 0;
  // cuptiActivitySetAttribute(DEVICE_BUFFER_SIZE / DEVICE_BUFFER_POOL_LIMIT); before init.
  virtual ActivityResult SetDeviceBufferSize(size_t bytes) = 0;
  virtual ActivityResult SetDeviceBufferPoolLimit(size_t buffers) = 0;
  // cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM): records carry OS thread ids.
  virtual ActivityResult UseSystemThreadIds() = 0;
  // cuptiActivityEnableAllocationSource: MEMORY2 records name the library that asked
  // (`source`), at some cost per allocation.
  virtual ActivityResult EnableAllocationSource(bool enable) = 0;
  // cuptiActivityRegisterCallbacks; `handler` receives every buffer callback from then on.
  virtual ActivityResult RegisterCallbacks(ActivityBufferHandler* handler) = 0;
  // cuptiActivityEnable / cuptiActivityDisable.
  virtual ActivityResult Enable(ActivityKind kind) = 0;
  virtual ActivityResult Disable(ActivityKind kind) = 0;
  // cuptiActivityEnableRuntimeApi: whether CUPTI records calls of one runtime API (callback
  // id) while kRuntime is enabled. Enabling kRuntime again resets every id to recorded.
  virtual ActivityResult EnableRuntimeApi(uint32_t cbid, bool enable) = 0;
  // cuptiActivityFlushAll(0): complete buffers only; forced (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED):
  // incomplete ones too. The buffers come back through BufferCompleted before it returns.
  virtual ActivityResult FlushAll(bool forced) = 0;
  // cuptiActivityGetNumDroppedRecords(NULL, 0, dropped): records lost since the last call
  // (reading resets the count).
  virtual ActivityResult GetNumDroppedRecords(size_t* dropped) = 0;
  // cuptiActivityGetNextRecord: *record (nullptr to start) moves to the next record of the
  // buffer's first `valid_bytes`; false when there is none (or the buffer is bad).
  // The record is a CUpti_Activity (a CUPTI record of the kind its first field names).
  virtual bool NextRecord(uint8_t* buffer, size_t valid_bytes, const void** record) = 0;
  // cuptiGetCallbackName for a runtime (or else driver) API callback id; nullptr when unknown.
  virtual const char* CallbackName(bool runtime, uint32_t cbid) = 0;
  // The opt-in and reserved shared memory per block of `device`, from the driver the process
  // already loaded (an attribute it cannot read is 0); nullopt when no driver is loaded.
  virtual std::optional<SharedMemoryLimits> QuerySharedMemoryLimits(uint32_t device) = 0;
  // "CUPTI_ERROR_NOT_COMPATIBLE (22)": the one-line text of a failed call.
  virtual std::string ErrorText(ActivityResult result) = 0;
  // Now on the records' clock (TraceClockNs), for the recorder's own overhead records.
  virtual uint64_t Now() = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_ACTIVITY_ACTIVITY_API_H_
