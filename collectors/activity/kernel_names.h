// KernelNameCache: demangles kernel names once and remembers their interned ids, keyed by the
// name pointer CUPTI hands out (checked against the stored text, so a reused pointer that
// now names another kernel is noticed). Not thread-safe; the activity translator locks.
#ifndef WARPSCOPE_COLLECTORS_ACTIVITY_KERNEL_NAMES_H_
#define WARPSCOPE_COLLECTORS_ACTIVITY_KERNEL_NAMES_H_

#include <cstdint>
#include <string>
#include <unordered_map>

#include "collectors/common/record_sink.h"

namespace warpscope {

// Demangles an Itanium C++ name; returns the input unchanged when it is not one.
std::string DemangleKernelName(const char* mangled);

class KernelNameCache {
 public:
  struct Ids {
    uint64_t name_id = 0;
    uint64_t mangled_name_id = 0;
  };
  // Interns (demangled, mangled) through `sink` the first time a name is seen.
  Ids Lookup(const char* mangled, RecordSink& sink);
  size_t size() const { return by_pointer_.size(); }
  uint64_t demangle_calls() const { return demangle_calls_; }
  // Interned ids belong to one writer; forget them when the sink changes.
  void Clear() { by_pointer_.clear(); by_text_.clear(); }

 private:
  struct Entry {
    std::string mangled;
    Ids ids;
  };
  std::unordered_map<const char*, Entry> by_pointer_;
  std::unordered_map<std::string, Ids> by_text_;
  uint64_t demangle_calls_ = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_ACTIVITY_KERNEL_NAMES_H_
