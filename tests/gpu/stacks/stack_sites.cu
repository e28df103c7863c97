// A C++ CUDA program whose host syncs are known, for native stacks: each blocking call is made
// by a function of its own (static, not exported), so the trace's native stack of the call
// must name that function. Checked by check_native_stacks.py.
//
//   ws_stack_sites [ROUNDS]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

__global__ void Spin(float* x, int n, int iterations) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < iterations; ++k) v = v * 0.999f + 0.001f;
  x[i] = v;
}

void QueueWork(float* x, int n) { Spin<<<(n + 255) / 256, 256>>>(x, n, 20000); }

// Each call's result is checked, as real programs do: that also keeps the call from being
// the function's last act (a tail call leaves no frame of the caller on the stack).
void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

__attribute__((noinline)) void WaitForTheDevice(float* x, int n) {
  QueueWork(x, n);
  Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

__attribute__((noinline)) void ReadResultsBack(float* x, int n, std::vector<float>* host) {
  QueueWork(x, n);
  Check(cudaMemcpy(host->data(), x, sizeof(float) * n, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

__attribute__((noinline)) void WaitForTheStream(float* x, int n, cudaStream_t s) {
  Spin<<<(n + 255) / 256, 256, 0, s>>>(x, n, 20000);
  Check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 10;
  const int n = 1 << 20;
  float* x = nullptr;
  if (cudaMalloc(&x, sizeof(float) * n) != cudaSuccess) return 1;
  cudaMemset(x, 0, sizeof(float) * n);
  cudaStream_t s;
  cudaStreamCreate(&s);
  std::vector<float> host(n);
  for (int r = 0; r < rounds; ++r) {
    WaitForTheDevice(x, n);
    ReadResultsBack(x, n, &host);
    WaitForTheStream(x, n, s);
  }
  cudaStreamDestroy(s);
  cudaFree(x);
  std::printf("rounds %d value %f\n", rounds, host[0]);
  return 0;
}
