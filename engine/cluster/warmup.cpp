#include "engine/cluster/warmup.h"

namespace prima::cluster {

void Warmup::send(Replica* r) {
  for (int k = 0; k < opts_.requests; ++k) {
    auto seq = std::make_unique<Sequence>();
    seq->req.id = next_id_++;
    seq->req.arrival_s = rt_->now();
    seq->req.prompt_tokens = opts_.prompt_tokens;
    seq->req.max_output_tokens = opts_.output_tokens;
    Sequence* s = seq.get();
    if (!r->can_ever_fit(*s)) return;
    live_.emplace(s->req.id, std::move(seq));
    ++counters_->warmup_requests;
    r->submit(s);
  }
}

void Warmup::complete(const Sequence& s) {
  ++counters_->warmup_completed;
  drop(s);
}

void Warmup::drop(const Sequence& s) {
  const RequestId id = s.req.id;  // s dies with its entry
  live_.erase(id);
}

}  // namespace prima::cluster
