// The NCCL calls collector: records NCCL's API calls (NcclCallEvent) from the NVTX ranges
// and payloads NCCL emits in its domain "NCCL", with the kernel launch each call made, so
// that analyses can name every NCCL kernel's collective, communicator and message size
// (nccl_calls.h). On when NVTX is traced; writes only inside capture windows. CUPTI-free.
#ifndef WARPSCOPE_COLLECTORS_NCCL_NCCL_COLLECTOR_H_
#define WARPSCOPE_COLLECTORS_NCCL_NCCL_COLLECTOR_H_

#include <memory>

#include "collectors/collector_interface.h"

namespace warpscope {

std::unique_ptr<SessionListener> MakeNcclCallCollector();

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_NCCL_NCCL_COLLECTOR_H_
