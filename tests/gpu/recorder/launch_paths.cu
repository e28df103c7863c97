// ws_launch_paths: every way a C++ program launches a kernel, each inside an NVTX range
// `path:<name>` with a known number of kernels, for tests/gpu/recorder/gpu_recorder.sh (each
// kernel must have its launch call, on the thread and in the range that made it); and a paced
// loop of runtime and driver launches for the capture-window checks.
//
//   ws_launch_paths paths [N]     N kernels per path (default 20); prints the expected counts
//   ws_launch_paths steady [--seconds S] [--until FILE] [--period-us P] [--kernels K]
//
// Driver API calls are linked against libcuda (the toolkit's stub at link time); the runtime is
// static, as in the other GPU programs.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CHECK(x)                                                                            \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "ws_launch_paths: %s failed: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(3);                                                                         \
    }                                                                                       \
  } while (0)

#define CU_CHECK(x)                                                                         \
  do {                                                                                      \
    CUresult e_ = (x);                                                                      \
    if (e_ != CUDA_SUCCESS) {                                                               \
      const char* s_ = nullptr;                                                             \
      cuGetErrorString(e_, &s_);                                                            \
      std::fprintf(stderr, "ws_launch_paths: %s failed: %d %s\n", #x, static_cast<int>(e_), \
                   s_ ? s_ : "?");                                                          \
      std::exit(3);                                                                         \
    }                                                                                       \
  } while (0)

// Counts its launches: thread 0 of block 0 adds one, so the counter is the number of kernels.
__global__ void ws_path_kernel(int* counter) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(counter, 1);
}

namespace {

int64_t UnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Launcher {
  int* counter = nullptr;
  cudaStream_t stream = nullptr;
  CUfunction function = nullptr;  // ws_path_kernel, for the driver API

  void* args[1] = {&counter};

  void Setup() {
    CHECK(cudaMalloc(&counter, sizeof(int)));
    CHECK(cudaMemset(counter, 0, sizeof(int)));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaFunction_t f = nullptr;
    CHECK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(ws_path_kernel)));
    function = reinterpret_cast<CUfunction>(f);
    args[0] = &counter;
  }
  void Chevron(cudaStream_t s) {
    ws_path_kernel<<<1, 32, 0, s>>>(counter);
    CHECK(cudaGetLastError());
  }
  void LaunchKernelExC() {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1);
    config.blockDim = dim3(32);
    config.stream = stream;
    CHECK(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(ws_path_kernel), args));
  }
  void Cooperative() {
    CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(ws_path_kernel), dim3(2),
                                      dim3(32), args, 0, stream));
  }
  void CuLaunchKernel(CUstream s) {
    CU_CHECK(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr));
  }
  // As cutlass launches on Hopper: cuLaunchKernelEx with a cluster dimension.
  void CuLaunchKernelEx() {
    CUlaunchAttribute cluster = {};
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = 2;
    cluster.value.clusterDim.y = 1;
    cluster.value.clusterDim.z = 1;
    CUlaunchConfig config = {};
    config.gridDimX = 2;
    config.gridDimY = 1;
    config.gridDimZ = 1;
    config.blockDimX = 32;
    config.blockDimY = 1;
    config.blockDimZ = 1;
    config.hStream = reinterpret_cast<CUstream>(stream);
    config.attrs = &cluster;
    config.numAttrs = 1;
    CU_CHECK(cuLaunchKernelEx(&config, function, args, nullptr));
  }
  int Count() {
    int value = 0;
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(&value, counter, sizeof(int), cudaMemcpyDeviceToHost));
    return value;
  }
};

// Runs `launch` n times inside NVTX range `path:<name>`, the GPU idle before and after.
template <typename Fn>
void Path(const char* name, int n, Fn launch) {
  CHECK(cudaDeviceSynchronize());
  std::string range = std::string("path:") + name;
  nvtxRangePushA(range.c_str());
  for (int i = 0; i < n; ++i) launch();
  CHECK(cudaDeviceSynchronize());
  nvtxRangePop();
}

// A graph of `nodes` kernels made by stream capture (outside the range: capture launches no
// kernel), launched `times` times with cudaGraphLaunch inside `path:graph`.
int GraphPath(Launcher& l, int nodes, int times) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaStreamBeginCapture(l.stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < nodes; ++i) l.Chevron(l.stream);
  CHECK(cudaStreamEndCapture(l.stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphUpload(exec, l.stream));
  Path("graph", times, [&] { CHECK(cudaGraphLaunch(exec, l.stream)); });
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return nodes * times;
}

// The worker's own range and stream: the main thread launches nothing meanwhile.
void WorkerPath(Launcher& l, int n) {
  CHECK(cudaDeviceSynchronize());
  std::thread worker([&l, n] {
    cudaStream_t s = nullptr;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    nvtxRangePushA("path:worker_thread");
    for (int i = 0; i < n; ++i) l.Chevron(s);
    CHECK(cudaStreamSynchronize(s));
    nvtxRangePop();
    CHECK(cudaStreamDestroy(s));
  });
  worker.join();
}

