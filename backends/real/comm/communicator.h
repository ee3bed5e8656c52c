// Communicator: point-to-point messages and collectives between the ranks of one prima job
// (processes launched by mpirun, on one or several hosts). MPI bootstraps the job (ranks,
// exchange of UCX worker addresses) and the bytes move over UCX (tcp and shared memory
// here, RDMA where the hardware has it). Rank 0 owns the engine; other ranks execute.
//
// Collectives are called by every member of the (sub)group in the same order. Messages
// between a pair of ranks with the same tag arrive in send order. Errors (a peer that
// died, a transport failure) come back as Status naming the peer, never hang forever:
// timeout_s bounds every wait. Not thread-safe: one thread per process drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace prima::real {

struct CommOptions {
  double timeout_s = 300;         // longest wait for a peer (NCCL_TIMEOUT-like)
  std::string transport = "ucx";  // "ucx" (default) or "mpi" (MPI point-to-point, fallback)
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual Status send(int peer, int tag, const void* data, std::size_t n) = 0;
  // Receives exactly n bytes (error if the message has another size).
  virtual Status recv(int peer, int tag, void* data, std::size_t n) = 0;
  // Variable-size message (length-prefixed).
  virtual Status send_msg(int peer, int tag, const std::vector<std::uint8_t>& bytes) = 0;
  virtual Result<std::vector<std::uint8_t>> recv_msg(int peer, int tag) = 0;

  // In place over the group; every member ends with the same sum (bit-identical on all).
  virtual Status allreduce_sum(float* data, std::size_t n) = 0;
  virtual Status broadcast(void* data, std::size_t n, int root) = 0;
  virtual Status barrier() = 0;

  // Bytes this process sent to / received from each world rank so far, over every group of
  // its transport (index = world rank; collectives included). Any thread.
  virtual std::vector<std::uint64_t> bytes_sent() const = 0;
  virtual std::vector<std::uint64_t> bytes_received() const = 0;

  // A group of some of this communicator's ranks (listed in group-rank order; this rank must
  // be in it); shares the transport. rank()/size() are within the group.
  virtual Result<std::unique_ptr<Communicator>> group(const std::vector<int>& ranks) = 0;
};

// Whether this process was launched by mpirun (OMPI_COMM_WORLD_SIZE / PMI_SIZE set).
bool launched_by_mpi();
// The world communicator: size 1 without mpirun (no MPI initialised), else MPI_Init +
// UCX endpoints to every rank. Call once per process; finalize with the returned object.
Result<std::unique_ptr<Communicator>> make_world_communicator(const CommOptions& opts = {});
// Ends the whole job at once with `code` (under mpirun the launcher stops every rank; without
// it, this process exits). For a job whose ranks stopped answering: a normal shutdown would
// wait for them.
[[noreturn]] void abort_job(int code);

}  // namespace prima::real
