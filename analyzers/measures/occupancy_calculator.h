// Theoretical occupancy of a kernel launch, computed by CUDA's own occupancy calculator
// (cuda_occupancy.h) from the trace model's DeviceInfo and LaunchConfig, plus plain-words advice.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_OCCUPANCY_CALCULATOR_H_
#define WARPSCOPE_ANALYZERS_MEASURES_OCCUPANCY_CALCULATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// What caps the number of resident blocks per SM (bits; several can tie).
enum OccupancyLimiter : uint32_t {
  kLimitWarps = 1 << 0,         // warp slots per SM (block size)
  kLimitRegisters = 1 << 1,     // register file
  kLimitSharedMemory = 1 << 2,  // shared memory
  kLimitBlocks = 1 << 3,        // maximum resident blocks per SM
  kLimitBarriers = 1 << 4,      // named barriers
  kLimitVirtual = 1 << 5,       // virtual resources (Blackwell)
};

// "registers", "shared memory+registers", ... ("none" for 0).
std::string LimiterNames(uint32_t limiters);

struct TheoreticalOccupancy {
  int threads_per_block = 0;
  int warps_per_block = 0;
  int blocks_per_sm = 0;        // 0: the launch cannot run on this device as described
  int active_warps_per_sm = 0;  // blocks_per_sm * warps_per_block
  int max_warps_per_sm = 0;
  double occupancy = 0;   // active_warps_per_sm / max_warps_per_sm, 0..1
  uint32_t limiters = 0;  // OccupancyLimiter bits
  // The per-resource caps the calculator found (INT_MAX when a resource is unused).
  int block_limit_registers = 0;
  int block_limit_shared_memory = 0;
  int block_limit_warps = 0;
  int block_limit_blocks = 0;
  int block_limit_barriers = 0;
  int allocated_registers_per_block = 0;
  uint64_t allocated_shared_memory_per_block = 0;  // incl. the reserved 1 KiB on sm_80+
  uint64_t shared_memory_per_block = 0;            // static + dynamic, as launched
  uint64_t grid_blocks = 0;
  // grid_blocks / (blocks_per_sm * sm_count): below 1 the grid cannot fill the GPU once.
  double waves = 0;
};

// Runs cudaOccMaxActiveBlocksPerMultiprocessor. Device limits come from the Device packet;
// fields it leaves 0 fall back to the architecture's defaults (sm_90: 64 warps, 32 blocks,
// 64 Ki registers, 228 KiB shared memory per SM, 227 KiB opt-in, 1 KiB reserved per block).
// Errors: InvalidArgument for unusable inputs (no block size, unknown architecture, a value
// out of range: trace_limits.h).
absl::StatusOr<TheoreticalOccupancy> ComputeTheoreticalOccupancy(const DeviceInfo& device,
                                                                 const LaunchConfig& launch);

// The most warps one launch can keep resident, by which PM values attributed to it are capped
// (a value above it measured another kernel too). From the theoretical occupancy when the
// launch configuration is known and the calculator accepts it: per SM, the calculator's active
// warps; on the whole GPU, min(grid blocks, blocks per SM x SMs) x warps per block. Otherwise
// the device's capacity (max warps per SM, x SMs), with `theoretical` false. All 0 when the
// device is missing or its limits are out of range (trace_limits.h): no cap then.
struct ResidentWarpLimit {
  double per_sm = 0;
  double gpu = 0;
  bool theoretical = false;
};
ResidentWarpLimit ResidentWarpLimitOf(const DeviceInfo* device, const LaunchConfig* launch);

// One suggestion: what to change, and what the calculator says the change gives.
struct OccupancyAdvice {
  uint32_t limiter = 0;  // the OccupancyLimiter it is about
  std::string text;      // one sentence with numbers
};

// Advice for a launch below 100% theoretical occupancy, found by re-running the calculator
// on varied registers/thread, shared memory/block and block size. Empty at 100%.
std::vector<OccupancyAdvice> AdviseOccupancy(const DeviceInfo& device, const LaunchConfig& launch,
                                             const TheoreticalOccupancy& current);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_OCCUPANCY_CALCULATOR_H_
