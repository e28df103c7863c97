// What the parameters of a CUDA allocation, free or map function say at its exit: the bytes
// asked for, the address given or mapped, the kind of memory. Read from CUPTI's callback data
// by memory_call_params.cc (the generated parameter structs of CUDA 13.0); this header is
// CUPTI-free.
#ifndef WARPSCOPE_COLLECTORS_CALLBACKS_MEMORY_CALL_PARAMS_H_
#define WARPSCOPE_COLLECTORS_CALLBACKS_MEMORY_CALL_PARAMS_H_

#include <cstdint>

#include "proto/writer/trace_records.h"

namespace warpscope {

struct MemoryCallParams {
  // kAllocate: the function asks for memory (a failure is an ALLOCATE_FAILED of `bytes`);
  // kMap / kUnmap: cuMemMap / cuMemUnmap of `bytes` at `address`; kUnknown: none of these.
  MemoryOperation operation = MemoryOperation::kUnknown;
  MemoryKind kind = MemoryKind::kUnknown;
  uint64_t address = 0;  // the block given (0 when the call failed) or mapped
  uint64_t bytes = 0;    // asked for, or mapped
};

// The result that means "out of memory": cudaErrorMemoryAllocation and
// CUDA_ERROR_OUT_OF_MEMORY are both 2.
inline constexpr uint32_t kOutOfMemoryResult = 2;

// Reads `params` (CUpti_CallbackData::functionParams) of callback `cbid` of the runtime API
// (else the driver API), at the call's exit. False for a function it does not know.
bool ReadMemoryCallParams(bool runtime, uint32_t cbid, const void* params, MemoryCallParams* out);
// Whether ReadMemoryCallParams knows the function (chosen once per callback id, so that no
// other call pays for it).
bool IsMemoryCall(bool runtime, uint32_t cbid);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_CALLBACKS_MEMORY_CALL_PARAMS_H_
