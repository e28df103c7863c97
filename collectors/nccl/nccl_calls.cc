// NCCL calls from NCCL's NVTX ranges and payloads (see nccl_calls.h).
#include "collectors/nccl/nccl_calls.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace warpscope {
namespace {

constexpr uint64_t kStaticSchemaStart = uint64_t{1} << 24;

// Payload layouts (x86-64, NCCL's nvtx_payload_schemas.h): a uint64 communicator hash first,
// then per layout.
enum class Layout {
  kComm,            // {u64 comm}
  kCommCount,       // {u64 comm; int ndev}                          CommInitAll
  kCommBytes,       // {u64 comm; size_t bytes}                      AllGather, AlltoAll
  kCommBytesOp,     // {u64 comm; size_t bytes; int op}              AllReduce, ReduceScatter
  kCommBytesRoot,   // {u64 comm; size_t bytes; int root}            Broadcast, Gather, Scatter
  kCommBytesRootOp, // {u64 comm; size_t bytes; int root; int op}    Reduce
  kCommBytesPeer,   // {u64 comm; size_t bytes; int peer}            Send, Recv
  kCommRanks,       // {u64 comm; int nranks; int rank; int dev}     CommInitRank and kin
  kCommSplit,       // {u64 comm; u64 parent; int nranks, rank, dev, color, key}
  kCommShrink,      // {u64 comm; int nranks, rank, dev, excluded}
  kCommGrow,        // {u64 comm; u64 parent; int nranks, rank, dev}
};

struct Schema {
  std::string_view function;
  Layout layout;
  size_t size;  // sizeof the payload struct
};

// Indexed by schema id - kStaticSchemaStart (NCCL's NVTX_SID_*).
constexpr Schema kSchemas[] = {
    {"ncclCommInitRank", Layout::kCommRanks, 24},
    {"ncclCommInitAll", Layout::kCommCount, 16},
    {"ncclCommDestroy", Layout::kCommRanks, 24},
    {"ncclCommAbort", Layout::kCommRanks, 24},
    {"ncclAllGather", Layout::kCommBytes, 16},
    {"ncclAllReduce", Layout::kCommBytesOp, 24},
    {"ncclBroadcast", Layout::kCommBytesRoot, 24},
    {"ncclReduceScatter", Layout::kCommBytesOp, 24},
    {"ncclReduce", Layout::kCommBytesRootOp, 24},
    {"ncclSend", Layout::kCommBytesPeer, 24},
    {"ncclRecv", Layout::kCommBytesPeer, 24},
    {"ncclCommInitRankConfig", Layout::kCommRanks, 24},
    {"ncclCommInitRankScalable", Layout::kCommRanks, 24},
    {"ncclCommSplit", Layout::kCommSplit, 40},
    {"ncclCommFinalize", Layout::kComm, 8},
    {"ncclCommShrink", Layout::kCommShrink, 24},
    {"ncclAlltoAll", Layout::kCommBytes, 16},
    {"ncclGather", Layout::kCommBytesRoot, 24},
    {"ncclScatter", Layout::kCommBytesRoot, 24},
    {"ncclCommRevoke", Layout::kCommRanks, 24},
    {"ncclCommGrow", Layout::kCommGrow, 32},
};

template <typename T>
T At(const unsigned char* p, size_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof v);
  return v;
}

constexpr int kMaxDepth = 8;
constexpr size_t kNameBytes = 48;

// One open NCCL call on a thread.
struct OpenCall {
  uint64_t start_ns;
  char name[kNameBytes];
  NcclPayloadFields fields;
  bool payload_unreadable;
  uint32_t launch_correlation_id;
  uint32_t launches;
};

// Each thread's open NCCL calls. Plain data: the injected library keeps no thread-local
// object with a destructor. `owner` resets it when another tracker (a test) takes over.
struct ThreadCalls {
  const NcclCallTracker* owner;
  int depth;
  OpenCall calls[kMaxDepth];
};
thread_local ThreadCalls t_calls;

ThreadCalls& Calls(const NcclCallTracker* tracker) {
  if (t_calls.owner != tracker) {
    t_calls.owner = tracker;
    t_calls.depth = 0;
  }
  return t_calls;
}

void CopyName(std::string_view name, char (&out)[kNameBytes]) {
  const size_t n = std::min(name.size(), kNameBytes - 1);
  std::memcpy(out, name.data(), n);
  out[n] = '\0';
}

}  // namespace

