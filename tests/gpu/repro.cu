// ws_repro: small CUDA programs with a known structure for the GPU checks
// (tests/gpu/gpu_suite.sh runs them under warpscope, tests/gpu/trace_check.cc verifies).
// usage: ws_repro MODE [N] ; see Usage() for the modes.
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t e = (x);                                                          \
    if (e != cudaSuccess) {                                                       \
      std::fprintf(stderr, "ws_repro: %s failed: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(3);                                                               \
    }                                                                             \
  } while (0)

// Driver API through cudart's entry-point query, so that ws_repro keeps its dependencies
// (static cudart, no libcuda.so link) for the other checks.
struct DriverApi {
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuCtxCreate) CtxCreate = nullptr;  // cuCtxCreate_v4 in CUDA 13
  // Version 13000 of "cuCtxSynchronize" is cuCtxSynchronize_v2, which takes the context.
  decltype(&::cuCtxSynchronize_v2) CtxSynchronize = nullptr;
  decltype(&::cuCtxDestroy) CtxDestroy = nullptr;
  decltype(&::cuCtxGetId) CtxGetId = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
};
DriverApi g_cu;

#define CU_CHECK(x)                                                               \
  do {                                                                            \
    CUresult e = (x);                                                             \
    if (e != CUDA_SUCCESS) {                                                      \
      const char* s = nullptr;                                                    \
      if (g_cu.GetErrorString) g_cu.GetErrorString(e, &s);                        \
      std::fprintf(stderr, "ws_repro: %s failed: %d %s\n", #x, (int)e, s ? s : "?"); \
      std::exit(3);                                                               \
    }                                                                             \
  } while (0)

template <typename Fn>
void LoadDriverFn(const char* name, Fn* fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, 13000, cudaEnableDefault, &status);
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || p == nullptr) {
    std::fprintf(stderr, "ws_repro: driver entry point %s not found (%s, status %d)\n", name,
                 cudaGetErrorString(e), static_cast<int>(status));
    std::exit(3);
  }
  *fn = reinterpret_cast<Fn>(p);
}

