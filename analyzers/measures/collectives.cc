// Collectives of one rank from its NCCL kernels and calls (see collectives.h).
#include "analyzers/measures/collectives.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace warpscope {
namespace {

constexpr std::string_view kPrefixes[] = {"ncclDevKernel_", "ncclKernel_"};
constexpr std::string_view kReductions[] = {"Sum", "Prod", "Max", "Min", "PreMulSum",
                                            "SumPostDiv"};
constexpr std::string_view kProtocols[] = {"LL", "LL128", "SIMPLE"};
constexpr std::string_view kAlgorithms[] = {"RING",          "TREE",         "COLLNET_DIRECT",
                                            "COLLNET_CHAIN", "NVLS",         "NVLS_TREE",
                                            "PAT",           "COLLNETDIRECT", "COLLNETCHAIN"};
// The operations NCCL's calls and kernels name, as the kernel names spell them.
constexpr std::string_view kOps[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                     "Reduce",    "SendRecv",  "AlltoAll",      "Gather",
                                     "Scatter",   "Send",      "Recv",          "Generic"};

template <size_t N>
bool In(std::string_view token, const std::string_view (&set)[N]) {
  return std::find(std::begin(set), std::end(set), token) != std::end(set);
}

// The kernel's own name part: after the prefix, before the parameter list.
std::string_view Stem(std::string_view name) {
  for (std::string_view prefix : kPrefixes) {
    const size_t at = name.find(prefix);
    if (at == std::string_view::npos) continue;
    std::string_view rest = name.substr(at + prefix.size());
    size_t end = 0;
    while (end < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[end])) ||
                                 rest[end] == '_')) {
      ++end;
    }
    return rest.substr(0, end);
  }
  return {};
}

std::vector<std::string_view> Tokens(std::string_view stem) {
  std::vector<std::string_view> out;
  while (!stem.empty()) {
    const size_t us = stem.find('_');
    out.push_back(stem.substr(0, us));
    if (us == std::string_view::npos) break;
    stem.remove_prefix(us + 1);
  }
  return out;
}

// From the start of `first` to the end of `last`, two tokens of one name.
std::string_view Through(std::string_view first, std::string_view last) {
  return std::string_view(first.data(), static_cast<size_t>(last.data() + last.size() - first.data()));
}

// The NCCL calls that launched each kernel, by the launch's correlation id: the call that
// launched it and the payload-carrying calls queued before it on the same thread (a group).
struct LaunchCalls {
  std::vector<const NcclCall*> calls;  // with payload, in call order
  const NcclCall* launcher = nullptr;
};

std::unordered_map<uint32_t, LaunchCalls> CallsByLaunch(const std::vector<NcclCall>& nccl_calls,
                                                       size_t* unreadable) {
  std::vector<const NcclCall*> calls;
  for (const NcclCall& c : nccl_calls) {
    calls.push_back(&c);
    if (c.payload_unreadable) ++*unreadable;
  }
  std::sort(calls.begin(), calls.end(), [](const NcclCall* a, const NcclCall* b) {
    return a->thread_id != b->thread_id ? a->thread_id < b->thread_id : a->start_ns < b->start_ns;
  });
  std::unordered_map<uint32_t, LaunchCalls> by_launch;
  std::vector<const NcclCall*> queued;
  uint64_t thread = 0;
  for (const NcclCall* c : calls) {
    if (c->thread_id != thread) queued.clear();
    thread = c->thread_id;
    const bool collective = !CollectiveOpOfCall(c->name).empty();
    if (c->launches == 0) {
      if (collective) queued.push_back(c);
      continue;
    }
    LaunchCalls& l = by_launch[c->launch_correlation_id];
    l.launcher = c;
    l.calls = std::move(queued);
    queued.clear();
    if (collective) l.calls.push_back(c);
  }
  return by_launch;
}

std::string CommKey(uint64_t hash) { return absl::StrFormat("0x%016x", hash); }

