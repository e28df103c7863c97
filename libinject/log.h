// One-line `warpscope:` messages on stderr, filtered by WARPSCOPE_LOG_LEVEL / WARPSCOPE_QUIET.
#ifndef WARPSCOPE_LIBINJECT_LOG_H_
#define WARPSCOPE_LIBINJECT_LOG_H_

#include <string_view>

#include "libinject/config.h"

namespace warpscope {

void SetLogLevel(LogLevel level, bool quiet);
// Writes `message` (which should start with "warpscope:") and a newline, if `level` passes.
void Log(LogLevel level, std::string_view message);

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_LOG_H_
