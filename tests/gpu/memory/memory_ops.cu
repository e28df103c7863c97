// Known allocations for the `alloc` trace kind (tests/gpu/memory/gpu_memory.sh): cudaMalloc and
// cudaFree of known sizes, a stream-ordered pool (cudaMemPoolCreate, cudaMallocFromPoolAsync,
// trim, destroy) and the default pool (cudaMallocAsync), pinned host memory (cudaHostAlloc),
// managed memory (cudaMallocManaged), VMM (cuMemCreate + cuMemMap, as PyTorch's expandable
// segments use it), and last a cudaMalloc of more than the device holds, which must fail.
// Prints one JSON line, the reference the checker (check_memory.py) compares the trace with.
//
//   ws_memory_ops all            everything above, then exit 0 when the last request failed
//   ws_memory_ops oom SECONDS    keep 256 MiB and 3 x 64 MiB live, wait SECONDS (the flight
//                                recorder's ring lets their records go), then the failing request
//   ws_memory_ops loop N BYTES   N cudaMalloc/cudaFree pairs of BYTES, timed: {"ns_per_pair"}
//                                (bench/memory/alloc_cost.sh); then one memset, untimed, so
//                                that a trace of it is kept
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CHECK_RT(call)                                                                    \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(3);                                                                       \
    }                                                                                     \
  } while (0)
#define CHECK_DRV(call)                                                        \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s:%d %s: CUresult %d\n", __FILE__, __LINE__, #call, (int)r_); \
      std::exit(3);                                                            \
    }                                                                          \
  } while (0)

std::string json;  // the reference, built as the program goes
void Add(const std::string& item) { json += (json.empty() ? "" : ", ") + item; }
std::string Block(const char* what, const void* p, size_t bytes) {
  char b[200];
  std::snprintf(b, sizeof b, "{\"what\": \"%s\", \"address\": %llu, \"bytes\": %zu}", what,
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)), bytes);
  return b;
}

void PlainMallocs(std::vector<std::string>* out) {
  for (size_t mib : {1, 3, 64, 200}) {
    void* p = nullptr;
    CHECK_RT(cudaMalloc(&p, mib << 20));
    out->push_back(Block("cudaMalloc", p, mib << 20));
    CHECK_RT(cudaFree(p));
  }
}

void Pools(std::vector<std::string>* out) {
  cudaStream_t s;
  CHECK_RT(cudaStreamCreate(&s));
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK_RT(cudaMemPoolCreate(&pool, &props));
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_RT(cudaMallocFromPoolAsync(&a, 8 << 20, pool, s));
  CHECK_RT(cudaMallocFromPoolAsync(&b, 16 << 20, pool, s));
  CHECK_RT(cudaMallocAsync(&c, 4 << 20, s));  // the device's default pool
  out->push_back(Block("cudaMallocFromPoolAsync", a, 8 << 20));
  out->push_back(Block("cudaMallocFromPoolAsync", b, 16 << 20));
  out->push_back(Block("cudaMallocAsync", c, 4 << 20));
  CHECK_RT(cudaFreeAsync(a, s));
  CHECK_RT(cudaFreeAsync(b, s));
  CHECK_RT(cudaFreeAsync(c, s));
  CHECK_RT(cudaStreamSynchronize(s));
  CHECK_RT(cudaMemPoolTrimTo(pool, 0));
  CHECK_RT(cudaMemPoolDestroy(pool));
  CHECK_RT(cudaStreamDestroy(s));
}

void HostAndManaged(std::vector<std::string>* out) {
  void *h = nullptr, *m = nullptr;
  CHECK_RT(cudaHostAlloc(&h, 2 << 20, cudaHostAllocDefault));
  CHECK_RT(cudaMallocManaged(&m, 4 << 20));
  out->push_back(Block("cudaHostAlloc", h, 2 << 20));
  out->push_back(Block("cudaMallocManaged", m, 4 << 20));
  CHECK_RT(cudaFreeHost(h));
  CHECK_RT(cudaFree(m));
}

