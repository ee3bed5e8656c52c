// Collectives of GroupCommunicator over its point-to-point messages (see communicator.h).
// allreduce_sum ends bit-identical on every member: the ring (large n) reduces each chunk in
// one place and copies it around; recursive doubling (small n, power-of-two groups) adds the
// same two operands on both partners (IEEE addition is commutative); otherwise the sum is
// made on group rank 0 in rank order and broadcast. Single-threaded.
#include <cstring>

#include "backends/real/comm/group_communicator.h"

namespace prima::real::comm {
namespace {

// Below this many bytes an allreduce is latency-bound: log2(p) whole-vector exchanges beat
// the ring's 2(p-1) chunk steps.
constexpr std::size_t kSmallAllreduceBytes = 64 * 1024;

bool is_power_of_two(int p) {
  return p > 0 && (p & (p - 1)) == 0;
}

}  // namespace

Status GroupCommunicator::allreduce_sum(float* data, std::size_t n) {
  if (size() == 1 || n == 0) return ok_status();
  if (data == nullptr) return invalid_argument("allreduce_sum: null buffer");
  const std::string what = "allreduce_sum of " + std::to_string(n) + " floats";
  const int p = size();
  if (n * sizeof(float) <= kSmallAllreduceBytes || n < static_cast<std::size_t>(p)) {
    if (is_power_of_two(p)) return annotate(allreduce_recursive_doubling(data, n), what);
    return annotate(allreduce_reduce_broadcast(data, n), what);
  }
  return annotate(allreduce_ring(data, n), what);
}

Status GroupCommunicator::allreduce_recursive_doubling(float* data, std::size_t n) {
  std::vector<float> other(n);
  for (int mask = 1; mask < size(); mask <<= 1) {
    const int partner = rank_ ^ mask;
    PRIMA_RETURN_IF_ERROR(exchange(kAllreduce, partner, data, n * sizeof(float), partner,
                                   other.data(), n * sizeof(float)));
    for (std::size_t i = 0; i < n; ++i) data[i] += other[i];
  }
  return ok_status();
}

Status GroupCommunicator::allreduce_reduce_broadcast(float* data, std::size_t n) {
  const std::size_t bytes = n * sizeof(float);
  if (rank_ == 0) {
    std::vector<float> other(n);
    for (int r = 1; r < size(); ++r) {
      PRIMA_RETURN_IF_ERROR(exchange(kAllreduce, -1, nullptr, 0, r, other.data(), bytes));
      for (std::size_t i = 0; i < n; ++i) data[i] += other[i];
    }
  } else {
    PRIMA_RETURN_IF_ERROR(exchange(kAllreduce, 0, data, bytes, -1, nullptr, 0));
  }
  return broadcast(data, bytes, 0);
}

Status GroupCommunicator::allreduce_ring(float* data, std::size_t n) {
  const int p = size();
  auto begin = [&](int c) { return n * static_cast<std::size_t>(c) / static_cast<std::size_t>(p); };
  auto length = [&](int c) { return begin(c + 1) - begin(c); };
  const int next = (rank_ + 1) % p, prev = (rank_ + p - 1) % p;
  std::vector<float> incoming(n / static_cast<std::size_t>(p) + 1);
  // Reduce-scatter: after p-1 steps this rank holds the full sum of chunk (rank+1) % p.
  for (int s = 0; s < p - 1; ++s) {
    const int send_c = (rank_ - s + p) % p, recv_c = (rank_ - s - 1 + p) % p;
    PRIMA_RETURN_IF_ERROR(exchange(kAllreduce, next, data + begin(send_c),
                                   length(send_c) * sizeof(float), prev, incoming.data(),
                                   length(recv_c) * sizeof(float)));
    float* dst = data + begin(recv_c);
    for (std::size_t i = 0, len = length(recv_c); i < len; ++i) dst[i] += incoming[i];
  }
  // All-gather: pass the finished chunks around the ring (copies, so all ranks agree).
  for (int s = 0; s < p - 1; ++s) {
    const int send_c = (rank_ + 1 - s + p) % p, recv_c = (rank_ - s + p) % p;
    PRIMA_RETURN_IF_ERROR(exchange(kAllreduce, next, data + begin(send_c),
                                   length(send_c) * sizeof(float), prev, data + begin(recv_c),
                                   length(recv_c) * sizeof(float)));
  }
  return ok_status();
}

// Binomial tree from the root: log2(p) rounds.
Status GroupCommunicator::broadcast(void* data, std::size_t n, int root) {
  if (root < 0 || root >= size())
    return invalid_argument("broadcast: root " + std::to_string(root) + " outside [0, " +
                            std::to_string(size()) + ")");
  if (data == nullptr && n > 0) return invalid_argument("broadcast: null buffer");
  const int p = size();
  if (p == 1) return ok_status();
  const std::string what =
      "broadcast of " + std::to_string(n) + " bytes from root " + std::to_string(root);
  const int vr = (rank_ - root + p) % p;
  int mask = 1;
  while (mask < p) {
    if (vr & mask) {
      const int from = (vr - mask + root) % p;
      PRIMA_RETURN_IF_ERROR(annotate(exchange(kBroadcast, -1, nullptr, 0, from, data, n), what));
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < p) {
      const int to = (vr + mask + root) % p;
      PRIMA_RETURN_IF_ERROR(annotate(exchange(kBroadcast, to, data, n, -1, nullptr, 0), what));
    }
  }
  return ok_status();
}

// Dissemination barrier: ceil(log2(p)) rounds of empty messages.
Status GroupCommunicator::barrier() {
  const int p = size();
  for (int k = 1; k < p; k <<= 1) {
    PRIMA_RETURN_IF_ERROR(
        annotate(exchange(kBarrier, (rank_ + k) % p, nullptr, 0, (rank_ - k + p) % p, nullptr, 0),
                 "barrier"));
  }
  return ok_status();
}

}  // namespace prima::real::comm
