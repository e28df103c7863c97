// Reads the kernel module's version out of /proc/driver/nvidia/version (driver_version.h).
#include "libinject/driver_version.h"

#include <string>
#include <string_view>

namespace warpscope {

std::string DisplayDriverVersionFrom(std::string_view proc_text) {
  proc_text = proc_text.substr(0, proc_text.find('\n'));
  if (proc_text.find("NVRM version:") == std::string_view::npos) return "";
  // The version is the first word made of digits and dots with at least one dot after the
  // "Kernel Module" words; the architecture ("x86_64") has no dot.
  size_t pos = proc_text.find("Module");
  while (pos != std::string_view::npos && pos < proc_text.size()) {
    const size_t begin = proc_text.find_first_not_of(" \t", pos);
    if (begin == std::string_view::npos) break;
    size_t end = proc_text.find_first_of(" \t", begin);
    if (end == std::string_view::npos) end = proc_text.size();
    const std::string_view word = proc_text.substr(begin, end - begin);
    if (word.find('.') != std::string_view::npos &&
        word.find_first_not_of("0123456789.") == std::string_view::npos) {
      return std::string(word);
    }
    pos = end;
  }
  return "";
}

}  // namespace warpscope