bool DecodeNcclPayload(uint64_t schema_id, const void* data, size_t size, NcclPayloadFields* out) {
  if (data == nullptr || schema_id < kStaticSchemaStart) return false;
  const uint64_t index = schema_id - kStaticSchemaStart;
  if (index >= std::size(kSchemas) || kSchemas[index].size != size) return false;
  const Schema& s = kSchemas[index];
  const auto* p = static_cast<const unsigned char*>(data);
  NcclPayloadFields f;
  f.function = s.function;
  f.comm_hash = At<uint64_t>(p, 0);
  switch (s.layout) {
    case Layout::kComm:
      break;
    case Layout::kCommCount:
      f.comm_size = At<int32_t>(p, 8);
      break;
    case Layout::kCommBytes:
      f.bytes = At<uint64_t>(p, 8);
      break;
    case Layout::kCommBytesOp:
      f.bytes = At<uint64_t>(p, 8);
      f.reduction_op = At<int32_t>(p, 16);
      break;
    case Layout::kCommBytesRoot:
      f.bytes = At<uint64_t>(p, 8);
      f.root = At<int32_t>(p, 16);
      break;
    case Layout::kCommBytesRootOp:
      f.bytes = At<uint64_t>(p, 8);
      f.root = At<int32_t>(p, 16);
      f.reduction_op = At<int32_t>(p, 20);
      break;
    case Layout::kCommBytesPeer:
      f.bytes = At<uint64_t>(p, 8);
      f.peer = At<int32_t>(p, 16);
      break;
    case Layout::kCommRanks:
    case Layout::kCommShrink:
      f.comm_size = At<int32_t>(p, 8);
      f.comm_rank = At<int32_t>(p, 12);
      break;
    case Layout::kCommSplit:
    case Layout::kCommGrow:
      f.comm_size = At<int32_t>(p, 16);
      f.comm_rank = At<int32_t>(p, 20);
      break;
  }
  *out = f;
  return true;
}

NcclCallTracker::NcclCallTracker(NcclCallWriter writer, std::function<uint64_t()> now)
    : writer_(std::move(writer)), now_(std::move(now)) {
  if (pipe2(probe_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) probe_pipe_[0] = probe_pipe_[1] = -1;
}

NcclCallTracker::~NcclCallTracker() {
  for (int fd : probe_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

// The payload pointers come from the program: copied through a pipe, which fails with EFAULT
// on memory that cannot be read instead of faulting in the host program.
bool NcclCallTracker::SafeCopy(const void* from, void* to, size_t n) {
  if (probe_pipe_[0] < 0 || from == nullptr || n == 0 || n > 256) return false;
  std::lock_guard<std::mutex> lock(probe_mu_);
  if (::write(probe_pipe_[1], from, n) != static_cast<ssize_t>(n)) return false;
  return ::read(probe_pipe_[0], to, n) == static_cast<ssize_t>(n);
}

void NcclCallTracker::OnDomainCreated(const void* domain, std::string_view name) {
  if (domain != nullptr && name == "NCCL") nccl_domain_.store(domain, std::memory_order_release);
}

void NcclCallTracker::OnStringRegistered(const void* domain, const void* handle,
                                         std::string_view value) {
  if (!IsNccl(domain) || handle == nullptr) return;
  std::lock_guard<std::mutex> lock(names_mu_);
  names_[handle] = std::string(value);
}

std::string NcclCallTracker::NameOf(const void* registered) {
  std::lock_guard<std::mutex> lock(names_mu_);
  auto it = names_.find(registered);
  return it == names_.end() ? std::string() : it->second;
}

void NcclCallTracker::OnPush(const void* domain, uint32_t /*os_tid*/, const char* ascii,
                             const void* registered, int32_t payload_type,
                             uint64_t payload_value) {
  if (!IsNccl(domain)) return;
  ThreadCalls& calls = Calls(this);
  if (calls.depth >= kMaxDepth) {
    ++calls.depth;  // popped again by OnPop; not recorded
    too_deep_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  OpenCall& c = calls.calls[calls.depth++];
  c = OpenCall{};
  c.start_ns = now_();
  std::string name = ascii != nullptr ? std::string(ascii) : NameOf(registered);
  if (payload_type == kNvtxPayloadTypeExt && payload_value != 0) {
    NvtxPayloadData data{};
    unsigned char bytes[64];
    const bool copied =
        SafeCopy(reinterpret_cast<const void*>(payload_value), &data, sizeof data) &&
        data.size <= sizeof bytes && SafeCopy(data.payload, bytes, data.size);
    if (!copied || !DecodeNcclPayload(data.schema_id, bytes, data.size, &c.fields)) {
      c.payload_unreadable = true;
      unreadable_.fetch_add(1, std::memory_order_relaxed);
    } else if (name.empty()) {
      name = std::string(c.fields.function);
    }
  }
  CopyName(name, c.name);
}

void NcclCallTracker::OnLaunch(uint32_t correlation_id) {
  ThreadCalls& calls = t_calls;
  if (calls.owner != this || calls.depth <= 0 || calls.depth > kMaxDepth) return;
  OpenCall& c = calls.calls[calls.depth - 1];
  if (c.launches++ == 0) c.launch_correlation_id = correlation_id;
}

void NcclCallTracker::OnPop(const void* domain, uint32_t os_tid) {
  if (!IsNccl(domain)) return;
  ThreadCalls& calls = Calls(this);
  if (calls.depth <= 0) return;  // a pop without its push (the push came before we started)
  if (calls.depth-- > kMaxDepth) return;
  const OpenCall& c = calls.calls[calls.depth];
  if (!recording_.load(std::memory_order_relaxed)) return;
  NcclCallRecord r;
  r.start_ns = c.start_ns;
  r.end_ns = now_();
  r.comm_hash = c.fields.comm_hash;
  r.bytes = c.fields.bytes;
  r.reduction_op = c.fields.reduction_op;
  r.root = c.fields.root;
  r.peer = c.fields.peer;
  r.comm_size = c.fields.comm_size;
  r.comm_rank = c.fields.comm_rank;
  r.launch_correlation_id = c.launch_correlation_id;
  r.launches = c.launches;
  r.payload_unreadable = c.payload_unreadable;
  writer_(r, c.name, os_tid);
}

}  // namespace warpscope