void TieToCalls(const LaunchCalls& l, CollectiveInstance& c) {
  c.calls = static_cast<uint32_t>(l.calls.size());
  c.call_start_ns = (l.calls.empty() ? l.launcher : l.calls.front())->start_ns;
  c.call_thread_id = l.launcher->thread_id;
  for (const NcclCall* call : l.calls) {
    c.bytes += call->bytes;
    if (c.comm_hash == 0) c.comm_hash = call->comm_hash;
    if (call->comm_size > 0) c.comm_size = call->comm_size;
  }
  if (l.calls.size() == 1) {
    const std::string_view op = CollectiveOpOfCall(l.calls.front()->name);
    if (!op.empty()) c.op = op;
  }
}

// Kernels without a communicator take their stream's (the most common one on it), or a
// stream key numbered by the stream's first use.
void FillCommunicators(RankCollectives& out) {
  std::map<std::pair<uint32_t, uint32_t>, std::map<uint64_t, size_t>> hashes_by_stream;
  for (const CollectiveInstance& c : out.instances) {
    if (c.comm_hash != 0) ++hashes_by_stream[{c.device_id, c.stream_id}][c.comm_hash];
  }
  std::map<std::pair<uint32_t, uint32_t>, std::string> stream_keys;
  for (CollectiveInstance& c : out.instances) {  // by start: stream numbers follow first use
    if (c.comm_hash != 0) {
      c.comm = CommKey(c.comm_hash);
      continue;
    }
    const std::pair<uint32_t, uint32_t> stream{c.device_id, c.stream_id};
    auto hashes = hashes_by_stream.find(stream);
    if (hashes != hashes_by_stream.end()) {
      auto most = std::max_element(hashes->second.begin(), hashes->second.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      c.comm_hash = most->first;
      c.comm = CommKey(c.comm_hash);
      ++out.comm_from_stream;
      continue;
    }
    auto [it, added] = stream_keys.try_emplace(stream, "");
    if (added) it->second = absl::StrCat("stream#", stream_keys.size() - 1);
    c.comm = it->second;
    ++out.keyed_by_stream;
  }
}

}  // namespace

bool IsNcclKernel(std::string_view name) { return !Stem(name).empty(); }

NcclKernelName ParseNcclKernelName(std::string_view name) {
  NcclKernelName out;
  const std::vector<std::string_view> tokens = Tokens(Stem(name));
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string_view t = tokens[i];
    if (i == 0) {
      out.op = t;
    } else if (In(t, kReductions)) {
      out.reduction = t;
    } else if (In(t, kProtocols)) {
      out.protocol = t;
    } else if (i + 1 < tokens.size() && In(Through(t, tokens[i + 1]), kAlgorithms)) {
      out.algorithm = Through(t, tokens[i + 1]);  // COLLNET_DIRECT, NVLS_TREE
      ++i;
    } else if (In(t, kAlgorithms)) {
      out.algorithm = t;
    } else if (out.dtype.empty()) {
      out.dtype = t;
    }
  }
  return out;
}

std::string_view CollectiveOpOfCall(std::string_view call_name) {
  if (call_name.substr(0, 4) != "nccl") return {};
  const std::string_view op = call_name.substr(4);
  for (std::string_view known : kOps) {
    if (op == known) return known;
  }
  if (op == "Bcast") return "Broadcast";
  return {};
}

bool IsSymmetricCollective(std::string_view op) {
  return op == "AllReduce" || op == "AllGather" || op == "ReduceScatter" || op == "AlltoAll";
}

double BusBandwidthFactor(std::string_view op, uint32_t nranks) {
  if (nranks <= 1) return 1.0;
  const double n = nranks;
  if (op == "AllReduce") return 2.0 * (n - 1) / n;
  if (op == "AllGather" || op == "ReduceScatter" || op == "AlltoAll") return n - 1;
  return 1.0;
}

