// Pure translation of PC sampling data (plain structs from PcSamplingApi) into the trace
// records PcStallReasonsRecord and PcSampleBatchRecord. No CUPTI, no threads.
#ifndef WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLE_TRANSLATION_H_
#define WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLE_TRANSLATION_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "collectors/pc_sampling/pc_sampling_api.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

// The device's stall reason table, in CUPTI's order.
PcStallReasonsRecord MakePcStallReasonsRecord(uint32_t device_id,
                                              const std::vector<PcStallReason>& reasons);

// Function name -> interned string id (TraceWriter::InternString in libwarpscope).
using PcStringInterner = std::function<uint64_t(std::string_view)>;

struct PcBatchIdentity {
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint64_t timestamp_ns = 0;  // when the batch was read
};

// One GetData round into *out (its vectors are reused, so pass the same record each time).
// Returns the sum of the per-PC samples. Reasons with zero samples are left out.
uint64_t TranslatePcBatch(const PcRawBatch& raw, const PcBatchIdentity& identity,
                          const PcStringInterner& intern, PcSampleBatchRecord* out);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLE_TRANSLATION_H_
