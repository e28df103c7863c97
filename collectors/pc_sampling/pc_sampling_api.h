// The small interface between the PC sampling controller and CUPTI, in plain structs.
// CuptiPcSampling (the only file that calls CUPTI) implements it; tests hand in a fake.
#ifndef WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_API_H_
#define WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_API_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace warpscope {

// Why a call failed, in the categories the controller treats differently.
enum class PcErrorKind {
  kNone,
  kInsufficientPrivileges,  // CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
  kUnsupported,             // CUPTI_ERROR_NOT_SUPPORTED and friends (device, vGPU, MIG)
  kOutOfMemory,             // GetData: the hardware buffer is full (hardwareBufferFull=1)
  kBusy,                    // another process samples this GPU (CUPTI_ERROR_HARDWARE_BUSY)
  kOther,
};

struct PcResult {
  PcErrorKind kind = PcErrorKind::kNone;
  std::string message;  // e.g. "cuptiPCSamplingEnable: CUPTI_ERROR_NOT_SUPPORTED (27)"
  bool ok() const { return kind == PcErrorKind::kNone; }
  static PcResult Ok() { return {}; }
};

// A CUcontext, opaque here.
using PcContext = void*;

// One stall reason as cuptiPCSamplingGetStallReasons names it on this device.
struct PcStallReason {
  uint32_t index = 0;
  std::string name;  // e.g. "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
};

// What CuptiPcSampling sets with cuptiPCSamplingSetConfigurationAttribute (besides the
// fixed CONTINUOUS mode, ENABLE_START_STOP_CONTROL=1 and PARSED output).
struct PcContextSettings {
  uint32_t period_exponent = 0;        // SAMPLING_PERIOD: 2^N cycles; 0: not set (CUPTI's default)
  uint64_t hardware_buffer_bytes = 0;  // HARDWARE_BUFFER_SIZE (device memory)
  uint64_t scratch_buffer_bytes = 0;   // SCRATCH_BUFFER_SIZE (host memory, CUPTI's)
  uint32_t max_pcs_per_read = 0;       // collectNumPcs of the preallocated CUpti_PCSamplingData
  std::vector<uint32_t> stall_reason_indices;  // STALL_REASON: all of them
};

// One PC of a GetData round, copied out of CUPTI's buffer.
struct PcRawPc {
  uint64_t cubin_crc = 0;
  uint64_t pc_offset = 0;
  std::string function_name;                                 // mangled
  std::vector<std::pair<uint32_t, uint32_t>> stall_samples;  // (stall reason index, samples)
  uint32_t correlation_id = 0;                               // 0 in continuous mode
};

// One cuptiPCSamplingGetData round, as CUPTI reported it.
struct PcRawBatch {
  uint64_t total_samples = 0;
  uint64_t dropped_samples = 0;
  uint64_t non_user_kernel_samples = 0;
  uint64_t remaining_num_pcs = 0;  // > 0: call GetData again
  bool hardware_buffer_full = false;
  std::vector<PcRawPc> pcs;  // totalNumPcs entries
  void Clear() {
    total_samples = dropped_samples = non_user_kernel_samples = remaining_num_pcs = 0;
    hardware_buffer_full = false;
    pcs.clear();
  }
};

// How BindContext left the calling thread, for UnbindContext.
enum class PcBinding {
  kAlreadyCurrent,  // the context was current already: nothing to undo
  kPushed,          // pushed onto the thread's context stack: UnbindContext pops it
  kFailed,          // could not be made current (the calls go ahead anyway)
};

class PcSamplingApi {
 public:
  virtual ~PcSamplingApi() = default;
  // Makes ctx current on the calling thread until UnbindContext. The controller binds it
  // around Start/Stop/GetData/Disable made from threads with no context of their own (its
  // drain thread, capture window edges, process end); not inside CUPTI's resource callbacks,
  // which run where the driver is creating, loading into or destroying the context.
  virtual PcBinding BindContext(PcContext ctx) = 0;
  virtual void UnbindContext(PcContext ctx, PcBinding binding) = 0;
  // cuptiPCSamplingEnable.
  virtual PcResult Enable(PcContext ctx) = 0;
  // cuptiPCSamplingGetNumStallReasons + GetStallReasons.
  virtual PcResult GetStallReasons(PcContext ctx, std::vector<PcStallReason>* reasons) = 0;
  // Allocates the CUpti_PCSamplingData buffer and sets every attribute in one call.
  virtual PcResult Configure(PcContext ctx, const PcContextSettings& settings) = 0;
  // What CUPTI reports for the context's configuration after Configure
  // (cuptiPCSamplingGetConfigurationAttribute), as "name=value ..." text for debug logs.
  virtual std::string DescribeConfiguration(PcContext ctx) = 0;
  virtual PcResult Start(PcContext ctx) = 0;  // cuptiPCSamplingStart
  virtual PcResult Stop(PcContext ctx) = 0;   // cuptiPCSamplingStop
  // One cuptiPCSamplingGetData round into *batch (cleared first). On a full hardware buffer
  // returns kOutOfMemory with batch->hardware_buffer_full set and whatever CUPTI gave.
  virtual PcResult GetData(PcContext ctx, PcRawBatch* batch) = 0;
  // cuptiPCSamplingDisable and the buffers' release; safe on a context never enabled.
  // *leftover (cleared first) gets what CUPTI put in the configured buffer at Disable: PCs
  // that no GetData had returned.
  virtual void Disable(PcContext ctx, PcRawBatch* leftover) = 0;
  // cuptiGetCubinCrc: the CRC that PC records carry as cubin_crc.
  virtual PcResult CubinCrc(const void* cubin, size_t size, uint64_t* crc) = 0;
};

// The declarations of every PcSamplingApi call, for the implementations that define them all
// out of line (the CUPTI one and the call logger): a new call is added here and above.
#define WARPSCOPE_PC_SAMPLING_API_OVERRIDES                                              \
  PcBinding BindContext(PcContext ctx) override;                                         \
  void UnbindContext(PcContext ctx, PcBinding binding) override;                         \
  PcResult Enable(PcContext ctx) override;                                               \
  PcResult GetStallReasons(PcContext ctx, std::vector<PcStallReason>* reasons) override; \
  PcResult Configure(PcContext ctx, const PcContextSettings& settings) override;         \
  std::string DescribeConfiguration(PcContext ctx) override;                             \
  PcResult Start(PcContext ctx) override;                                                \
  PcResult Stop(PcContext ctx) override;                                                 \
  PcResult GetData(PcContext ctx, PcRawBatch* batch) override;                           \
  void Disable(PcContext ctx, PcRawBatch* leftover) override;                            \
  PcResult CubinCrc(const void* cubin, size_t size, uint64_t* crc) override

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_API_H_