namespace {

constexpr uint64_t kQueuedNs = 20'000;

// When the rank's own work before `before` last ended (0: none before it).
uint64_t OwnWorkDone(const std::vector<TimeInterval>& busy, uint64_t before) {
  auto it = std::upper_bound(busy.begin(), busy.end(), before,
                             [](uint64_t t, const TimeInterval& b) { return t < b.begin_ns; });
  if (it == busy.begin()) return 0;
  --it;
  return std::min(it->end_ns, before);
}

}  // namespace

void LostToWaiting(std::vector<CollectiveWait>& c, const std::vector<TimeInterval>& own_work) {
  std::map<std::string_view, std::vector<size_t>> by_comm;
  for (size_t i = 0; i < c.size(); ++i) by_comm[c[i].comm].push_back(i);
  for (auto& [comm, order] : by_comm) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return c[a].seq < c[b].seq; });
    for (size_t first = 0; first < order.size();) {
      size_t last = first, longest = first;
      uint64_t waits = c[order[first]].wait_ns;
      while (last + 1 < order.size() &&
             c[order[last + 1]].start_ns <= c[order[last]].end_ns + kQueuedNs) {
        ++last;
        waits += c[order[last]].wait_ns;
        if (c[order[last]].wait_ns > c[order[longest]].wait_ns) longest = last;
      }
      CollectiveWait& end = c[order[last]];
      const uint64_t moves = end.end_ns - std::min(end.transfer_ns, end.end_ns - end.start_ns);
      const uint64_t ready =
          std::max(c[order[first]].start_ns, OwnWorkDone(own_work, end.start_ns));
      end.lost_ns = std::min(waits, moves > ready ? moves - ready : 0);
      end.lost_to = order[longest];
      first = last + 1;
    }
  }
  std::map<int64_t, size_t> longest_in_step;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].step < 0 || c[i].lost_ns == 0) continue;
    auto [it, added] = longest_in_step.try_emplace(c[i].step, i);
    if (added) continue;
    const size_t keep = c[i].lost_ns > c[it->second].lost_ns ? i : it->second;
    c[keep == i ? it->second : i].lost_ns = 0;
    it->second = keep;
  }
}

RankCollectives FindCollectives(const TraceModel& model) {
  return FindCollectives(model.nccl_calls, model.kernels, {});
}

RankCollectives FindCollectives(const std::vector<NcclCall>& nccl_calls,
                                const std::vector<KernelEvent>& kernels,
                                const std::vector<size_t>& kernel_index) {
  RankCollectives out;
  const std::unordered_map<uint32_t, LaunchCalls> by_launch =
      CallsByLaunch(nccl_calls, &out.unreadable_payloads);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelEvent& k = kernels[i];
    const std::string_view name = k.name.empty() ? k.mangled_name : k.name;
    if (!IsNcclKernel(name)) continue;
    CollectiveInstance& c = out.instances.emplace_back();
    c.kernel = ParseNcclKernelName(name);
    c.op = c.kernel.op;
    c.kernel_index = kernel_index.empty() ? i : kernel_index[i];
    c.start_ns = k.start_ns;
    c.duration_ns = k.duration_ns;
    c.device_id = k.device_id;
    c.stream_id = k.stream_id;
    auto tied = by_launch.find(k.correlation_id);
    if (k.correlation_id != 0 && tied != by_launch.end()) {
      TieToCalls(tied->second, c);
      ++out.tied_to_calls;
    }
  }
  std::sort(out.instances.begin(), out.instances.end(),
            [](const CollectiveInstance& a, const CollectiveInstance& b) {
              return a.start_ns < b.start_ns;
            });
  FillCommunicators(out);
  std::map<std::string, uint64_t> next_seq;
  for (CollectiveInstance& c : out.instances) c.seq = next_seq[c.comm]++;
  return out;
}

}  // namespace warpscope
