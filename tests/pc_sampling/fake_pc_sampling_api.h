// A fake PcSamplingApi (per context a queue of GetData rounds, failures to inject, a call
// log) and helpers that make fake contexts, PCs and batches, for the PC sampling tests.
#ifndef WARPSCOPE_TESTS_PC_SAMPLING_FAKE_PC_SAMPLING_API_H_
#define WARPSCOPE_TESTS_PC_SAMPLING_FAKE_PC_SAMPLING_API_H_

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collectors/pc_sampling/pc_sampling_api.h"

namespace warpscope::pc_sampling_test {

inline PcRawPc Pc(std::string function, uint64_t offset,
           std::vector<std::pair<uint32_t, uint32_t>> stalls) {
  PcRawPc pc;
  pc.cubin_crc = 0xC0FFEE;
  pc.pc_offset = offset;
  pc.function_name = std::move(function);
  pc.stall_samples = std::move(stalls);
  return pc;
}


inline PcContext Context(uintptr_t id) {
  return reinterpret_cast<PcContext>(id);  // NOLINT(performance-no-int-to-ptr): fake handles
}

inline PcRawBatch Batch(uint64_t total, uint64_t remaining, std::vector<PcRawPc> pcs) {
  PcRawBatch b;
  b.total_samples = total;
  b.remaining_num_pcs = remaining;
  b.pcs = std::move(pcs);
  return b;
}

// A fake CUPTI: per context a queue of GetData rounds, failures to inject, a call log.
class FakePcApi : public PcSamplingApi {
 public:
  struct Round {
    PcResult result;
    PcRawBatch batch;
  };
  PcResult enable_result, reasons_result, configure_result, start_result, stop_result,
      crc_result;
  std::map<std::thread::id, std::set<PcContext>> bound;
  int binds = 0, unbinds = 0;
  std::vector<std::string> unbound_calls;
  std::vector<PcStallReason> reasons = {{0, "smsp__pcsamp_warps_issue_stalled_barrier"},
                                        {4, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
                                        {8, "smsp__pcsamp_warps_issue_stalled_selected"}};
  std::map<PcContext, std::deque<Round>> rounds;
  PcContextSettings settings;
  std::vector<std::string> calls;
  mutable std::mutex mu;  // the worker-thread test reads `calls` concurrently

  // Which contexts are current on the calling thread (the controller's ScopedBinding), and
  // the calls that ran on a thread where their context was not.
  PcBinding BindContext(PcContext ctx) override {
    std::lock_guard<std::mutex> lock(mu);
    if (bound[std::this_thread::get_id()].count(ctx) != 0) return PcBinding::kAlreadyCurrent;
    bound[std::this_thread::get_id()].insert(ctx);
    ++binds;
    return PcBinding::kPushed;
  }
  void UnbindContext(PcContext ctx, PcBinding binding) override {
    std::lock_guard<std::mutex> lock(mu);
    if (binding == PcBinding::kPushed) {
      bound[std::this_thread::get_id()].erase(ctx);
      ++unbinds;
    }
  }
  PcResult Enable(PcContext ctx) override { return Log("enable", ctx, enable_result); }
  std::string DescribeConfiguration(PcContext) override { return "SAMPLING_PERIOD=15"; }
  PcResult CubinCrc(const void* cubin, size_t size, uint64_t* crc) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back("crc " + std::to_string(size));
    *crc = crc_result.ok() ? std::hash<std::string_view>()(
                                 std::string_view(static_cast<const char*>(cubin), size))
                           : 0;
    return crc_result;
  }
  PcResult GetStallReasons(PcContext ctx, std::vector<PcStallReason>* out) override {
    *out = reasons;
    return Log("reasons", ctx, reasons_result);
  }
  PcResult Configure(PcContext ctx, const PcContextSettings& s) override {
    settings = s;
    return Log("configure", ctx, configure_result);
  }
  PcResult Start(PcContext ctx) override { return Log("start", ctx, start_result); }
  PcResult Stop(PcContext ctx) override { return Log("stop", ctx, stop_result); }
  PcResult GetData(PcContext ctx, PcRawBatch* batch) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back("getdata " + Name(ctx));
    NoteBindingLocked("getdata", ctx);
    batch->Clear();
    auto& q = rounds[ctx];
    if (q.empty()) return {};
    Round r = std::move(q.front());
    q.pop_front();
    *batch = std::move(r.batch);
    return r.result;
  }
  void Disable(PcContext ctx, PcRawBatch* leftover) override {
    Log("disable", ctx, {});
    std::lock_guard<std::mutex> lock(mu);
    leftover->Clear();
    auto it = at_disable.find(ctx);
    if (it != at_disable.end()) {
      *leftover = std::move(it->second);
      at_disable.erase(it);
    }
  }
  // What CUPTI leaves in the configured buffer at Disable, per context.
  std::map<PcContext, PcRawBatch> at_disable;

  void Queue(PcContext ctx, PcResult result, PcRawBatch batch) {
    std::lock_guard<std::mutex> lock(mu);
    rounds[ctx].push_back({std::move(result), std::move(batch)});
  }
  std::vector<std::string> TakeCalls() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> out;
    out.swap(calls);
    return out;
  }
  size_t CountCalls(const std::string& call) const {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const auto& c : calls) n += c == call;
    return n;
  }
  static std::string Name(PcContext ctx) {
    return std::to_string(reinterpret_cast<uintptr_t>(ctx));
  }

 private:
  PcResult Log(const char* what, PcContext ctx, PcResult result) {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(std::string(what) + " " + Name(ctx));
    NoteBindingLocked(what, ctx);
    return result;
  }
  void NoteBindingLocked(const std::string& what, PcContext ctx) {
    auto it = bound.find(std::this_thread::get_id());
    if (it == bound.end() || it->second.count(ctx) == 0) {
      unbound_calls.push_back(what + " " + Name(ctx));
    }
  }
};

}  // namespace warpscope::pc_sampling_test

#endif  // WARPSCOPE_TESTS_PC_SAMPLING_FAKE_PC_SAMPLING_API_H_
