// The NCCL DeviceComm (device_comm.h), device flavour only. libnccl is opened with dlopen when
// a job first needs it, so the prima binary starts (and runs --tp 1 --pp 1, or the CPU path)
// where NCCL is not installed; nccl.h gives the types and the prototypes the symbols are
// checked against.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdlib>
#include <string>

#include "backends/real/cuda/device_buffer.h"
#include "backends/real/cuda/device_comm.h"

namespace prima::real::cuda {

namespace {

struct NcclApi {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  std::string error;  // why it could not be loaded; empty when it was
};

template <typename F>
bool bind(void* lib, const char* name, F* f, std::string* error) {
  *f = reinterpret_cast<F>(dlsym(lib, name));
  if (!*f && error->empty()) *error = std::string("no symbol ") + name;
  return *f != nullptr;
}

const NcclApi& nccl() {
  static const NcclApi api = [] {
    NcclApi a;
    const char* env = std::getenv("PRIMA_NCCL_LIBRARY");
    const std::string path = env && *env ? env : "libnccl.so.2";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      a.error = "dlopen " + path + ": " + (e ? e : "failed");
      return a;
    }
    bind(lib, "ncclGetUniqueId", &a.get_unique_id, &a.error);
    bind(lib, "ncclCommInitRank", &a.comm_init_rank, &a.error);
    bind(lib, "ncclCommDestroy", &a.comm_destroy, &a.error);
    bind(lib, "ncclAllGather", &a.all_gather, &a.error);
    bind(lib, "ncclSend", &a.send, &a.error);
    bind(lib, "ncclRecv", &a.recv, &a.error);
    bind(lib, "ncclGetErrorString", &a.error_string, &a.error);
    if (!a.error.empty()) a.error = path + ": " + a.error;
    return a;
  }();
  return api;
}

Status nccl_status(ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess) return ok_status();
  return internal_error("NCCL: " + what + ": " + nccl().error_string(r));
}

class NcclComm final : public DeviceComm {
 public:
  NcclComm(ncclComm_t comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  ~NcclComm() override {
    if (comm_) nccl().comm_destroy(comm_);
  }
  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allgather(const float* d, std::size_t n, float* out, cudaStream_t stream) override {
    return nccl_status(nccl().all_gather(d, out, n, ncclFloat32, comm_, stream),
                       "ncclAllGather of " + std::to_string(n) + " floats per rank");
  }
  Status send(int peer, int, const float* d, std::size_t n, cudaStream_t stream) override {
    return nccl_status(nccl().send(d, n, ncclFloat32, peer, comm_, stream),
                       "ncclSend to rank " + std::to_string(peer));
  }
  Status recv(int peer, int, float* d, std::size_t n, cudaStream_t stream) override {
    return nccl_status(nccl().recv(d, n, ncclFloat32, peer, comm_, stream),
                       "ncclRecv from rank " + std::to_string(peer));
  }

 private:
  ncclComm_t comm_;
  int rank_, size_;
};

}  // namespace

Result<std::unique_ptr<DeviceComm>> make_nccl_comm(Communicator* c) {
  const NcclApi& api = nccl();
  if (!api.error.empty())
    return failed_precondition("NCCL is needed for --tp or --pp above 1 on CUDA devices (" +
                               api.error +
                               "; set PRIMA_NCCL_LIBRARY to its path, or PRIMA_DEVICE_COMM=host)");
  ncclUniqueId id{};
  if (c->rank() == 0) PRIMA_RETURN_IF_ERROR(nccl_status(api.get_unique_id(&id), "ncclGetUniqueId"));
  PRIMA_RETURN_IF_ERROR(c->broadcast(&id, sizeof id, 0));
  ncclComm_t comm = nullptr;
  PRIMA_RETURN_IF_ERROR(nccl_status(api.comm_init_rank(&comm, c->size(), id, c->rank()),
                                    "ncclCommInitRank (rank " + std::to_string(c->rank()) + " of " +
                                        std::to_string(c->size()) + ")"));
  return std::unique_ptr<DeviceComm>(std::make_unique<NcclComm>(comm, c->rank(), c->size()));
}

}  // namespace prima::real::cuda