__global__ void ws_tiny(int* p) {
  if (p && threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(p, 1);
}
__global__ void ws_inside(int* p) {
  if (p && threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(p, 1);
}
__global__ void ws_outside(int* p) {
  if (p && threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(p, 1);
}
// Spins for about `ns` nanoseconds of GPU time (globaltimer).
__global__ void ws_spin(unsigned long long ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long now = start;
  while (now - start < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}
// One kernel name per host thread in `contexts` mode: "void ws_ctx_kernel<I>(int*)".
template <int I>
__global__ void ws_ctx_kernel(int* p) {
  if (p && threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(p, 1);
}
// The nodes of the CUDA graph in `graph` mode.
__global__ void ws_graph_node(int* p) {
  if (p && threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(p, 1);
}
template <typename T>
__global__ void ws_templated(T* out, T v) {
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

namespace {

int* g_counter = nullptr;

void Launches(int n, const char* which, cudaStream_t s = 0) {
  for (int i = 0; i < n; ++i) {
    if (!std::strcmp(which, "inside")) {
      ws_inside<<<1, 32, 0, s>>>(g_counter);
    } else if (!std::strcmp(which, "outside")) {
      ws_outside<<<1, 32, 0, s>>>(g_counter);
    } else {
      ws_tiny<<<1, 32, 0, s>>>(g_counter);
    }
  }
}

// Kernels of known length timed with CUDA events; prints "event_ns <ns>" per kernel.
void Timed(int n) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  // Warm-up (not printed): loads the module and makes the first event pair cheap.
  CHECK(cudaEventRecord(a));
  ws_spin<<<1, 32>>>(1000);
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  for (int i = 0; i < n; ++i) {
    unsigned long long ns = 50000ull * (1 + i % 4);  // 50..200 us
    CHECK(cudaEventRecord(a));
    ws_spin<<<1, 32>>>(ns);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    std::printf("event_ns %.0f\n", ms * 1e6);
  }
}

void Memory() {
  const size_t kPageable = 1 << 20, kPinned = 4 << 20, kDtoH = 2 << 20, kDtoD = 8 << 20,
               kSet = 3 << 20;
  std::vector<char> host(kPageable, 1);
  char* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, kPinned));
  char *d1 = nullptr, *d2 = nullptr;
  CHECK(cudaMalloc(&d1, 16 << 20));
  CHECK(cudaMalloc(&d2, 16 << 20));
  CHECK(cudaMemcpy(d1, host.data(), kPageable, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpyAsync(d1, pinned, kPinned, cudaMemcpyHostToDevice, 0));
  CHECK(cudaMemcpy(pinned, d1, kDtoH, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(d2, d1, kDtoD, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemset(d1, 7, kSet));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d1));
  CHECK(cudaFree(d2));
  CHECK(cudaFreeHost(pinned));
}

void NvtxWorker() {
  nvtxRangePushA("worker_range");
  nvtxRangePushA("worker_inner");
  Launches(5, "tiny");
  cudaDeviceSynchronize();
  nvtxRangePop();
  nvtxRangePop();
}

void Nvtx() {
  nvtxRangePushA("phase_outer");
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("phase_inner");
    Launches(2, "tiny");
    nvtxRangePop();
  }
  nvtxMarkA("a_mark");
  std::thread t(NvtxWorker);
  t.join();
  nvtxDomainHandle_t dom = nvtxDomainCreateA("ws_domain");
  nvtxEventAttributes_t attr = {};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "domain_range";
  attr.colorType = NVTX_COLOR_ARGB;
  attr.color = 0xff00ff00;
  attr.category = 7;
  nvtxDomainRangePushEx(dom, &attr);
  Launches(1, "tiny");
  nvtxDomainRangePop(dom);
  nvtxRangePop();
  CHECK(cudaDeviceSynchronize());
}

void ProfilerApi() {
  Launches(50, "outside");
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaProfilerStart());
  Launches(100, "inside");
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaProfilerStop());
  Launches(50, "outside");
  CHECK(cudaDeviceSynchronize());
}

void NvtxCapture() {
  nvtxRangePushA("warmup");
  Launches(30, "outside");
  CHECK(cudaDeviceSynchronize());
  nvtxRangePop();
  nvtxRangePushA("capture_me");
  nvtxRangePushA("inner");
  Launches(20, "inside");
  CHECK(cudaDeviceSynchronize());
  nvtxRangePop();
  nvtxRangePop();
  nvtxRangePushA("after");
  Launches(30, "outside");
  CHECK(cudaDeviceSynchronize());
  nvtxRangePop();
}

// Launches one tiny kernel every `period_ms` for `seconds` (window tests, signals, kill).
void Paced(double seconds, int period_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  long launched = 0;
  while (std::chrono::steady_clock::now() < end) {
    Launches(1, "tiny");
    CHECK(cudaStreamSynchronize(0));
    std::printf("launched %ld\n", ++launched);  // kill -9 test: what the trace may miss
    std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
  }
}

void Threads(int threads, int n) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([n] {
      cudaStream_t s;
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      Launches(n, "tiny", s);
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaStreamDestroy(s));
    });
  }
  for (auto& t : pool) t.join();
}

void Many(int n) {
  Launches(n, "tiny");
  CHECK(cudaDeviceSynchronize());
}

void Fork(const char* self) {
  Launches(10, "tiny");
  CHECK(cudaDeviceSynchronize());
  pid_t child = fork();
  if (child == 0) {
    // A child that does no CUDA work and exits normally: must not touch the parent's trace.
    usleep(100000);
    std::exit(0);
  }
  pid_t child2 = fork();
  if (child2 == 0) {
    // A child that execs a CUDA program: gets its own trace (pattern has %p).
    execl(self, self, "many", "7", (char*)nullptr);
    _exit(127);
  }
  int st = 0, st2 = 0;
  waitpid(child, &st, 0);
  waitpid(child2, &st2, 0);
  Launches(10, "tiny");
  CHECK(cudaDeviceSynchronize());
  std::printf("child_exit %d %d\n", WEXITSTATUS(st), WEXITSTATUS(st2));
}

