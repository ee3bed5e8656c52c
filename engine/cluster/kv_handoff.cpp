#include "engine/cluster/kv_handoff.h"

#include <fmt/format.h>

#include <algorithm>

namespace prima::cluster {

int& KvHandoff::heading(ReplicaId id) {
  if (static_cast<std::size_t>(id) >= heading_.size()) heading_.resize(id + 1);
  return heading_[id];
}

void KvHandoff::start(Sequence* s) {
  Replica* src = host_->replica(s->replica);
  if (!src->cancel(s)) return;  // still in a step (cannot happen after complete)
  Handoff& h = handoffs_[s->req.id];
  h.src = s->replica;
  host_->maybe_remove_later(h.src);
  int idx = router_->pick(*pool_, *s);
  if (idx < 0) {
    handoffs_.erase(s->req.id);
    host_->fail(s, "no decode replica can hold the sequence");
    return;
  }
  transfer(s->req.id, (*pool_)[idx]->id());
}

void KvHandoff::transfer(RequestId id, ReplicaId dst) {
  Sequence* s = host_->live_sequence(id);
  Handoff& h = handoffs_[id];
  h.tried.push_back(dst);
  h.status = ok_status();
  ++heading(dst);
  ++counters_->handoffs;
  const double bytes = double(s->num_computed) * opts_.kv_bytes_per_token;
  counters_->handoff_bytes += bytes;
  std::vector<DeviceId> from, to;
  for (const auto& st : host_->replica_devices(h.src))
    from.insert(from.end(), st.begin(), st.end());
  for (const auto& st : host_->replica_devices(dst)) to.insert(to.end(), st.begin(), st.end());
  if (!fabric_ || bytes <= 0 || from.empty() || to.empty()) {
    h.pending = 1;
    rt_->post([this, id, dst] { on_done(id, dst, ok_status()); });
    return;
  }
  // Each GPU holds its share of the KV (its layers and heads): one flow per GPU pair.
  const std::size_t flows = std::max(from.size(), to.size());
  h.pending = static_cast<int>(flows);
  for (std::size_t k = 0; k < flows; ++k)
    fabric_->transfer(from[k % from.size()], to[k % to.size()], bytes / double(flows),
                      [this, id, dst](Status st) { on_done(id, dst, std::move(st)); });
}

void KvHandoff::on_done(RequestId id, ReplicaId dst, Status st) {
  auto hit = handoffs_.find(id);
  if (hit == handoffs_.end()) return;
  Handoff& h = hit->second;
  if (!st.ok() && h.status.ok()) h.status = std::move(st);
  if (--h.pending > 0) return;
  --heading(dst);
  Sequence* s = host_->live_sequence(id);
  if (!s) {  // ended meanwhile (cancelled, fail_all)
    handoffs_.erase(hit);
    host_->maybe_remove(dst);
    return;
  }
  if (h.status.ok() && host_->replica_state(dst) != ReplicaState::kActive)
    h.status = unavailable(fmt::format("decode replica {} went down during the KV hand-off", dst));
  if (h.status.ok()) {
    handoffs_.erase(hit);
    host_->replica(dst)->submit(s);
    return;
  }
  ++counters_->handoff_retries;
  std::vector<Replica*> others;
  for (Replica* r : *pool_)
    if (std::find(h.tried.begin(), h.tried.end(), r->id()) == h.tried.end()) others.push_back(r);
  const int attempts = static_cast<int>(h.tried.size());
  int idx = others.empty() ? -1 : router_->pick(others, *s);
  if (others.empty() && opts_.reprefill && attempts <= opts_.max_transfer_retries) {
    // Every decode replica is down or tried: prefilled again wherever it can go (or waits).
    handoffs_.erase(hit);
    s->num_computed = 0;
    host_->reprefill(s);
    return;
  }
  if (idx < 0 || attempts > opts_.max_transfer_retries) {
    ++counters_->handoff_failures;
    std::string why = h.status.message();
    handoffs_.erase(hit);
    host_->fail(s, fmt::format("KV hand-off failed after {} attempts: {}", attempts, why));
    return;
  }
  transfer(id, others[idx]->id());
}

}  // namespace prima::cluster
