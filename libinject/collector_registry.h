// The one list of the collectors the core runs (CUPTI callbacks, activity tracing, the NVTX
// capture range, PM sampling, PC sampling), with the stage each starts in and the variable
// that switches an optional one on. Adding a collector means adding it here.
#ifndef WARPSCOPE_LIBINJECT_COLLECTOR_REGISTRY_H_
#define WARPSCOPE_LIBINJECT_COLLECTOR_REGISTRY_H_

#include <span>

#include "collectors/collector_interface.h"

namespace warpscope {

// Every collector, in the order the session starts them and passes each hook to them.
std::span<const CollectorRegistration> Collectors();

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_COLLECTOR_REGISTRY_H_
