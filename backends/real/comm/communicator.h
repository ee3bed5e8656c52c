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
// The communicators of one rank of a job of several replicas of the same model, each of k
// ranks (TP x PP), launched as one mpirun job of replicas x k ranks: replica r is job ranks
// [r * k, (r + 1) * k). Job rank 0 runs the
// engine and replica 0's leader; it reaches the leader of each other replica over a relay.
// Every replica and every relay has its own transport (UCX context and worker), so that each
// is driven by its own thread: a replica that stops answering holds up only its own thread.
struct JobComms {
  int job_rank = 0, job_size = 1;
  // This replica's ranks; rank() is this rank within the replica (0: its leader).
  std::unique_ptr<Communicator> replica_comm;
  // Job rank 0: relays[r] (r >= 1) has rank 0 = job rank 0 and rank 1 = replica r's leader
  // (relays[0] is null). The leader of replica r >= 1: relays[0], the same pair. Others: none.
  std::vector<std::unique_ptr<Communicator>> relays;
};
// replicas == 1: make_world_communicator (with or without mpirun). replicas > 1: MPI +
// a UCX transport per replica (timeout opts.timeout_s) and per relay (relay_timeout_s, which
// should cover a replica's own detection of a lost rank, so the relay reports its cause).
// Collective over the job; call once per process, from the main thread.
Result<JobComms> make_job_communicators(const CommOptions& opts, int replicas,
                                        double relay_timeout_s);
// Ends the whole job at once with `code` (under mpirun the launcher stops every rank; without
// it, this process exits). For a job whose ranks stopped answering: a normal shutdown would
// wait for them.
[[noreturn]] void abort_job(int code);

}  // namespace prima::real
