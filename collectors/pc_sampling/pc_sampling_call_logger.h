// PcSamplingCallLogger: a PcSamplingApi that logs every call it forwards (arguments, result,
// time taken, calling thread) and each GetData round's totals, one line per call. It is what
// WARPSCOPE_PC_DEBUG=1 turns on: one run then shows at which call the samples stop.
// CUPTI-free (it wraps the real API or a fake).
#ifndef WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_CALL_LOGGER_H_
#define WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_CALL_LOGGER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/pc_sampling/pc_sampling_api.h"

namespace warpscope {

class PcSamplingCallLogger final : public PcSamplingApi {
 public:
  // `log` gets each line without a prefix or newline.
  using LineSink = std::function<void(std::string_view)>;
  PcSamplingCallLogger(std::unique_ptr<PcSamplingApi> api, LineSink log);

  WARPSCOPE_PC_SAMPLING_API_OVERRIDES;

 private:
  // "<call> ctx=0x.. <details> -> <result> (<us> us, tid <n>)"
  void Line(std::string_view call, PcContext ctx, std::string_view details,
            const PcResult& result, uint64_t elapsed_ns);

  std::unique_ptr<PcSamplingApi> api_;
  LineSink log_;
  uint64_t get_data_calls_ = 0;
  uint64_t pcs_seen_ = 0;      // over every GetData and Disable
  uint64_t samples_seen_ = 0;  // sum of per-PC samples over every GetData and Disable
};

// "total=.. dropped=.. non_user=.. pcs=.. remaining=.. pc_samples=.. buffer_full=0|1"
std::string DescribePcBatch(const PcRawBatch& batch);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_CALL_LOGGER_H_
