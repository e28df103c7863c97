// ws_other_subscriber: a CUDA program that is itself a CUPTI client. It calls cuptiSubscribe
// (with a callback that counts created contexts) BEFORE its first CUDA call, then launches
// N tiny kernels and exits 0. Run under warpscope's LD_PRELOAD shim, warpscope must find the
// subscriber slot taken, say so in one stderr line and step aside (tests/gpu/gpu_suite.sh).
//
//   ws_other_subscriber [N]      exit 0: subscribed and launched; 4: our own cuptiSubscribe
//                                failed (someone else, e.g. warpscope, took the slot first);
//                                3: a CUDA call failed.
#include <cuda_runtime.h>
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {
std::atomic<int> g_contexts{0};

void CUPTIAPI Callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void*) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    g_contexts.fetch_add(1);
  }
}
}  // namespace

__global__ void ws_other_kernel(int* p) {
  if (p && threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(p, 1);
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 10;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  CUpti_SubscriberHandle handle = nullptr;
  CUptiResult r = cuptiSubscribe(&handle, reinterpret_cast<CUpti_CallbackFunc>(&Callback), nullptr);
  if (r != CUPTI_SUCCESS) {
    const char* s = nullptr;
    cuptiGetResultString(r, &s);
    std::fprintf(stderr, "ws_other_subscriber: cuptiSubscribe failed: %d %s\n", static_cast<int>(r),
                 s ? s : "?");
    return 4;
  }
  cuptiEnableCallback(1, handle, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  std::printf("ws_other_subscriber: subscribed\n");
  int* counter = nullptr;
  cudaError_t e = cudaMalloc(&counter, sizeof(int));
  if (e == cudaSuccess) e = cudaMemset(counter, 0, sizeof(int));
  for (int i = 0; i < n && e == cudaSuccess; ++i) {
    ws_other_kernel<<<1, 32>>>(counter);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  int got = 0;
  if (e == cudaSuccess) e = cudaMemcpy(&got, counter, sizeof got, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "ws_other_subscriber: CUDA error: %s\n", cudaGetErrorString(e));
    return 3;
  }
  cudaFree(counter);
  std::printf("ws_other_subscriber: launched %d counter %d contexts_seen %d\n", n, got,
              g_contexts.load());
  return 0;
}
