// The CUDA runtime API of the CPU execution layer, declared by the toolkit's
// cuda_runtime_api.h and defined here: device memory is host memory, a copy is memcpy, every
// stream runs its work in order at once (so streams and the host are always in sync), and a
// stream that captures records its launches, copies and sets into a graph that
// cudaGraphLaunch replays in order. One emulated device (index 0) of compute capability
// PRIMA_CUDA_EMU_SM (90 by default) with the host's memory. Thread-safe.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cuda/emu/emulator.h"
#include "kernels/cuda/emu/grid.h"
#include "kernels/cuda/emu/launch.h"

using Op = std::function<std::string()>;  // one piece of stream work: "" or a fault report

struct CUgraph_st {
  std::vector<Op> ops;
};
struct CUgraphExec_st {
  std::vector<Op> ops;
};
struct CUstream_st {
  CUgraph_st* capture = nullptr;  // recording into this graph
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};

namespace prima::cudaemu {

namespace {

struct State {
  std::mutex m;
  cudaError_t sticky = cudaSuccess;
  std::string fault;
  std::unordered_map<void*, std::size_t> allocations;
  std::size_t allocated = 0;
};
State& state() {
  static State s;
  return s;
}
thread_local cudaError_t t_last = cudaSuccess;

cudaError_t sticky() {
  std::lock_guard<std::mutex> lk(state().m);
  return state().sticky;
}

// Records a non-sticky error for cudaGetLastError and returns it.
cudaError_t fail(cudaError_t e) {
  t_last = e;
  return e;
}

void on_fault(const std::string& report) {
  std::fprintf(stderr, "prima CUDA emulator: %s\n", report.c_str());
  if (const char* a = std::getenv("PRIMA_CUDA_EMU_ABORT"); a && std::string(a) == "1") std::abort();
  std::lock_guard<std::mutex> lk(state().m);
  state().sticky = cudaErrorLaunchFailure;
  state().fault = report;
}

// Runs `op` now, or records it when `stream` captures.
cudaError_t enqueue(cudaStream_t stream, Op op) {
  if (cudaError_t s = sticky(); s != cudaSuccess) return s;
  if (stream && stream->capture) {
    stream->capture->ops.push_back(std::move(op));
    return cudaSuccess;
  }
  if (std::string f = op(); !f.empty()) {
    on_fault(f);
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

// The device's memory: PRIMA_CUDA_EMU_MEMORY_MB, else the host's.
std::size_t host_memory() {
  if (const char* e = std::getenv("PRIMA_CUDA_EMU_MEMORY_MB"); e && std::atol(e) > 0)
    return std::size_t(std::atol(e)) << 20;
  return std::size_t(sysconf(_SC_PHYS_PAGES)) * std::size_t(sysconf(_SC_PAGESIZE));
}

int emulated_sm() {
  const char* e = std::getenv("PRIMA_CUDA_EMU_SM");
  const int sm = e ? std::atoi(e) : 90;
  return sm >= 50 && sm <= 120 ? sm : 90;
}

}  // namespace

std::string last_fault() {
  std::lock_guard<std::mutex> lk(state().m);
  return state().fault;
}

std::string device_description() {
  return "prima CUDA emulator (CPU, " + std::to_string(grid_workers()) + " workers)";
}

void submit(Launch l, cudaStream_t stream) {
  const dim3 g = l.grid, b = l.block;
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (g.x == 0 || g.y == 0 || g.z == 0 || threads == 0 || threads > 1024 || b.z > 64 ||
      g.y > 65535 || g.z > 65535 || l.shared_bytes > (227u << 10)) {
    fail(cudaErrorInvalidConfiguration);
    return;
  }
  const cudaError_t e = enqueue(stream, [l = std::move(l)] { return run_grid(l); });
  if (e != cudaSuccess) t_last = e;
}

}  // namespace prima::cudaemu

namespace emu = prima::cudaemu;

extern "C" {

cudaError_t cudaGetLastError(void) {
  const cudaError_t s = emu::sticky();
  if (s != cudaSuccess) return s;
  const cudaError_t e = emu::t_last;
  emu::t_last = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  const cudaError_t s = emu::sticky();
  return s != cudaSuccess ? s : emu::t_last;
}

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorStreamCaptureUnsupported:
      return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorIllegalState:
      return "cudaErrorIllegalState";
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (prima CUDA emulator: a kernel could not complete; "
             "see the report on stderr)";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorIllegalState:
      return "the operation cannot be performed in the present state";
    default:
      return "unknown error";
  }
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : emu::fail(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device != 0) return emu::fail(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "%s", emu::device_description().c_str());
  p->totalGlobalMem = emu::host_memory();
  p->major = emu::emulated_sm() / 10;
  p->minor = emu::emulated_sm() % 10;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->multiProcessorCount = emu::grid_workers();
  p->sharedMemPerBlock = 48 << 10;
  p->sharedMemPerBlockOptin = 227 << 10;
  return cudaSuccess;
}

// The attributes the project reads: the SM clock (kHz; the emulator says 1 GHz, a nominal
// figure for a CPU layer whose speed means nothing), the SM count and the compute capability.
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return emu::fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrClockRate:
      *value = 1000000;
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = emu::grid_workers();
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
      *value = emu::emulated_sm() / 10;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = emu::emulated_sm() % 10;
      return cudaSuccess;
    default:
      return emu::fail(cudaErrorInvalidValue);
  }
}

cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  return emu::sticky();
}

cudaError_t cudaDeviceReset(void) {
  std::lock_guard<std::mutex> lk(emu::state().m);
  for (auto& [p, n] : emu::state().allocations) std::free(p);
  emu::state().allocations.clear();
  emu::state().allocated = 0;
  emu::state().sticky = cudaSuccess;
  emu::state().fault.clear();
  emu::t_last = cudaSuccess;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) {
  return emu::sticky();
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (cudaError_t s = emu::sticky(); s != cudaSuccess) return s;
  *p = nullptr;
  // Exactly `bytes` (256-aligned as cudaMalloc's), so AddressSanitizer sees a write past the end.
  void* q = nullptr;
  if (posix_memalign(&q, 256, bytes ? bytes : 1) != 0) return emu::fail(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lk(emu::state().m);
  emu::state().allocations[q] = bytes;
  emu::state().allocated += bytes;
  *p = q;
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  std::lock_guard<std::mutex> lk(emu::state().m);
  auto it = emu::state().allocations.find(p);
  if (it == emu::state().allocations.end()) return emu::fail(cudaErrorInvalidValue);
  emu::state().allocated -= it->second;
  emu::state().allocations.erase(it);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  *p = std::malloc(bytes ? bytes : 1);
  return *p ? cudaSuccess : emu::fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void* p) {
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *total = emu::host_memory();
  std::lock_guard<std::mutex> lk(emu::state().m);
  *free_bytes = *total > emu::state().allocated ? *total - emu::state().allocated : 0;
  return emu::state().sticky;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind) {
  if (cudaError_t s = emu::sticky(); s != cudaSuccess) return s;
  if (n) std::memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind,
                            cudaStream_t stream) {
  return emu::enqueue(stream, [=] {
    if (n) std::memmove(dst, src, n);
    return std::string();
  });
}

cudaError_t cudaMemset(void* p, int v, size_t n) {
  if (cudaError_t s = emu::sticky(); s != cudaSuccess) return s;
  std::memset(p, v, n);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t stream) {
  return emu::enqueue(stream, [=] {
    std::memset(p, v, n);
    return std::string();
  });
}

cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = new CUstream_st;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  return cudaStreamCreate(s);
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!s) return emu::fail(cudaErrorInvalidResourceHandle);
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return emu::sticky();
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  if (!s) return emu::fail(cudaErrorStreamCaptureUnsupported);  // not the legacy stream
  if (s->capture) return emu::fail(cudaErrorIllegalState);
  s->capture = new CUgraph_st;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  if (!s || !s->capture) return emu::fail(cudaErrorIllegalState);
  *graph = s->capture;
  s->capture = nullptr;
  return emu::sticky();
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  *status = s && s->capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return emu::fail(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->ops};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec) return emu::fail(cudaErrorInvalidValue);
  for (const Op& op : exec->ops)
    if (cudaError_t e = emu::enqueue(stream, op); e != cudaSuccess) return e;
  return cudaSuccess;
}

// The number of nodes (the captured launches, copies and sets); the nodes themselves are not
// kept as objects here, so only the count is given (nodes must be null).
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* num_nodes) {
  if (!graph || !num_nodes || nodes) return emu::fail(cudaErrorInvalidValue);
  *num_nodes = graph->ops.size();
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream) {
  if (!e) return emu::fail(cudaErrorInvalidResourceHandle);
  return emu::enqueue(stream, [e] {
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
    return std::string();
  });
}

cudaError_t cudaEventSynchronize(cudaEvent_t) {
  return emu::sticky();
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end || !start->recorded || !end->recorded)
    return emu::fail(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}

}  // extern "C"
