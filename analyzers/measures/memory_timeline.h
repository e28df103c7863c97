// Memory over time from the trace's MemoryEvents (docs/memory.md): device memory in use as a
// step function per device (+bytes at ALLOCATE and MAP, -bytes at the RELEASE or UNMAP of a
// block it knows), the reserved size of stream-ordered pools, the peak and what was live at
// it, each block's owner (by the module that asked) and call site (by its stack), the value
// at given instants and the peak inside given intervals (steps, NVTX phases), and the
// requests the driver refused.
//
// Memory: two passes over the events in time order (the second replays up to each device's
// peak to list its live blocks); what is held grows with the blocks live at once, the
// owners, the call sites and the intervals asked, never with the events themselves (the
// curve is kept at a fixed number of points).
#ifndef WARPSCOPE_ANALYZERS_MEASURES_MEMORY_TIMELINE_H_
#define WARPSCOPE_ANALYZERS_MEASURES_MEMORY_TIMELINE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzers/model/trace_model.h"

namespace warpscope {

// Who holds a block, from the module that asked for it (MemoryEvent.source): libc10_cuda and
// libtorch* "PyTorch caching allocator", libnccl "NCCL", libcublas/libcublasLt "cuBLAS
// workspace", libcudnn* "cuDNN", another module its base name, none "program".
std::string MemoryOwner(std::string_view source_module);

// Whether memory of this kind is the device's (device, array, managed, static; unknown too,
// as VMM mappings may carry no kind), not the host's (pinned, pageable).
bool IsDeviceMemoryKind(v1::MemoryKind kind);

// One live block (an allocation or a mapping).
struct MemoryBlock {
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t allocated_ns = 0;
  uint32_t device_id = 0;
  uint32_t correlation_id = 0;
  v1::MemoryKind kind = v1::MEMORY_KIND_UNKNOWN;
  uint64_t pool_address = 0;  // 0 = not from a stream-ordered pool
  uint64_t stack_id = 0;      // CallStackInfo id of the call that made it; 0 = none
  std::string owner;          // MemoryOwner of its source
};

// A point of the curve: the most in use (and reserved) in a slice of time.
struct MemoryPoint {
  uint64_t time_ns = 0;  // the slice's start
  uint64_t in_use_bytes = 0;
  uint64_t reserved_bytes = 0;
  bool filled = false;  // an event fell in the slice (slices without one are dropped)
};

// A request the driver refused (MEMORY_OPERATION_ALLOCATE_FAILED), with the device's state.
struct MemoryFailure {
  uint64_t timestamp_ns = 0;
  uint32_t device_id = 0;
  uint64_t bytes_asked = 0;
  uint32_t result = 0;
  uint64_t in_use_bytes = 0;
  uint64_t reserved_bytes = 0;
  // Of its pool, or of all the device's pools when it names none: reserved minus used.
  uint64_t pool_free_bytes = 0;
  uint64_t stack_id = 0;
  std::string owner;  // who asked
  std::vector<std::pair<std::string, uint64_t>> owners;  // live bytes by owner, most first
};

// Live bytes made at one call site (stack) by one owner.
struct SiteGrowth {
  uint64_t stack_id = 0;
  std::string owner;
  uint64_t first_bytes = 0;  // live at MemoryTimelineOptions::growth_from_instant
  uint64_t last_bytes = 0;   // live at the last instant
};

struct DeviceMemory {
  uint32_t device_id = 0;
  uint64_t peak_bytes = 0;
  uint64_t peak_ns = 0;
  uint64_t reserved_at_peak_bytes = 0;  // blocks outside pools plus the pools' reserved size
  uint64_t peak_reserved_bytes = 0;
  uint64_t end_bytes = 0;  // in use after the last event
  std::vector<std::pair<std::string, uint64_t>> owners_at_peak;  // most first
  std::vector<MemoryBlock> largest_at_peak;                      // most first, `top` of them
  std::vector<MemoryPoint> curve;
  std::vector<uint64_t> interval_peak_bytes;  // parallel to MemoryTimelineOptions::intervals
  std::vector<uint64_t> in_use_at_bytes;      // parallel to MemoryTimelineOptions::instants
  // Parallel to the instants too: the least in use since the instant before (the first: since
  // the device's first event), what a program holds between its iterations.
  std::vector<uint64_t> low_before_bytes;
  std::vector<SiteGrowth> site_growth;        // sites live at the first or last instant
  std::map<v1::MemoryKind, uint64_t> peak_by_kind;  // every kind, host memory too
};

struct MemoryInterval {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct MemoryTimelineOptions {
  std::optional<uint32_t> device;
  size_t top = 10;             // largest blocks kept at each peak
  size_t curve_points = 400;   // slices of the curve over the events' span
  std::vector<MemoryInterval> intervals;  // peak inside each
  std::vector<uint64_t> instants;         // in use at each, ascending (step boundaries)
  // DeviceMemory::site_growth compares the live bytes of each site at this instant with those
  // at the last one (the first steady step's start with the last step's end).
  size_t growth_from_instant = 0;
};

struct MemoryTimeline {
  std::vector<DeviceMemory> devices;  // by id
  std::vector<MemoryFailure> failures;
  uint64_t events = 0;
  uint64_t unknown_releases = 0;  // RELEASE/UNMAP of an address no live block had
  uint64_t first_ns = 0, last_ns = 0;  // the memory events' span
};

MemoryTimeline ComputeMemoryTimeline(const TraceModel& model,
                                     const MemoryTimelineOptions& options);

// A robust slope of values at evenly spaced points (Theil-Sen: the median of pairwise slopes)
// with Sen's 95% interval; nullopt for fewer than 3 values.
struct Slope {
  double per_step = 0;
  double low = 0;
  double high = 0;
};
std::optional<Slope> TheilSenSlope(const std::vector<uint64_t>& values);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_MEMORY_TIMELINE_H_
