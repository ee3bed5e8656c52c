// SimExecutor's lone flows (SimSpeedups::lone_flows; the model is in link_occupancy.h): a flow
// of a TP ring or a PP send that starts on idle links is a timer at its lone-flow end; when
// another flow starts on one of its links, it continues as a SimGrid Comm of what it has left.
#include <algorithm>
#include <cmath>
#include <simgrid/s4u.hpp>
#include <stdexcept>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_executor_step.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim {

void SimExecutor::start_flow(Step* st, const FlowPath& path, sg4::Host* src, sg4::Host* dst,
                             double bytes) {
  LinkOccupancy& occ = platform_->occupancy();
  const double start = now();
  if (lone_flows() && path.rate_Bps > 0 &&
      occ.idle(*path.occ, start, (start + path.latency_s) + bytes / path.rate_Bps)) {
    if (st->lone_used == static_cast<int>(st->lone.size())) {
      st->lone.push_back(std::make_unique<LoneSend>());
      st->lone.back()->ex = this;
    }
    LoneSend* f = st->lone[static_cast<size_t>(st->lone_used++)].get();
    f->st = st;
    f->path = &path;
    f->route = path.occ;
    f->src = src;
    f->dst = dst;
    f->t0 = start;
    f->bytes = bytes;
    occ.add_lone(f);
    f->timer = runtime_->at(f->end_s(), [this, f] { on_lone_end(f); });
    ++st->pending;
    ++activities_started_;
    return;
  }
  // Reported whenever the platform tracks occupancy (even with this executor's lone flows
  // off): other executors' lone flows must see it.
  if (occ.enabled()) occ.flow_started(path.links, now(), path.latency_s);
  track(st, sg4::Comm::sendto_init(src, dst)->set_payload_size(static_cast<uint64_t>(bytes)), src,
        dst, &path.links, bytes);
}

void SimExecutor::on_lone_end(LoneSend* f) {
  f->timer = kNoTimer;  // fired
  platform_->occupancy().remove_lone(f);
  Step* st = f->st;
  if (--st->pending > 0) return;
  activities_done(st);
}

void SimExecutor::convert_lone(LoneSend* f, double now, double eps) {
  const FlowPath& p = *f->path;
  const double latency_end = f->t0 + p.latency_s;
  // Ending within eps: the newcomer is still in its latency phase until then, so this flow
  // ends alone, as planned.
  if (f->end_s() <= now + eps) return;
  runtime_->cancel(f->timer);
  f->timer = kNoTimer;
  --f->st->pending;  // the Comm counts instead
  --activities_started_;
  continue_as_comm(f->st, p, f->src, f->dst, latency_end, f->bytes, now, eps);
}

void SimExecutor::continue_as_comm(Step* st, const FlowPath& p, sg4::Host* src, sg4::Host* dst,
                                   double latency_end, double bytes, double now, double eps) {
  // The rest of its latency phase, or eps; the bytes a lone flow would not have sent by then.
  const double latency = std::max(latency_end - now, eps);
  const double sent = std::max(0.0, (now + latency - latency_end) * p.rate_Bps);
  const double left = std::max(1.0, std::round(bytes - sent));
  platform_->occupancy().flow_started(p.links, now, latency);
  platform_->set_next_comm_latency(latency);
  track(st, sg4::Comm::sendto_init(src, dst)->set_payload_size(static_cast<uint64_t>(left)), src,
        dst, &p.links, left);
  if (platform_->comm_latency_override_pending()) {
    platform_->set_next_comm_latency(0);
    throw std::logic_error("sim: a converted lone flow did not get its latency (no callback)");
  }
}

double SimExecutor::fold_send(Stage& stage, Step* st, const perf::StageCost& c,
                              double compute_flops) {
  const bool ring_follows =
      stage.ring_flows && !stage.ring_analytic && c.allreduces > 0 && c.allreduce_bytes > 0;
  if (ring_follows || !stage.send_flow || stage.send_analytic || !(c.send_bytes > 0) ||
      !(stage.send.rate_Bps > 0) || !(stage.lead_speed > 0))
    return -1;
  FoldedSend& f = st->folds[static_cast<std::size_t>(st->stage)];
  f.ex = this;
  f.st = st;
  f.path = &stage.send;
  f.route = stage.send.occ;
  f.stage = st->stage;
  f.compute_flops = compute_flops;
  f.send_start_s = now() + compute_flops / stage.lead_speed;           // start_timer's end
  f.bytes = static_cast<double>(static_cast<uint64_t>(c.send_bytes));  // as start_send
  if (!platform_->occupancy().idle(*f.path->occ, f.send_start_s, f.lone_end_s())) return -1;
  platform_->occupancy().add_lone(&f);
  st->folds_registered |= 1u << st->stage;
  st->send_folded = true;
  return compute_flops + (f.lone_end_s() - f.send_start_s) * stage.lead_speed;
}

void SimExecutor::unfold_send(FoldedSend* f, double now, double eps) {
  Step* st = f->st;
  Stage& stage = stages_[static_cast<size_t>(st->stage)];
  const double end = f->lone_end_s();
  if (now < f->send_start_s) {
    // Still computing: the timer ends with the compute, and the send decides again then.
    st->send_folded = false;
    stage.remaining_flops = f->compute_flops;  // since_s and rate unchanged: ends at the start
    arm_timer(stage);
    return;
  }
  if (end <= now + eps) return;  // ends alone, as planned (see convert_lone)
  // Sending: the rest as a SimGrid flow, as a converting lone flow.
  st->send_folded = false;
  runtime_->cancel(stage.timer);
  stage.timer = kNoTimer;
  stage.timed = nullptr;
  st->phase = Step::Phase::kSend;
  continue_as_comm(st, *f->path, stage.lead, stage.next_lead, f->send_start_s + f->path->latency_s,
                   f->bytes, now, eps);
}

}  // namespace prima::sim
