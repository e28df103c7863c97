// What ws_trace_check knows of a trace: its packets read one by one (also from a file cut
// short), and the facts its checks look at, gathered in one pass (see trace_check.cc).
#ifndef WARPSCOPE_TESTS_GPU_TRACE_FACTS_H_
#define WARPSCOPE_TESTS_GPU_TRACE_FACTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "warpscope/v1/trace.pb.h"

namespace ws_trace_check {

namespace pb = warpscope::v1;

struct Loaded {
  std::vector<pb::TracePacket> packets;
  bool partial = false;
  std::map<uint64_t, std::string> strings;
  std::map<uint64_t, uint64_t> thread_os;  // ThreadInfo id -> os tid
};

// Reads `path` packet by packet; false when it cannot be opened.
bool Load(const std::string& path, Loaded* out);

// What the checks look at, gathered in one pass over the packets.
struct TraceFacts {
  using Take = std::function<std::string()>;  // The check's argument (consumes it).

  explicit TraceFacts(const Loaded& loaded) : t(loaded) {}
  std::string str(uint64_t id) const {
    auto it = t.strings.find(id);
    return it == t.strings.end() ? std::string("<undefined>") : it->second;
  }
  void Add(const pb::TracePacket& p);
  void AddSamplesAndEnd(const pb::TracePacket& p);
  void Finish();
  void Print(const char* path, bool dump);
  void Dump();
  // Each runs the check `a` when it is one of its own and returns whether it was.
  bool CheckContents(const std::string& a, const Take& take);
  bool CheckSampling(const std::string& a, const Take& take);
  bool CheckTiming(const std::string& a, const Take& take);
  bool CheckPlacement(const std::string& a, const Take& take);
  bool CheckGraphsAndStraddles(const std::string& a, const Take& take);

  const Loaded& t;
  std::map<std::string, long> kernels, nvtx, nvtx_depth;
  std::set<uint64_t> nvtx_threads;
  std::vector<std::pair<uint64_t, uint64_t>> windows;  // [begin, end) in trace ns
  std::vector<std::pair<uint64_t, std::string>> kernel_starts;
  std::vector<uint64_t> spin_durations;
  struct KernelInfo {
    std::string name;
    uint64_t start, end;
    uint32_t device, context, graph;
  };
  std::vector<KernelInfo> kernel_info;
  std::vector<uint32_t> graph_launch_ids;
  std::map<uint32_t, uint32_t> context_devices;  // ContextInfo: id -> device
  std::map<std::string, long> memcpys;  // "htod:1048576" -> count
  std::map<uint64_t, long> memsets;
  std::map<std::string, uint64_t> counters;
  std::vector<std::pair<uint64_t, uint64_t>> pm_samples;  // [start, end] in trace ns
  std::map<std::string, uint64_t> pc_samples_by_function;  // demangled name -> samples
  std::set<uint64_t> pc_crcs;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> cubin_bytes;  // crc -> (joined, total)
  uint64_t pc_samples_total = 0, pc_records = 0, pc_cupti_total = 0;
  long api_calls = 0, devices = 0, contexts = 0, syncs = 0, marks = 0;
  bool header = false, end = false;
  int end_reason = 0;
  uint64_t open_begin = 0;
  bool open = false;
  uint64_t min_ts = UINT64_MAX, max_ts = 0;
  uint64_t drops = 0;
};

}  // namespace ws_trace_check

#endif  // WARPSCOPE_TESTS_GPU_TRACE_FACTS_H_
