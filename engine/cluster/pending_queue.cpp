#include "engine/cluster/pending_queue.h"

#include <algorithm>

namespace prima::cluster {

void PendingQueue::add(Sequence* s) {
  Entry e;
  e.seq = s;
  const RequestId id = s->req.id;
  e.timeout = rt_->at(rt_->now() + timeout_s_, [this, id] { on_timeout(id); });
  auto pos = std::find_if(q_.begin(), q_.end(), [s](const Entry& q) {
    return q.seq->req.priority > s->req.priority;  // FIFO within a class
  });
  q_.insert(pos, e);
}

bool PendingQueue::remove(RequestId id) {
  auto it =
      std::find_if(q_.begin(), q_.end(), [id](const Entry& q) { return q.seq->req.id == id; });
  if (it == q_.end()) return false;
  rt_->cancel(it->timeout);
  q_.erase(it);
  return true;
}

void PendingQueue::on_timeout(RequestId id) {
  auto it =
      std::find_if(q_.begin(), q_.end(), [id](const Entry& q) { return q.seq->req.id == id; });
  if (it == q_.end()) return;
  Sequence* s = it->seq;
  q_.erase(it);
  on_timeout_(s);
}

void PendingQueue::drain(const std::function<Replica*(const Sequence&)>& pick) {
  if (q_.empty()) return;
  std::deque<Entry> waiting;
  waiting.swap(q_);
  for (const Entry& e : waiting) {
    if (Replica* r = pick(*e.seq)) {
      rt_->cancel(e.timeout);
      r->submit(e.seq);
    } else {
      q_.push_back(e);  // keeps the order
    }
  }
}

void PendingQueue::clear() {
  for (const Entry& e : q_) rt_->cancel(e.timeout);
  q_.clear();
}

}  // namespace prima::cluster
