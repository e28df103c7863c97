// stderr logging for the injected library: one write(2) per line, so lines from several
// threads and processes do not interleave.
#include "libinject/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

namespace warpscope {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
}

void SetLogLevel(LogLevel level, bool quiet) {
  g_level.store(quiet ? static_cast<int>(LogLevel::kError) : static_cast<int>(level));
}

void Log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > g_level.load()) return;
  std::string line(message);
  if (!line.starts_with("warpscope:")) line = "warpscope: " + line;
  line += '\n';
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

}  // namespace warpscope
