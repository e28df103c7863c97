// The one list of the optional collectors the core can run (PM sampling, PC sampling), with
// the variable that switches each on. Adding a collector means adding it here.
#ifndef WARPSCOPE_LIBINJECT_COLLECTOR_REGISTRY_H_
#define WARPSCOPE_LIBINJECT_COLLECTOR_REGISTRY_H_

#include <span>

#include "collectors/collector_interface.h"

namespace warpscope {

// Every optional collector, in the order the session starts them.
std::span<const CollectorRegistration> Collectors();

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_COLLECTOR_REGISTRY_H_
