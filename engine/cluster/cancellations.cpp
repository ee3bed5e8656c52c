#include "engine/cluster/cancellations.h"

namespace prima::cluster {

void Cancellations::end(Sequence* s, Leaving how) {
  if (how.outcome == Outcome::kCompleted) s->finish_reason = "stop";
  host_->end(s, how.outcome, std::move(how.reason));
}

bool Cancellations::take_out(RequestId id, Leaving how) {
  Sequence* s = host_->live_sequence(id);
  if (!s) return false;
  if (marked_.count(id)) return true;  // already on its way out
  if (host_->leave_pending(id)) {      // waiting at the engine for a healthy replica
    end(s, std::move(how));
    return true;
  }
  if (host_->in_handoff(id)) {  // KV in transit: the hand-off finds it gone
    end(s, std::move(how));
    return true;
  }
  if (s->replica >= 0 && s->replica < host_->num_replicas()) {
    Replica* r = host_->replica(s->replica);
    if (s->in_flight) {  // on the devices: taken out when the step returns
      marked_.emplace(id, std::move(how));
      return true;
    }
    r->cancel(s);  // frees its KV blocks; false when not queued there (e.g. cache answer)
  }
  end(s, std::move(how));
  return true;
}

bool Cancellations::end_marked(Sequence* s) {
  auto c = marked_.find(s->req.id);
  if (c == marked_.end()) return false;
  Leaving how = std::move(c->second);
  marked_.erase(c);
  end(s, std::move(how));
  return true;
}

void Cancellations::take_off(Replica* r, const std::vector<Sequence*>& seqs) {
  for (Sequence* s : seqs)
    if (marked_.count(s->req.id)) {
      r->cancel(s);
      rt_->post([this, rid = s->req.id] { finish(rid); });
    }
}

void Cancellations::finish(RequestId id) {
  auto c = marked_.find(id);
  if (c == marked_.end()) return;
  Leaving how = std::move(c->second);
  marked_.erase(c);
  Sequence* s = host_->live_sequence(id);
  if (!s) return;      // ended meanwhile (finished or failed in that step)
  if (s->in_flight) {  // in a newer step already: wait for that one
    marked_.emplace(id, std::move(how));
    return;
  }
  if (s->replica >= 0 && s->replica < host_->num_replicas()) host_->replica(s->replica)->cancel(s);
  end(s, std::move(how));
}

}  // namespace prima::cluster