void ExitFromThread() {
  std::atomic<bool> go{false};
  std::thread t([&go] {
    while (!go.load()) std::this_thread::yield();
    Launches(5, "inside");
    cudaDeviceSynchronize();
    std::exit(0);  // exit() from another thread while main is still launching
  });
  Launches(10, "tiny");
  CHECK(cudaDeviceSynchronize());
  go.store(true);
  for (;;) {
    Launches(1, "tiny");
    cudaStreamSynchronize(0);
    usleep(1000);
  }
}

void Templated() {
  float* out = nullptr;
  CHECK(cudaMalloc(&out, 64 * sizeof(float)));
  ws_templated<float><<<4, 32>>>(out, 1.5f);
  ws_templated<int><<<4, 32>>>(reinterpret_cast<int*>(out), 3);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(out));
}

constexpr int kMaxContextThreads = 8;

template <int I>
void LaunchCtxKernels(int k) {
  // The pointer of the primary context (g_counter) is not valid in another context: nullptr.
  for (int j = 0; j < k; ++j) ws_ctx_kernel<I><<<1, 32>>>(nullptr);
}

void LaunchCtxKernelsOf(int which, int k) {
  switch (which) {
    case 0: LaunchCtxKernels<0>(k); break;
    case 1: LaunchCtxKernels<1>(k); break;
    case 2: LaunchCtxKernels<2>(k); break;
    case 3: LaunchCtxKernels<3>(k); break;
    case 4: LaunchCtxKernels<4>(k); break;
    case 5: LaunchCtxKernels<5>(k); break;
    case 6: LaunchCtxKernels<6>(k); break;
    case 7: LaunchCtxKernels<7>(k); break;
    default: break;
  }
}

// N host threads, each with its own context (cuCtxCreate on device i % deviceCount),
// launching K kernels named ws_ctx_kernel<i> through the runtime API (which uses the
// thread's current context), then destroying the context. Prints one line per thread.
void Contexts(int n, int k) {
  if (n < 1 || n > kMaxContextThreads || k < 1) {
    std::fprintf(stderr, "ws_repro: contexts N K needs 1 <= N <= %d, K >= 1\n", kMaxContextThreads);
    std::exit(2);
  }
  LoadDriverFn("cuDeviceGet", &g_cu.DeviceGet);
  LoadDriverFn("cuCtxCreate", &g_cu.CtxCreate);
  LoadDriverFn("cuCtxSynchronize", &g_cu.CtxSynchronize);
  LoadDriverFn("cuCtxDestroy", &g_cu.CtxDestroy);
  LoadDriverFn("cuCtxGetId", &g_cu.CtxGetId);
  LoadDriverFn("cuGetErrorString", &g_cu.GetErrorString);
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (count < 1) {
    std::fprintf(stderr, "ws_repro: no CUDA device\n");
    std::exit(3);
  }
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < n; ++i) {
    pool.emplace_back([i, n, k, count, &ready] {
      CUdevice dev;
      CU_CHECK(g_cu.DeviceGet(&dev, i % count));
      CUctxCreateParams params = {};
      CUcontext ctx = nullptr;
      CU_CHECK(g_cu.CtxCreate(&ctx, &params, 0, dev));
      // All contexts exist before any thread launches: the contexts are alive together.
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      LaunchCtxKernelsOf(i, k);
      CHECK(cudaGetLastError());
      CU_CHECK(g_cu.CtxSynchronize(ctx));
      unsigned long long id = 0;
      CU_CHECK(g_cu.CtxGetId(ctx, &id));
      std::printf("context thread %d device %d ctx_id %llu kernels %d\n", i, i % count, id, k);
      // WS_REPRO_LEAK_CONTEXTS: leave the contexts alive at exit (the exit path with user
      // contexts that still exist).
      if (std::getenv("WS_REPRO_LEAK_CONTEXTS") == nullptr) CU_CHECK(g_cu.CtxDestroy(ctx));
    });
  }
  for (auto& t : pool) t.join();
}

