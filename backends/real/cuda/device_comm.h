// DeviceComm: the transfers of device buffers between the ranks of a TP x PP job, one process
// per GPU, that the GPU forward pass makes: the all-gather of a stage's slices (DeviceForward's
// gathers) and the hidden states sent from one stage to the next. Two implementations:
//   - staged through host memory over the job's Communicator (UCX or MPI): the copy to the
//     host, Communicator::broadcast (one per rank: the all-gather) / send / recv, the copy
//     back. What CI runs on the CUDA execution layer, and the fallback on devices
//     (PRIMA_DEVICE_COMM=host);
//   - NCCL on devices (nccl_comm.cpp, device flavour only): ncclAllGather, ncclSend and
//     ncclRecv on the forward pass's stream, the communicator set up from a unique id
//     that the group's rank 0 broadcasts over the Communicator. libnccl is loaded when first needed
//     (PRIMA_NCCL_LIBRARY, else libnccl.so.2), so prima starts where it is not installed.
// Peers are ranks of the Communicator the DeviceComm was made from. Called by one thread.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backends/real/comm/communicator.h"
#include "engine/core/status.h"

namespace prima::real::cuda {

class DeviceComm {
 public:
  virtual ~DeviceComm() = default;
  // "nccl", "host-staged"
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // out (device, size() x n floats) = every rank's n floats at d, rank r's at out + r * n, on
  // `stream`; complete (in out) for work queued on `stream` after it.
  virtual Status allgather(const float* d, std::size_t n, float* out, cudaStream_t stream) = 0;
  // n floats from / into device memory, to / from `peer`, ordered on `stream`; `tag` matches
  // a send with its recv (the host-staged path; NCCL orders them by call).
  virtual Status send(int peer, int tag, const float* d, std::size_t n, cudaStream_t stream) = 0;
  virtual Status recv(int peer, int tag, float* d, std::size_t n, cudaStream_t stream) = 0;
};

// Staged through host memory over `c` (borrowed; outlives the result).
std::unique_ptr<DeviceComm> make_host_staged_comm(Communicator* c);

// NCCL over the ranks of `c` (collective over them: every rank calls it, in the same order as
// its other NCCL set-ups), on the current device. failed_precondition naming the library when
// libnccl cannot be loaded, or the NCCL error. Device flavour built with nccl.h only
// (PRIMA_DEVICE_NCCL).
Result<std::unique_ptr<DeviceComm>> make_nccl_comm(Communicator* c);

}  // namespace prima::real::cuda
