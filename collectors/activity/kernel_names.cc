// Kernel name demangling and the per-pointer id cache (see kernel_names.h).
#include "collectors/activity/kernel_names.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

namespace warpscope {

std::string DemangleKernelName(const char* mangled) {
  if (mangled == nullptr) return "<unknown>";
  if (mangled[0] != '_' || mangled[1] != 'Z') return mangled;
  int status = 0;
  char* out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return mangled;
  }
  std::string result(out);
  std::free(out);
  return result;
}

KernelNameCache::Ids KernelNameCache::Lookup(const char* mangled, RecordSink& sink) {
  if (mangled == nullptr) mangled = "<unknown>";
  auto it = by_pointer_.find(mangled);
  if (it != by_pointer_.end() && std::strcmp(it->second.mangled.c_str(), mangled) == 0) {
    return it->second.ids;
  }
  Ids ids;
  auto text_it = by_text_.find(mangled);
  if (text_it != by_text_.end()) {
    ids = text_it->second;
  } else {
    ++demangle_calls_;
    std::string demangled = DemangleKernelName(mangled);
    ids.mangled_name_id = sink.InternString(mangled);
    ids.name_id = demangled == mangled ? ids.mangled_name_id : sink.InternString(demangled);
    if (ids.name_id != 0 && ids.mangled_name_id != 0) by_text_.emplace(mangled, ids);
  }
  if (ids.name_id != 0 && ids.mangled_name_id != 0) by_pointer_[mangled] = Entry{mangled, ids};
  return ids;
}

}  // namespace warpscope