// Captures N ws_graph_node kernels into a graph (stream capture), instantiates it and
// launches it M times; 3 ws_tiny kernels are launched before, outside any graph.
void Graph(int n, int m) {
  Launches(3, "tiny");
  CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < n; ++i) ws_graph_node<<<1, 32, 0, s>>>(g_counter);
  CHECK(cudaStreamEndCapture(s, &graph));
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int j = 0; j < m; ++j) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  int counter = 0;
  CHECK(cudaMemcpy(&counter, g_counter, sizeof counter, cudaMemcpyDeviceToHost));
  std::printf("graph nodes %zu launches %d counter %d\n", nodes, m, counter);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
}

// -c cudaProfilerApi with a ~200 ms kernel still running when the window closes: 20
// ws_outside before, 10 ws_inside + one ws_spin(200 ms) inside, cudaProfilerStop 20 ms after
// the spin kernel was launched (it is running then), 20 ws_outside after.
void ProfilerStraddle() {
  Launches(20, "outside");
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaProfilerStart());
  Launches(10, "inside");
  ws_spin<<<1, 32>>>(200ull * 1000 * 1000);
  CHECK(cudaGetLastError());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto t0 = std::chrono::steady_clock::now();
  CHECK(cudaProfilerStop());
  double stop_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  cudaError_t running = cudaStreamQuery(0);  // cudaErrorNotReady: the spin kernel still runs
  CHECK(cudaDeviceSynchronize());
  Launches(20, "outside");
  CHECK(cudaDeviceSynchronize());
  std::printf("straddle cudaProfilerStop took %.3f ms; spin kernel %s after it\n", stop_ms,
              running == cudaErrorNotReady ? "still running" : "already finished");
}

int Usage() {
  std::fprintf(stderr,
               "usage: ws_repro MODE [ARGS]\n"
               "  launches N | timed N | memory | nvtx | profiler_api | nvtx_capture |\n"
               "  paced SECONDS PERIOD_MS | threads T N | many N | fork | exit_thread |\n"
               "  templated | contexts N K | graph N M | profiler_straddle\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  std::string mode = argv[1];
  auto arg = [&](int i, double def) { return argc > i ? std::atof(argv[i]) : def; };
  setvbuf(stdout, nullptr, _IOLBF, 0);
  // Background jobs of non-interactive shells start with SIGINT ignored; the SIGINT test
  // needs the default disposition (warpscope then flushes and re-raises).
  signal(SIGINT, SIG_DFL);
  CHECK(cudaMalloc(&g_counter, sizeof(int)));
  if (mode == "launches") {
    Launches(static_cast<int>(arg(2, 100)), "tiny");
    CHECK(cudaDeviceSynchronize());
  } else if (mode == "timed") {
    Timed(static_cast<int>(arg(2, 20)));
  } else if (mode == "memory") {
    Memory();
  } else if (mode == "nvtx") {
    Nvtx();
  } else if (mode == "profiler_api") {
    ProfilerApi();
  } else if (mode == "nvtx_capture") {
    NvtxCapture();
  } else if (mode == "paced") {
    Paced(arg(2, 3), static_cast<int>(arg(3, 10)));
  } else if (mode == "threads") {
    Threads(static_cast<int>(arg(2, 4)), static_cast<int>(arg(3, 1000)));
  } else if (mode == "many") {
    Many(static_cast<int>(arg(2, 200000)));
  } else if (mode == "fork") {
    Fork(argv[0]);
  } else if (mode == "exit_thread") {
    ExitFromThread();
  } else if (mode == "templated") {
    Templated();
  } else if (mode == "contexts") {
    Contexts(static_cast<int>(arg(2, 4)), static_cast<int>(arg(3, 1000)));
  } else if (mode == "graph") {
    Graph(static_cast<int>(arg(2, 8)), static_cast<int>(arg(3, 50)));
  } else if (mode == "profiler_straddle") {
    ProfilerStraddle();
  } else {
    return Usage();
  }
  CHECK(cudaFree(g_counter));
  return 0;
}
