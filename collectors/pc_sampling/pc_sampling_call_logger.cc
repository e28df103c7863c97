// Debug log of the PC sampling calls (see pc_sampling_call_logger.h).
#include "collectors/pc_sampling/pc_sampling_call_logger.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <utility>

namespace warpscope {
namespace {

uint64_t SteadyNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::string Hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

const char* BindingName(PcBinding b) {
  switch (b) {
    case PcBinding::kAlreadyCurrent:
      return "already-current";
    case PcBinding::kPushed:
      return "pushed";
    case PcBinding::kFailed:
      return "FAILED";
  }
  return "?";
}

uint64_t PcSamples(const PcRawBatch& batch) {
  uint64_t n = 0;
  for (const PcRawPc& pc : batch.pcs) {
    for (const auto& [reason, samples] : pc.stall_samples) n += samples;
  }
  return n;
}

}  // namespace

std::string DescribePcBatch(const PcRawBatch& b) {
  return "total=" + std::to_string(b.total_samples) + " dropped=" +
         std::to_string(b.dropped_samples) + " non_user=" +
         std::to_string(b.non_user_kernel_samples) + " pcs=" + std::to_string(b.pcs.size()) +
         " remaining=" + std::to_string(b.remaining_num_pcs) + " pc_samples=" +
         std::to_string(PcSamples(b)) + " buffer_full=" + (b.hardware_buffer_full ? "1" : "0");
}

PcSamplingCallLogger::PcSamplingCallLogger(std::unique_ptr<PcSamplingApi> api, LineSink log)
    : api_(std::move(api)), log_(std::move(log)) {}

void PcSamplingCallLogger::Line(std::string_view call, PcContext ctx, std::string_view details,
                                const PcResult& result, uint64_t elapsed_ns) {
  std::string line(call);
  if (ctx != nullptr) line += " ctx=" + Hex(ctx);
  if (!details.empty()) {
    line += ' ';
    line += details;
  }
  line += result.ok() ? " -> ok" : " -> " + result.message;
  char tail[64];
  std::snprintf(tail, sizeof tail, " (%.1f us, tid %ld)", elapsed_ns / 1e3,
                static_cast<long>(syscall(SYS_gettid)));
  line += tail;
  log_(line);
}

PcBinding PcSamplingCallLogger::BindContext(PcContext ctx) {
  const uint64_t t0 = SteadyNs();
  const PcBinding b = api_->BindContext(ctx);
  Line("bind-context", ctx, std::string("-> ") + BindingName(b), PcResult::Ok(), SteadyNs() - t0);
  return b;
}

void PcSamplingCallLogger::UnbindContext(PcContext ctx, PcBinding binding) {
  api_->UnbindContext(ctx, binding);
}

PcResult PcSamplingCallLogger::Enable(PcContext ctx) {
  const uint64_t t0 = SteadyNs();
  PcResult r = api_->Enable(ctx);
  Line("cuptiPCSamplingEnable", ctx, "", r, SteadyNs() - t0);
  return r;
}

PcResult PcSamplingCallLogger::GetStallReasons(PcContext ctx,
                                               std::vector<PcStallReason>* reasons) {
  const uint64_t t0 = SteadyNs();
  PcResult r = api_->GetStallReasons(ctx, reasons);
  std::string details = "count=" + std::to_string(reasons->size());
  for (const PcStallReason& reason : *reasons) {
    details += ' ' + std::to_string(reason.index) + ':' + reason.name;
  }
  Line("cuptiPCSamplingGetStallReasons", ctx, details, r, SteadyNs() - t0);
  return r;
}

PcResult PcSamplingCallLogger::Configure(PcContext ctx, const PcContextSettings& s) {
  const uint64_t t0 = SteadyNs();
  PcResult r = api_->Configure(ctx, s);
  const std::string details =
      "period=" + (s.period_exponent == 0 ? std::string("default") : std::to_string(s.period_exponent)) +
      " hardware_buffer=" + std::to_string(s.hardware_buffer_bytes) +
      " scratch_buffer=" + std::to_string(s.scratch_buffer_bytes) +
      " max_pcs_per_read=" + std::to_string(s.max_pcs_per_read) +
      " stall_reasons=" + std::to_string(s.stall_reason_indices.size()) +
      " mode=CONTINUOUS start_stop_control=1 output=PARSED";
  Line("cuptiPCSamplingSetConfigurationAttribute", ctx, details, r, SteadyNs() - t0);
  if (r.ok()) DescribeConfiguration(ctx);
  return r;
}

std::string PcSamplingCallLogger::DescribeConfiguration(PcContext ctx) {
  const uint64_t t0 = SteadyNs();
  std::string text = api_->DescribeConfiguration(ctx);
  Line("cuptiPCSamplingGetConfigurationAttribute", ctx, "reads back: " + text, PcResult::Ok(),
       SteadyNs() - t0);
  return text;
}

PcResult PcSamplingCallLogger::Start(PcContext ctx) {
  const uint64_t t0 = SteadyNs();
  PcResult r = api_->Start(ctx);
  Line("cuptiPCSamplingStart", ctx, "", r, SteadyNs() - t0);
  return r;
}

PcResult PcSamplingCallLogger::Stop(PcContext ctx) {
  const uint64_t t0 = SteadyNs();
  PcResult r = api_->Stop(ctx);
  Line("cuptiPCSamplingStop", ctx, "", r, SteadyNs() - t0);
  return r;
}

PcResult PcSamplingCallLogger::GetData(PcContext ctx, PcRawBatch* batch) {
  const uint64_t t0 = SteadyNs();
  PcResult r = api_->GetData(ctx, batch);
  ++get_data_calls_;
  pcs_seen_ += batch->pcs.size();
  samples_seen_ += PcSamples(*batch);
  Line("cuptiPCSamplingGetData", ctx,
       "#" + std::to_string(get_data_calls_) + ' ' + DescribePcBatch(*batch) +
           " | so far: pcs=" + std::to_string(pcs_seen_) +
           " pc_samples=" + std::to_string(samples_seen_),
       r, SteadyNs() - t0);
  return r;
}

void PcSamplingCallLogger::Disable(PcContext ctx, PcRawBatch* leftover) {
  const uint64_t t0 = SteadyNs();
  api_->Disable(ctx, leftover);
  pcs_seen_ += leftover->pcs.size();
  samples_seen_ += PcSamples(*leftover);
  Line("cuptiPCSamplingDisable", ctx,
       "configured buffer after disable: " + DescribePcBatch(*leftover) +
           " | so far: pcs=" + std::to_string(pcs_seen_) +
           " pc_samples=" + std::to_string(samples_seen_),
       PcResult::Ok(), SteadyNs() - t0);
}

PcResult PcSamplingCallLogger::CubinCrc(const void* cubin, size_t size, uint64_t* crc) {
  const uint64_t t0 = SteadyNs();
  PcResult r = api_->CubinCrc(cubin, size, crc);
  char details[96];
  std::snprintf(details, sizeof details, "size=%zu crc=0x%llx", size,
                static_cast<unsigned long long>(*crc));
  Line("cuptiGetCubinCrc", nullptr, details, r, SteadyNs() - t0);
  return r;
}

}  // namespace warpscope
