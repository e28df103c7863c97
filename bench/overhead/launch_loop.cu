// ws_launch_loop: a launch-bound loop of tiny kernels for the overhead benchmark.
// usage: ws_launch_loop THREADS LAUNCHES_PER_THREAD
// Each thread launches on its own non-blocking stream; CUDA initialization and a warm-up are
// outside the timed part. Prints one JSON line: {"threads":T,"launches":N,"seconds":S,...}.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

__global__ void ws_bench_tiny(int* p) {
  if (p && threadIdx.x == 0 && blockIdx.x == 0) p[0] += 1;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  long n = argc > 2 ? std::atol(argv[2]) : 100000;
  int* counter = nullptr;
  if (cudaMalloc(&counter, sizeof(int)) != cudaSuccess) return 3;
  std::vector<cudaStream_t> streams(threads);
  for (auto& s : streams) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (auto& s : streams) {
    for (int i = 0; i < 1000; ++i) ws_bench_tiny<<<1, 32, 0, s>>>(nullptr);
  }
  cudaDeviceSynchronize();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (long i = 0; i < n; ++i) ws_bench_tiny<<<1, 32, 0, streams[t]>>>(nullptr);
      cudaStreamSynchronize(streams[t]);
    });
  }
  for (auto& th : pool) th.join();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"threads\":%d,\"launches\":%ld,\"seconds\":%.6f,\"us_per_launch\":%.4f}\n",
              threads, n * threads, s, s * 1e6 / (n * threads));
  cudaFree(counter);
  return 0;
}
