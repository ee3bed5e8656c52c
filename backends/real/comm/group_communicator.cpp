// GroupCommunicator: point-to-point messages and group creation (see group_communicator.h).
// Single-threaded.
#include "backends/real/comm/group_communicator.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

namespace prima::real::comm {

Status Transport::run_counted(Op* ops, std::size_t count) {
  Status st = run(ops, count);
  if (!st.ok()) return st;
  if (counted_size_.load(std::memory_order_acquire) == 0) {
    const int n = size();
    sent_ = std::make_unique<std::atomic<std::uint64_t>[]>(n);
    received_ = std::make_unique<std::atomic<std::uint64_t>[]>(n);
    counted_size_.store(n, std::memory_order_release);
  }
  for (std::size_t i = 0; i < count; ++i) {
    auto& c = ops[i].kind == Op::Kind::kSend ? sent_[ops[i].peer] : received_[ops[i].peer];
    c.fetch_add(ops[i].n, std::memory_order_relaxed);
  }
  return st;
}

std::vector<std::uint64_t> Transport::read_counts(
    const std::unique_ptr<std::atomic<std::uint64_t>[]>& counts) const {
  std::vector<std::uint64_t> v(static_cast<std::size_t>(size()), 0);
  const int n = counted_size_.load(std::memory_order_acquire);  // counts exist once n > 0
  for (int r = 0; r < n; ++r) v[r] = counts[r].load(std::memory_order_relaxed);
  return v;
}

std::vector<std::uint64_t> Transport::bytes_sent() const {
  return read_counts(sent_);
}

std::vector<std::uint64_t> Transport::bytes_received() const {
  return read_counts(received_);
}

std::string describe(const Op& op) {
  return std::string(op.kind == Op::Kind::kSend ? "send to" : "recv from") + " rank " +
         std::to_string(op.peer) + " (ctx " + std::to_string(op.tag.ctx) +
         (op.tag.internal ? ", internal tag " : ", tag ") + std::to_string(op.tag.value) + ", " +
         std::to_string(op.n) + " bytes)";
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s);
  return buf;
}

GroupCommunicator::GroupCommunicator(std::shared_ptr<Transport> transport,
                                     std::vector<int> world_ranks, std::uint32_t ctx)
    : transport_(std::move(transport)), world_(std::move(world_ranks)), ctx_(ctx) {
  auto it = std::find(world_.begin(), world_.end(), transport_->rank());
  rank_ = static_cast<int>(it - world_.begin());
}

GroupCommunicator::~GroupCommunicator() {
  if (ctx_ != 0) transport_->close_context(ctx_);
}

Status GroupCommunicator::annotate(Status st, const std::string& what) const {
  if (st.ok()) return st;
  std::string where = what + " on rank " + std::to_string(rank_) + "/" + std::to_string(size());
  if (ctx_ != 0) {
    where += " of group [";
    for (std::size_t i = 0; i < world_.size(); ++i)
      where += (i ? "," : "") + std::to_string(world_[i]);
    where += "] (world ranks)";
  }
  return Status(st.code(), where + ": " + st.message());
}

Status GroupCommunicator::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= size())
    return invalid_argument(std::string(what) + ": peer " + std::to_string(peer) +
                            " is not a rank of this communicator (size " + std::to_string(size()) +
                            ")");
  if (peer == rank_)
    return invalid_argument(std::string(what) + ": peer " + std::to_string(peer) +
                            " is this rank; a communicator does not message itself");
  return ok_status();
}

Status GroupCommunicator::p2p(Op::Kind kind, int peer, int tag, void* data, std::size_t n) {
  const char* what = kind == Op::Kind::kSend ? "send" : "recv";
  PRIMA_RETURN_IF_ERROR(check_peer(peer, what));
  if (tag < 0 || static_cast<std::uint32_t>(tag) >= kMaxTagValue)
    return invalid_argument(std::string(what) + ": tag " + std::to_string(tag) +
                            " outside [0, 2^30)");
  if (data == nullptr && n > 0) return invalid_argument(std::string(what) + ": null buffer");
  Op op{kind, world_[peer], Tag{ctx_, false, static_cast<std::uint32_t>(tag)}, data, n};
  return annotate(transport_->run_counted(&op, 1), what);
}