int Paths(int n) {
  Launcher l;
  l.Setup();
  // One launch of each kind outside every range first: module loading and first-call costs.
  l.Chevron(l.stream);
  l.CuLaunchKernel(reinterpret_cast<CUstream>(l.stream));
  const int outside = 2;
  std::vector<std::pair<std::string, int>> expected;
  Path("triple_chevron", n, [&] { l.Chevron(l.stream); });
  expected.emplace_back("path:triple_chevron", n);
  Path("cudaLaunchKernelExC", n, [&] { l.LaunchKernelExC(); });
  expected.emplace_back("path:cudaLaunchKernelExC", n);
  Path("cudaLaunchCooperativeKernel", n, [&] { l.Cooperative(); });
  expected.emplace_back("path:cudaLaunchCooperativeKernel", n);
  Path("cuLaunchKernel", n, [&] { l.CuLaunchKernel(reinterpret_cast<CUstream>(l.stream)); });
  expected.emplace_back("path:cuLaunchKernel", n);
  Path("cuLaunchKernelEx", n, [&] { l.CuLaunchKernelEx(); });
  expected.emplace_back("path:cuLaunchKernelEx", n);
  expected.emplace_back("path:graph", GraphPath(l, 4, n / 4 > 0 ? n / 4 : 1));
  WorkerPath(l, n);
  expected.emplace_back("path:worker_thread", n);

  int total = outside;
  std::printf("{\"expected_kernels\": {");
  for (size_t i = 0; i < expected.size(); ++i) {
    std::printf("%s\"%s\": %d", i ? ", " : "", expected[i].first.c_str(), expected[i].second);
    total += expected[i].second;
  }
  const int counted = l.Count();
  std::printf("}, \"outside_paths\": %d, \"total\": %d, \"counted_on_gpu\": %d, \"pid\": %d}\n",
              outside, total, counted, static_cast<int>(getpid()));
  if (counted != total) {
    std::fprintf(stderr, "ws_launch_paths: the GPU counted %d kernels, %d were launched\n", counted,
                 total);
    return 1;
  }
  return 0;
}

struct SteadyOptions {
  double seconds = 60;
  std::string until;
  int period_us = 2000;
  int kernels = 12;
};

// One step: half the kernels with <<<>>>, half with cuLaunchKernel, inside NVTX range `step`.
void Step(Launcher& l, int kernels) {
  nvtxRangePushA("step");
  for (int i = 0; i < kernels; ++i) {
    if (i % 2 == 0) {
      l.Chevron(l.stream);
    } else {
      l.CuLaunchKernel(reinterpret_cast<CUstream>(l.stream));
    }
  }
  CHECK(cudaStreamSynchronize(l.stream));
  nvtxRangePop();
}

// Paced steps until --seconds pass or --until names a file that exists. Prints one JSON line
// when warmed up ({"ready": pid}) and one at the end.
int Steady(const SteadyOptions& o) {
  Launcher l;
  l.Setup();
  const auto period = std::chrono::microseconds(o.period_us);
  const auto begin = std::chrono::steady_clock::now();
  const int64_t first_step_unix_ns = UnixNs();
  auto next = begin;
  long steps = 0;
  while (std::chrono::steady_clock::now() - begin < std::chrono::duration<double>(o.seconds)) {
    if (!o.until.empty() && access(o.until.c_str(), F_OK) == 0) break;
    Step(l, o.kernels);
    if (++steps == 20) {
      std::printf("{\"ready\": %d, \"unix_ns\": %lld, \"first_step_unix_ns\": %lld}\n",
                  static_cast<int>(getpid()), static_cast<long long>(UnixNs()),
                  static_cast<long long>(first_step_unix_ns));
    }
    next += period;
    std::this_thread::sleep_until(next);
    if (std::chrono::steady_clock::now() > next + 10 * period)
      next = std::chrono::steady_clock::now();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const int counted = l.Count();
  std::printf("{\"steps\": %ld, \"seconds\": %.3f, \"kernels\": %ld, \"counted_on_gpu\": %d}\n",
              steps, seconds, steps * o.kernels, counted);
  return counted == steps * o.kernels ? 0 : 1;
}

int Usage() {
  std::fprintf(stderr,
               "usage: ws_launch_paths paths [N] | steady [--seconds S] [--until FILE] "
               "[--period-us P] [--kernels K]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) return Usage();
  const std::string mode = argv[1];
  if (mode == "paths") return Paths(argc > 2 ? std::atoi(argv[2]) : 20);
  if (mode != "steady") return Usage();
  SteadyOptions o;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage();
    const char* value = argv[++i];
    if (flag == "--seconds") {
      o.seconds = std::atof(value);
    } else if (flag == "--until") {
      o.until = value;
    } else if (flag == "--period-us") {
      o.period_us = std::atoi(value);
    } else if (flag == "--kernels") {
      o.kernels = std::atoi(value);
    } else {
      return Usage();
    }
  }
  if (o.period_us <= 0 || o.kernels <= 0) return Usage();
  return Steady(o);
}
