// GroupCommunicator: the Communicator over a Transport for an ordered set of world ranks
// (the world itself, or a group of it) with its own context id, so messages of different
// groups never match each other. Point-to-point calls live in group_communicator.cpp,
// collectives (allreduce_sum, broadcast, barrier) in collectives.cpp.
//
// Shares the transport (shared_ptr) with its parent and subgroups; the last owner tears the
// transport down (and MPI with it). Not thread-safe: one thread per process drives all of
// the communicators of a transport.
#pragma once

#include <memory>
#include <vector>

#include "backends/real/comm/communicator.h"
#include "backends/real/comm/transport.h"

namespace prima::real::comm {

class GroupCommunicator final : public Communicator {
 public:
  // world_ranks[i] is the world rank of group rank i; this process must be among them.
  GroupCommunicator(std::shared_ptr<Transport> transport, std::vector<int> world_ranks,
                    std::uint32_t ctx);
  ~GroupCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(world_.size()); }

  Status send(int peer, int tag, const void* data, std::size_t n) override;
  Status recv(int peer, int tag, void* data, std::size_t n) override;
  Status send_msg(int peer, int tag, const std::vector<std::uint8_t>& bytes) override;
  Result<std::vector<std::uint8_t>> recv_msg(int peer, int tag) override;

  Status allreduce_sum(float* data, std::size_t n) override;
  Status broadcast(void* data, std::size_t n, int root) override;
  Status barrier() override;

  Result<std::unique_ptr<Communicator>> group(const std::vector<int>& ranks) override;
  std::vector<std::uint64_t> bytes_sent() const override { return transport_->bytes_sent(); }
  std::vector<std::uint64_t> bytes_received() const override {
    return transport_->bytes_received();
  }

 private:
  // Internal tags of the collectives (internal flag set, so never equal to a user tag).
  enum InternalTag : std::uint32_t { kAllreduce = 1, kBroadcast, kBarrier, kGroupSetup };

  Status check_peer(int peer, const char* what) const;
  // One user message to/from a group rank.
  Status p2p(Op::Kind kind, int peer, int tag, void* data, std::size_t n);
  // Sends to group rank `to` and receives from group rank `from` at once (either may be -1).
  Status exchange(std::uint32_t tag, int to, const void* send_data, std::size_t send_n, int from,
                  void* recv_data, std::size_t recv_n);
  // Adds "<what> in group [..]" context to a transport error.
  Status annotate(Status st, const std::string& what) const;

  Status allreduce_recursive_doubling(float* data, std::size_t n);
  Status allreduce_ring(float* data, std::size_t n);
  Status allreduce_reduce_broadcast(float* data, std::size_t n);

  std::shared_ptr<Transport> transport_;
  std::vector<int> world_;  // group rank -> world rank
  int rank_ = 0;
  std::uint32_t ctx_ = 0;
};

}  // namespace prima::real::comm
