// What the session writes at the top of its trace: who, where, when, with which settings.
#ifndef WARPSCOPE_LIBINJECT_TRACE_HEADER_H_
#define WARPSCOPE_LIBINJECT_TRACE_HEADER_H_

#include <sys/types.h>

#include <string>

#include "libinject/config.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

// The header of this process's trace; its time base is now, in the trace clock (set the
// clock first).
HeaderRecord MakeTraceHeader(const Config& config, pid_t pid);

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_TRACE_HEADER_H_
