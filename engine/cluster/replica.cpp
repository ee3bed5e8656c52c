#include "engine/cluster/replica.h"

namespace prima::cluster {

Replica::Replica(ReplicaId id, int gpus, Runtime* rt, Executor* exec, sched::SchedulerOptions opts,
                 int num_kv_blocks, const ReplicaEvents* events)
    : id_(id),
      gpus_(gpus),
      rt_(rt),
      exec_(exec),
      kv_(num_kv_blocks, opts.block_size, opts.watermark),
      sched_(opts, &kv_),
      events_(events) {}

bool Replica::can_ever_fit(const Sequence& s) const {
  return sched_.can_ever_fit(s);
}

void Replica::submit(Sequence* s) {
  s->replica = id_;
  outstanding_tokens_ += s->max_tokens();
  sched_.add(s);
  request_kick();
}

bool Replica::cancel(Sequence* s) {
  if (s->in_flight || !sched_.remove(s)) return false;
  outstanding_tokens_ -= s->max_tokens();
  return true;
}

void Replica::resume() {
  if (abandoned_) return;
  paused_ = false;
  request_kick();
}

std::vector<Sequence*> Replica::take_all() {
  std::vector<Sequence*> out(sched_.running().begin(), sched_.running().end());
  out.insert(out.end(), sched_.waiting().begin(), sched_.waiting().end());
  out.insert(out.end(), sched_.long_waiting().begin(), sched_.long_waiting().end());
  for (Sequence* s : out) {
    sched_.remove(s);  // releases its blocks (and its host blocks when swapped out)
    s->num_computed = 0;
    s->running = false;
    outstanding_tokens_ -= s->max_tokens();
  }
  return out;
}

std::int64_t Replica::work_left_tokens() const {
  std::int64_t n = 0;
  auto add = [&n](const Sequence* s) {
    n += s->remaining() + (s->req.max_output_tokens - s->num_generated) - 1;
  };
  for (const Sequence* s : sched_.running()) add(s);
  for (const Sequence* s : sched_.waiting()) add(s);
  for (const Sequence* s : sched_.long_waiting()) add(s);
  return n;
}

std::vector<Sequence*> Replica::movable() const {
  std::vector<Sequence*> out;
  for (const auto* q : {&sched_.waiting(), &sched_.long_waiting()})
    for (Sequence* s : *q)
      if (!s->in_flight && s->num_computed == 0 && s->num_blocks == 0 && s->swapped_blocks == 0)
        out.push_back(s);
  return out;
}

void Replica::arm_wakeup() {
  // Dynamic batching waits for a batch to fill or its timeout: wake up then. A wake-up time
  // that is not in the future means something else blocks: wait for the next event instead.
  const Time w = sched_.next_wakeup();
  if (w == sched::Scheduler::kNever || w <= rt_->now()) return;
  if (wakeup_ != kNoTimer) {
    if (wakeup_at_ == w) return;
    rt_->cancel(wakeup_);
  }
  wakeup_at_ = w;
  wakeup_ = rt_->at(w, [this] {
    wakeup_ = kNoTimer;
    kick();
  });
}

void Replica::request_kick() {
  if (kick_pending_) return;
  kick_pending_ = true;
  rt_->post([this] {
    kick_pending_ = false;
    kick();
  });
}

void Replica::kick() {
  while (!paused_ && inflight_ < exec_->max_inflight()) {
    if (free_steps_.empty()) {
      all_steps_.push_back(std::make_unique<sched::ScheduledStep>());
      free_steps_.push_back(all_steps_.back().get());
    }
    sched::ScheduledStep* step = free_steps_.back();
    sched_.schedule(rt_->now(), step);
    if (step->empty()) {
      arm_wakeup();
      return;
    }
    free_steps_.pop_back();
    step->batch.replica = id_;
    ++inflight_;
    ++steps_;
    exec_->launch(step->batch, [this, step](const StepResult& r) { on_step_done(step, r); });
  }
}

void Replica::on_step_done(sched::ScheduledStep* step, const StepResult& r) {
  --inflight_;
  if (abandoned_) {  // its sequences ended while the step ran: nothing to complete
    free_steps_.push_back(step);
    return;
  }
  sched::StepOutcome& out = outcome_;
  sched_.complete(*step, r, rt_->now(), &out);
  for (const Sequence* s : out.finished) outstanding_tokens_ -= s->max_tokens();
  for (const Sequence* s : out.failed) outstanding_tokens_ -= s->max_tokens();
  if (events_ && events_->on_step) events_->on_step(id_, *step, r);
  if (events_) {
    if (events_->on_tokens && !out.produced_token.empty()) events_->on_tokens(out.produced_token);
    for (Sequence* s : out.finished)
      if (events_->on_finished) events_->on_finished(s);
    for (Sequence* s : out.failed)
      if (events_->on_failed) events_->on_failed(s);
  }
  free_steps_.push_back(step);
  kick();
}

}  // namespace prima::cluster
