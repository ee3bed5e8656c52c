// Transport: the byte mover under the communicators (internal to backends/real/comm/).
// A transport connects the ranks of an MPI communicator: MPI_COMM_WORLD, or a part of it in a
// job of several replicas (one replica's ranks, or job rank 0 and one replica's leader): UCX
// tagged messages (ucx_transport.cpp), MPI point-to-point (mpi_transport.cpp) or nothing (size
// 1). Peers are the transport's ranks, called world ranks below (the world of the
// communicators built on it). A message is matched by (source, context, internal flag, tag value):
// contexts keep groups apart, the internal flag keeps collectives apart from user messages, and
// messages with the same match key between a pair of ranks arrive in send order.
//
// Owns MPI for the process: the last owner of the world transport tears the transport down
// and calls MPI_Finalize. Not thread-safe: one thread drives it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace prima::real::comm {

inline constexpr std::uint32_t kMaxTagValue = 1u << 30;  // user tags: [0, 2^30)
inline constexpr std::uint32_t kMaxContexts = 1u << 15;  // context ids per process
inline constexpr int kMaxWorldSize = 1 << 16;            // source rank bits of a UCX tag

struct Tag {
  std::uint32_t ctx = 0;    // 0: the world; groups get fresh ids (see group_communicator.cpp)
  bool internal = false;    // collectives and group set-up
  std::uint32_t value = 0;  // < kMaxTagValue
};

// One point-to-point operation. A recv must receive exactly n bytes.
struct Op {
  enum class Kind { kSend, kRecv };
  Kind kind = Kind::kSend;
  int peer = 0;  // world rank, never this rank
  Tag tag;
  void* data = nullptr;
  std::size_t n = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* name() const = 0;  // "ucx", "mpi", "self"

  // Starts every op and waits until all are complete, at most timeout_s in all. On error or
  // timeout, the status names the op, the peer and the tag; pending recvs are cancelled.
  virtual Status run(Op* ops, std::size_t count) = 0;
  // run(), then counts the bytes of the completed ops by peer (bytes_sent, bytes_received).
  Status run_counted(Op* ops, std::size_t count);
  // Bytes sent to and received from each world rank so far (index = rank). Any thread.
  std::vector<std::uint64_t> bytes_sent() const;
  std::vector<std::uint64_t> bytes_received() const;

  // Opens a context for a group of world ranks (collective over those ranks); the MPI
  // transport makes a communicator for it. close_context releases it.
  virtual Status open_context(std::uint32_t ctx, const std::vector<int>& world_ranks) {
    return ok_status();
  }
  virtual void close_context(std::uint32_t ctx) {}

  // The lowest context id not used by this process yet (group set-up agrees on the max).
  std::uint32_t next_free_context() const { return next_free_ctx_; }
  void mark_context_used(std::uint32_t ctx) {
    if (ctx >= next_free_ctx_) next_free_ctx_ = ctx + 1;
  }

 private:
  std::uint32_t next_free_ctx_ = 1;
  // By world rank, sized on first use (the driving thread writes, any thread reads).
  std::unique_ptr<std::atomic<std::uint64_t>[]> sent_, received_;
  std::atomic<int> counted_size_{0};
  // The counts of sent_ or received_, read after counted_size_ says they exist.
  std::vector<std::uint64_t> read_counts(
      const std::unique_ptr<std::atomic<std::uint64_t>[]>& counts) const;
};

// "send to rank 3 (ctx 0, tag 7, 4096 bytes)": an op named for error messages.
std::string describe(const Op& op);
// "1.5" for 1.5 seconds (up to 3 significant digits).
std::string seconds_text(double s);

}  // namespace prima::real::comm
