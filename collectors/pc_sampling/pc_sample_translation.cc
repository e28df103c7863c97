// Plain PC sampling structs -> PcStallReasonsRecord / PcSampleBatchRecord.
#include "collectors/pc_sampling/pc_sample_translation.h"

#include <string>

namespace warpscope {

PcStallReasonsRecord MakePcStallReasonsRecord(uint32_t device_id,
                                              const std::vector<PcStallReason>& reasons) {
  PcStallReasonsRecord record;
  record.device_id = device_id;
  record.index.reserve(reasons.size());
  record.name.reserve(reasons.size());
  for (const PcStallReason& r : reasons) {
    record.index.push_back(r.index);
    record.name.push_back(r.name);
  }
  return record;
}

uint64_t TranslatePcBatch(const PcRawBatch& raw, const PcBatchIdentity& identity,
                          const PcStringInterner& intern, PcSampleBatchRecord* out) {
  out->device_id = identity.device_id;
  out->context_id = identity.context_id;
  out->timestamp_ns = identity.timestamp_ns;
  out->total_samples = raw.total_samples;
  out->dropped_samples = raw.dropped_samples;
  out->non_user_kernel_samples = raw.non_user_kernel_samples;
  out->hardware_buffer_full = raw.hardware_buffer_full;
  out->records.resize(raw.pcs.size());
  uint64_t samples = 0;
  // PCs of one function come in runs: intern each run's name once.
  const std::string* last_name = nullptr;
  uint64_t last_id = 0;
  for (size_t i = 0; i < raw.pcs.size(); ++i) {
    const PcRawPc& pc = raw.pcs[i];
    PcSampleRecord& rec = out->records[i];
    rec.cubin_crc = pc.cubin_crc;
    rec.pc_offset = pc.pc_offset;
    rec.correlation_id = pc.correlation_id;
    if (last_name == nullptr || *last_name != pc.function_name) {
      last_id = pc.function_name.empty() ? 0 : intern(pc.function_name);
      last_name = &pc.function_name;
    }
    rec.function_name_id = last_id;
    rec.stall_reason_index.clear();
    rec.samples.clear();
    for (const auto& [reason, count] : pc.stall_samples) {
      if (count == 0) continue;
      rec.stall_reason_index.push_back(reason);
      rec.samples.push_back(count);
      samples += count;
    }
  }
  return samples;
}

}  // namespace warpscope
