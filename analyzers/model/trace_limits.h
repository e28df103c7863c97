// Bounds on the numbers a trace gives, checked before the analyses compute with them. A value
// far beyond any CUDA GPU's (a corrupt or hand-edited trace) makes its device, launch
// configuration or PM sample unusable: the model counts it (an import problem) and the
// analyses leave it out and say why, instead of overflowing. The bounds are loose on
// purpose: they keep CUDA's occupancy calculator (which works in `int`) exact and the advice
// searches short, and never refuse a real GPU. docs/format.md lists them.
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_LIMITS_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_LIMITS_H_

#include <cstdint>
#include <limits>
#include <string>

#include "analyzers/model/trace_model.h"

namespace warpscope {

inline constexpr uint32_t kMaxComputeCapability = 99;          // major and minor
inline constexpr uint32_t kMaxSmCount = 1u << 16;              // H200: 132
inline constexpr uint32_t kMaxThreadsPerWarp = 1024;           // every GPU so far: 32
inline constexpr uint32_t kMaxWarpsPerSm = 4096;               // H200: 64
inline constexpr uint32_t kMaxThreadsPerBlock = 1u << 16;      // every GPU so far: 1024
inline constexpr uint32_t kMaxRegisters = 1u << 24;            // per SM or block; H200: 65536
inline constexpr uint32_t kMaxRegistersPerThread = 1024;       // every GPU so far: 255
inline constexpr uint64_t kMaxSharedMemoryBytes = 1ull << 24;  // per SM or block; H200: 228 KiB
// CUDA's grid limits, unchanged since compute capability 3.0.
inline constexpr uint32_t kMaxGridX = (1u << 31) - 1;
inline constexpr uint32_t kMaxGridYZ = 65535;

// True when start + duration does not fit in 64 bits: the event's end is unknown (the model
// counts such events in model.events_with_overflowing_end).
inline bool EndOverflows(uint64_t start_ns, uint64_t duration_ns) {
  return start_ns > std::numeric_limits<uint64_t>::max() - duration_ns;
}

// Why the device's limits cannot be computed with, as one phrase naming the field, its value
// and the bound ("max_warps_per_sm 2147483647 is out of range (at most 4096)"); "" when they
// can. Zero fields are fine: they mean "unknown" and the analyses fall back to defaults.
std::string DeviceLimitsProblem(const DeviceInfo& device);

// The same for a launch configuration (grid, block, registers, shared memory).
std::string LaunchConfigProblem(const LaunchConfig& launch);

// The same for a PM sample: an end past the 64-bit time range, or a value that is not a
// finite number (NaN or infinite).
std::string PmSampleProblem(const PmSample& sample);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_LIMITS_H_
