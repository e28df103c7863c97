// ws_hostile: one CUDA program for the orders and endings people really use, run under
// warpscope by tests/gpu/gpu_hostile.sh. Every run prints "ws_hostile: done" on stdout just
// before it ends (except where it is killed), and ends with --status unless the ending is a
// signal, so the matrix can check that the program's own output and exit status survive.
//
//   ws_hostile [--nvtx-first] [--nvtx-only] [--no-cuda] [--kernels N] [--kernel-us U]
//              [--sleep-ms M] [--run-ms T] [--threads K] [--second-gpu-after-ms T]
//              [--fork none|child|exec]
//              [--end return|exit|_exit|thread_exit|sigterm|sigkill|abort|abort_thread|segv]
//              [--status S]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "ws_hostile: %s failed: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(3);                                                                   \
    }                                                                                 \
  } while (0)

struct Options {
  bool nvtx_first = false;
  bool nvtx_only = false;
  bool no_cuda = false;
  int kernels = 20;
  int kernel_us = 100;
  int sleep_ms = 0;
  int run_ms = 0;
  int threads = 1;
  int second_gpu_after_ms = -1;  // >= 0: one more thread starts on GPU 1 after this long
  std::string fork_mode = "none";
  std::string end = "return";
  int status = 0;
};

__global__ void ws_hostile_spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

double Ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

// Launches kernels on this thread's own stream: `count` of them, or until `run_ms` passed.
int Launch(const Options& o, std::chrono::steady_clock::time_point t0) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int n = 0;
  while (o.run_ms > 0 ? Ms(t0) < o.run_ms : n < o.kernels) {
    ws_hostile_spin<<<4, 64, 0, s>>>(static_cast<unsigned long long>(o.kernel_us) * 1000ull);
    ++n;
    if (n % 64 == 0) CHECK(cudaStreamSynchronize(s));
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  return n;
}

[[noreturn]] void End(const Options& o) {
  std::fflush(stdout);
  if (o.end == "exit") std::exit(o.status);
  if (o.end == "_exit") _exit(o.status);
  if (o.end == "sigterm") {
    kill(getpid(), SIGTERM);
    pause();
  }
  if (o.end == "sigkill") {
    kill(getpid(), SIGKILL);
    pause();
  }
  if (o.end == "abort") std::abort();
  if (o.end == "segv") {
    volatile int* nowhere = nullptr;
    *nowhere = 1;  // a fault: SIGSEGV, raised again by the instruction once handlers return
  }
  if (o.end == "abort_thread") {
    // As NCCL's watchdog ends a process: abort() on a thread of its own while the main thread
    // still launches kernels.
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::abort();
    }).detach();
    for (;;) Launch(Options{}, std::chrono::steady_clock::now());
  }
  if (o.end == "thread_exit") {
    // exit() from another thread while the main thread waits (it must not use CUDA then:
    // exit() tears the CUDA runtime down under it, a crash of the program's own making).
    std::thread([&o] { std::exit(o.status); }).detach();
    for (;;) pause();
  }
  std::exit(o.status);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ws_hostile: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--nvtx-first") o.nvtx_first = true;
    else if (a == "--nvtx-only") o.nvtx_only = true;
    else if (a == "--no-cuda") o.no_cuda = true;
    else if (a == "--kernels") o.kernels = std::atoi(next());
    else if (a == "--kernel-us") o.kernel_us = std::atoi(next());
    else if (a == "--sleep-ms") o.sleep_ms = std::atoi(next());
    else if (a == "--run-ms") o.run_ms = std::atoi(next());
    else if (a == "--threads") o.threads = std::max(1, std::atoi(next()));
    else if (a == "--second-gpu-after-ms") o.second_gpu_after_ms = std::atoi(next());
    else if (a == "--fork") o.fork_mode = next();
    else if (a == "--end") o.end = next();
    else if (a == "--status") o.status = std::atoi(next());
    else {
      std::fprintf(stderr, "ws_hostile: unknown argument %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  Options o = Parse(argc, argv);
  if (o.no_cuda) {
    std::printf("ws_hostile: done no-cuda\n");
    if (o.end == "return") return o.status;
    End(o);
  }
  if (o.nvtx_first || o.nvtx_only) nvtxRangePushA("hostile_setup");
  if (o.nvtx_only) {
    nvtxMarkA("hostile_mark");
    nvtxRangePushA("hostile_inner");
    nvtxRangePop();
    nvtxRangePop();
    std::printf("ws_hostile: done nvtx-only\n");
    if (o.end == "return") return o.status;
    End(o);
  }
  CHECK(cudaFree(nullptr));  // CUDA initialised, context created
  if (o.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.sleep_ms));
  nvtxRangePushA("hostile_work");
  std::vector<std::thread> workers;
  std::vector<int> counts(o.threads, 0);
  for (int t = 1; t < o.threads; ++t) {
    workers.emplace_back([&, t] { counts[t] = Launch(o, t0); });
  }
  int second_gpu_count = 0;
  if (o.second_gpu_after_ms >= 0) {
    // A context on another GPU created while the first one is busy (and, under PM sampling,
    // already sampled and decoded).
    int devices = 0;
    CHECK(cudaGetDeviceCount(&devices));
    if (devices < 2) {
      std::fprintf(stderr, "ws_hostile: --second-gpu-after-ms needs 2 GPUs, found %d\n", devices);
      return 2;
    }
    workers.emplace_back([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.second_gpu_after_ms));
      CHECK(cudaSetDevice(1));
      second_gpu_count = Launch(o, t0);
    });
  }
  counts[0] = Launch(o, t0);
  for (auto& w : workers) w.join();
  nvtxRangePop();
  if (o.nvtx_first) nvtxRangePop();
  int total = second_gpu_count;
  for (int c : counts) total += c;

  if (o.fork_mode == "child" || o.fork_mode == "exec") {
    pid_t child = fork();
    if (child == 0) {
      if (o.fork_mode == "exec") {
        execl(argv[0], argv[0], "--kernels", "5", "--status", "0", (char*)nullptr);
        _exit(127);
      }
      // A child that does no CUDA work (CUDA is unusable after fork) and exits normally.
      std::printf("ws_hostile: child done\n");
      std::fflush(stdout);
      std::exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::fprintf(stderr, "ws_hostile: child ended with status %d\n", st);
      o.status = 4;
    }
  }
  std::printf("ws_hostile: done kernels=%d ms=%.0f\n", total, Ms(t0));
  if (o.end == "return") return o.status;
  End(o);
}