void Vmm(std::vector<std::string>* out) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  CHECK_DRV(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t bytes = 4 * granularity;
  CUmemGenericAllocationHandle handle;
  CHECK_DRV(cuMemCreate(&handle, bytes, &prop, 0));
  CUdeviceptr va = 0;
  CHECK_DRV(cuMemAddressReserve(&va, bytes, 0, 0, 0));
  CHECK_DRV(cuMemMap(va, bytes, 0, handle, 0));
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_DRV(cuMemSetAccess(va, bytes, &access, 1));
  CHECK_RT(cudaMemset(reinterpret_cast<void*>(va), 0, bytes));
  CHECK_RT(cudaDeviceSynchronize());
  out->push_back(Block("cuMemMap", reinterpret_cast<void*>(va), bytes));
  CHECK_DRV(cuMemUnmap(va, bytes));
  CHECK_DRV(cuMemRelease(handle));
  CHECK_DRV(cuMemAddressFree(va, bytes));
}

// A request for twice what the device holds: must fail with cudaErrorMemoryAllocation.
bool FailingRequest() {
  size_t free_bytes = 0, total = 0;
  CHECK_RT(cudaMemGetInfo(&free_bytes, &total));
  const size_t ask = 2 * total;
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, ask);
  cudaGetLastError();  // clear it
  char b[160];
  std::snprintf(b, sizeof b, "\"failed\": {\"bytes\": %zu, \"result\": %d}, \"total\": %zu", ask,
                static_cast<int>(e), total);
  Add(b);
  return e == cudaErrorMemoryAllocation;
}

std::string List(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "all";
  CHECK_RT(cudaSetDevice(0));
  CHECK_RT(cudaFree(nullptr));  // the context
  std::vector<std::string> blocks;
  if (mode == "all") {
    PlainMallocs(&blocks);
    Pools(&blocks);
    HostAndManaged(&blocks);
    Vmm(&blocks);
  } else if (mode == "loop") {
    const long n = argc > 2 ? std::atol(argv[2]) : 10000;
    const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : (1 << 20);
    void* p = nullptr;
    for (int i = 0; i < 100; ++i) {  // warm: the driver's first allocations cost more
      CHECK_RT(cudaMalloc(&p, bytes));
      CHECK_RT(cudaFree(p));
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
      CHECK_RT(cudaMalloc(&p, bytes));
      CHECK_RT(cudaFree(p));
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    // One memset after the timing: a trace with no kernel, copy or memset is removed at exit as
    // one without work (docs/record.md), and alloc_cost.sh weighs the trace.
    CHECK_RT(cudaMalloc(&p, bytes));
    CHECK_RT(cudaMemset(p, 0, bytes));
    CHECK_RT(cudaDeviceSynchronize());
    CHECK_RT(cudaFree(p));
    std::printf("{\"mode\": \"loop\", \"pairs\": %ld, \"bytes\": %zu, \"ns_per_pair\": %.1f}\n", n,
                bytes, ns / n);
    return 0;
  } else if (mode == "oom") {
    const int wait_s = argc > 2 ? std::atoi(argv[2]) : 3;
    void* keep = nullptr;
    CHECK_RT(cudaMalloc(&keep, 256 << 20));
    blocks.push_back(Block("live", keep, 256 << 20));
    for (int i = 0; i < 3; ++i) {
      void* p = nullptr;
      CHECK_RT(cudaMalloc(&p, 64 << 20));
      blocks.push_back(Block("live", p, 64 << 20));
    }
    void* gone = nullptr;
    CHECK_RT(cudaMalloc(&gone, 32 << 20));
    CHECK_RT(cudaFree(gone));  // not live at the failure
    CHECK_RT(cudaDeviceSynchronize());
    sleep(wait_s);
  } else {
    std::fprintf(stderr, "usage: %s all|oom SECONDS\n", argv[0]);
    return 2;
  }
  const bool failed = FailingRequest();
  // The out-of-memory dump is written by warpscope's own thread: give it time before the exit
  // dump (a program that exits at once races it; gpu_memory.sh checks the dump, not the race).
  if (mode == "oom") sleep(2);
  Add("\"mode\": \"" + mode + "\", \"blocks\": " + List(blocks));
  std::printf("{%s}\n", json.c_str());
  std::fflush(stdout);
  return failed ? 0 : 1;
}
