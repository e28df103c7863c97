// NvtxRangeBuilder: pairs NVTX marker START/END records (matched by id) into ranges, attaches
// MARKER_DATA colors and categories, and computes push/pop nesting depth per thread. Pure
// code: the CUPTI marker records are reduced to MarkerEvent by the activity translator.
//
// CUPTI does not say whether a range came from push/pop or start/end. A range counts as
// push/pop when it ends on the thread that opened it while it is the innermost open range
// there (LIFO); its depth is the number of ranges open on that thread when it was opened.
#ifndef WARPSCOPE_COLLECTORS_NVTX_NVTX_RANGE_BUILDER_H_
#define WARPSCOPE_COLLECTORS_NVTX_NVTX_RANGE_BUILDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collectors/common/record_sink.h"

namespace warpscope {

struct MarkerEvent {
  enum class Kind { kStart, kEnd, kInstant };
  Kind kind = Kind::kInstant;
  uint32_t id = 0;
  uint64_t timestamp_ns = 0;
  uint32_t os_tid = 0;
  const char* name = nullptr;    // null on END
  const char* domain = nullptr;  // null = default domain
};

class NvtxRangeBuilder {
 public:
  // Ranges named `name` in `domain` are not emitted (the session writes the NVTX capture
  // range itself from its callbacks, because its own START/END straddle window edges).
  void SuppressRange(std::string name, std::string domain) {
    suppress_name_ = std::move(name);
    suppress_domain_ = std::move(domain);
  }
  void OnMarker(const MarkerEvent& event, RecordSink& sink);
  // MARKER_DATA: color (ARGB, 0 = none) and category for marker `id`.
  void OnMarkerData(uint32_t id, uint32_t color, uint32_t category, RecordSink& sink);

  uint64_t unmatched_ends() const { return unmatched_ends_; }
  size_t open_ranges() const { return open_.size(); }
  // Ranges still open (e.g. when the window closed before their END); counted, not written.
  void DropOpen() { dropped_open_ += open_.size(); open_.clear(); stacks_.clear(); }
  uint64_t dropped_open() const { return dropped_open_; }

 private:
  struct Open {
    std::string name;
    std::string domain;
    uint64_t start_ns = 0;
    uint32_t os_tid = 0;
    uint32_t depth = 0;
    uint32_t color = 0;
    uint32_t category = 0;
  };
  struct Data {
    uint32_t color = 0;
    uint32_t category = 0;
  };
  bool Suppressed(const Open& o) const {
    return !suppress_name_.empty() && o.name == suppress_name_ && o.domain == suppress_domain_;
  }
  std::unordered_map<uint32_t, Open> open_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> stacks_;  // os tid -> open ids
  std::unordered_map<uint32_t, Data> data_for_instant_;  // marks whose data came first
  std::string suppress_name_, suppress_domain_;
  uint64_t unmatched_ends_ = 0;
  uint64_t dropped_open_ = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_NVTX_NVTX_RANGE_BUILDER_H_
