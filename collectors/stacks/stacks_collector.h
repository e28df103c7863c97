// The call stacks collector: takes the calling thread's Python stack (native in a process
// without Python) at the CUDA calls that matter — syncs, copies, kernel launches — and writes
// one ApiStackEvent per call, with each distinct stack interned once (StackFrame, CallStack).
// Settings: WARPSCOPE_STACKS, WARPSCOPE_STACK_DEPTH, WARPSCOPE_STACK_LAUNCH_EVERY.
#ifndef WARPSCOPE_COLLECTORS_STACKS_STACKS_COLLECTOR_H_
#define WARPSCOPE_COLLECTORS_STACKS_STACKS_COLLECTOR_H_

#include <memory>

#include "collectors/collector_interface.h"

namespace warpscope {

std::unique_ptr<SessionListener> MakeStacksCollector();

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_STACKS_STACKS_COLLECTOR_H_
