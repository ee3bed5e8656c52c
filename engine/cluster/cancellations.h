// Cancellations: requests leaving the system before their end (cancel: a client went away;
// finish_early: a stop string was found). A request is taken out wherever it is: waiting at
// the engine for a healthy replica, in a KV hand-off, queued or running on a replica (its KV
// blocks are freed), and ends once with the outcome it leaves with. One in a step on the
// devices cannot be taken out then: it is marked, taken off its replica when that step
// returns (its results are dropped) and ended on the next turn of the loop, or at once if
// the step finished it. It owns the marks of those requests.
// Not thread-safe (engine loop). Borrows the Runtime and the engine through CancelHost.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "engine/cluster/replica.h"
#include "engine/cluster/replica_state.h"

namespace prima::cluster {

// What the cancellations need from the engine (ServingEngine implements it).
class CancelHost : public SequenceHost {
 public:
  virtual int num_replicas() const = 0;
  // Takes the request out of the engine's wait for a healthy replica; false if not there.
  virtual bool leave_pending(RequestId id) = 0;
  // The request's KV is in a hand-off (the hand-off drops it once it finds it ended).
  virtual bool in_handoff(RequestId id) const = 0;
  // Ends the sequence (reported once).
  virtual void end(Sequence* s, Outcome o, std::string reason) = 0;

 protected:
  ~CancelHost() = default;
};

class Cancellations {
 public:
  // How a request leaves: kFailed with the cancel reason, or kCompleted (finish_reason
  // "stop").
  struct Leaving {
    Outcome outcome = Outcome::kFailed;
    std::string reason;
  };

  Cancellations(Runtime* rt, CancelHost* host) : rt_(rt), host_(host) {}
  Cancellations(const Cancellations&) = delete;
  Cancellations& operator=(const Cancellations&) = delete;

  // False when the id is not in the system; true when it ended or is on its way out.
  bool take_out(RequestId id, Leaving how);
  // No request is marked (none waits for its step to return).
  bool empty() const { return marked_.empty(); }
  // On its way out: its tokens are not reported.
  bool leaving(RequestId id) const { return !marked_.empty() && marked_.count(id) > 0; }
  // s reached its end in a step: true when it was leaving (ended here, the way it left).
  bool on_finished(Sequence* s) { return !marked_.empty() && end_marked(s); }
  // A step of replica `r` returned: the marked sequences of that step leave the replica now
  // (before it plans its next step) and end on the next turn of the loop.
  void on_step(Replica* r, const std::vector<Sequence*>& seqs) {
    if (!marked_.empty()) take_off(r, seqs);
  }

 private:
  bool end_marked(Sequence* s);
  void take_off(Replica* r, const std::vector<Sequence*>& seqs);
  void end(Sequence* s, Leaving how);
  void finish(RequestId id);  // a marked sequence's step returned

  Runtime* rt_;
  CancelHost* host_;
  std::unordered_map<RequestId, Leaving> marked_;  // until its step returns
};

}  // namespace prima::cluster