Status GroupCommunicator::send(int peer, int tag, const void* data, std::size_t n) {
  return p2p(Op::Kind::kSend, peer, tag, const_cast<void*>(data), n);
}

Status GroupCommunicator::recv(int peer, int tag, void* data, std::size_t n) {
  return p2p(Op::Kind::kRecv, peer, tag, data, n);
}

Status GroupCommunicator::send_msg(int peer, int tag, const std::vector<std::uint8_t>& bytes) {
  std::uint64_t len = bytes.size();
  PRIMA_RETURN_IF_ERROR(send(peer, tag, &len, sizeof len));
  return send(peer, tag, bytes.data(), bytes.size());
}

Result<std::vector<std::uint8_t>> GroupCommunicator::recv_msg(int peer, int tag) {
  std::uint64_t len = 0;
  PRIMA_RETURN_IF_ERROR(recv(peer, tag, &len, sizeof len));
  std::vector<std::uint8_t> bytes(len);
  PRIMA_RETURN_IF_ERROR(recv(peer, tag, bytes.data(), bytes.size()));
  return bytes;
}

Status GroupCommunicator::exchange(std::uint32_t tag, int to, const void* send_data,
                                   std::size_t send_n, int from, void* recv_data,
                                   std::size_t recv_n) {
  Op ops[2];
  std::size_t count = 0;
  if (to >= 0)
    ops[count++] =
        Op{Op::Kind::kSend, world_[to], Tag{ctx_, true, tag}, const_cast<void*>(send_data), send_n};
  if (from >= 0)
    ops[count++] = Op{Op::Kind::kRecv, world_[from], Tag{ctx_, true, tag}, recv_data, recv_n};
  return transport_->run_counted(ops, count);
}

// Group set-up: the members agree on a context id no member has used (the max of their
// next free ids, gathered at the first member and sent back), so two live groups sharing a
// pair of ranks never share a context. Members call group() in the same order.
Result<std::unique_ptr<Communicator>> GroupCommunicator::group(const std::vector<int>& ranks) {
  if (ranks.empty()) return invalid_argument("group: empty list of ranks");
  std::set<int> seen;
  std::vector<int> world;
  int me = -1;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= size())
      return invalid_argument("group: rank " + std::to_string(r) + " (index " + std::to_string(i) +
                              ") outside [0, " + std::to_string(size()) + ")");
    if (!seen.insert(r).second)
      return invalid_argument("group: rank " + std::to_string(r) + " listed twice");
    if (r == rank_) me = static_cast<int>(i);
    world.push_back(world_[r]);
  }
  if (me < 0)
    return invalid_argument("group: this rank (" + std::to_string(rank_) + ") is not in the list");
  std::uint32_t ctx = transport_->next_free_context();
  const Tag tag{ctx_, true, kGroupSetup};
  if (me == 0) {
    for (std::size_t i = 1; i < world.size(); ++i) {
      std::uint32_t other = 0;
      Op op{Op::Kind::kRecv, world[i], tag, &other, sizeof other};
      PRIMA_RETURN_IF_ERROR(annotate(transport_->run_counted(&op, 1), "group set-up"));
      ctx = std::max(ctx, other);
    }
    for (std::size_t i = 1; i < world.size(); ++i) {
      Op op{Op::Kind::kSend, world[i], tag, &ctx, sizeof ctx};
      PRIMA_RETURN_IF_ERROR(annotate(transport_->run_counted(&op, 1), "group set-up"));
    }
  } else {
    Op ops[2] = {{Op::Kind::kSend, world[0], tag, &ctx, sizeof ctx},
                 {Op::Kind::kRecv, world[0], tag, &ctx, sizeof ctx}};
    PRIMA_RETURN_IF_ERROR(annotate(transport_->run_counted(&ops[0], 1), "group set-up"));
    PRIMA_RETURN_IF_ERROR(annotate(transport_->run_counted(&ops[1], 1), "group set-up"));
  }
  if (ctx >= kMaxContexts)
    return Status(StatusCode::kResourceExhausted,
                  "group: all " + std::to_string(kMaxContexts) + " context ids used");
  transport_->mark_context_used(ctx);
  PRIMA_RETURN_IF_ERROR(annotate(transport_->open_context(ctx, world), "group set-up"));
  return std::unique_ptr<Communicator>(
      std::make_unique<GroupCommunicator>(transport_, std::move(world), ctx));
}

}  // namespace prima::real::comm
