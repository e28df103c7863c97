// The NVIDIA driver's version as the kernel module reports it, for the trace header.
#ifndef WARPSCOPE_LIBINJECT_DRIVER_VERSION_H_
#define WARPSCOPE_LIBINJECT_DRIVER_VERSION_H_

#include <string>
#include <string_view>

namespace warpscope {

// The NVIDIA kernel module's version ("580.159.04") from the text of /proc/driver/nvidia/version
// (its first line reads "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  <date>"
// or "... Open Kernel Module for x86_64  580.159.04  ..."); empty when the text has none.
std::string DisplayDriverVersionFrom(std::string_view proc_text);

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_DRIVER_VERSION_H_
