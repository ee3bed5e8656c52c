// PendingQueue: the requests waiting at the engine for a healthy replica (health checks:
// every replica that could take them is down and some will come back). Ordered by priority
// class, FIFO within a class. Each waits at most timeout_s; then it leaves the queue and
// on_timeout(seq) runs (the engine fails it with a reason). It owns the entries and their
// timers, not the sequences (the engine does).
// Not thread-safe (engine loop). Borrows the Runtime.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>

#include "engine/cluster/replica.h"

namespace prima::cluster {

class PendingQueue {
 public:
  PendingQueue(Runtime* rt, double timeout_s, std::function<void(Sequence*)> on_timeout)
      : rt_(rt), timeout_s_(timeout_s), on_timeout_(std::move(on_timeout)) {}
  ~PendingQueue() { clear(); }
  PendingQueue(const PendingQueue&) = delete;
  PendingQueue& operator=(const PendingQueue&) = delete;

  // s waits (after the waiting sequences of its priority class and the more urgent ones).
  void add(Sequence* s);
  // Takes the request out (cancelled): its timer is cancelled. False when it is not waiting.
  bool remove(RequestId id);
  // Offers each waiting sequence, in order, to pick: one it gets a replica for leaves the
  // queue (its timer is cancelled) and is submitted there; the others keep their order.
  void drain(const std::function<Replica*(const Sequence&)>& pick);
  // Every entry leaves, timers cancelled (the sequences are the engine's to end).
  void clear();

  std::int64_t size() const { return static_cast<std::int64_t>(q_.size()); }
  bool empty() const { return q_.empty(); }

 private:
  struct Entry {
    Sequence* seq = nullptr;
    TimerId timeout = kNoTimer;
  };
  void on_timeout(RequestId id);

  Runtime* rt_;
  double timeout_s_;
  std::function<void(Sequence*)> on_timeout_;
  std::deque<Entry> q_;
};

}  // namespace prima::cluster
