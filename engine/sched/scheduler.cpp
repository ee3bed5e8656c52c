#include "engine/sched/scheduler.h"

#include <algorithm>
#include <string>

namespace prima::sched {

Status SchedulerOptions::validate() const {
  if (max_num_seqs <= 0) return invalid_argument("max_num_seqs must be > 0");
  if (max_num_batched_tokens <= 0) return invalid_argument("max_num_batched_tokens must be > 0");
  if (max_seqs_per_step < 0) return invalid_argument("max_seqs_per_step must be >= 0");
  if (block_size <= 0) return invalid_argument("block_size must be > 0");
  if (watermark < 0 || watermark >= 1) return invalid_argument("watermark must be in [0, 1)");
  if (max_step_retries < 0) return invalid_argument("max_step_retries must be >= 0");
  return ok_status();
}

Scheduler::Scheduler(SchedulerOptions opts, kv::BlockManager* kv) : opts_(opts), kv_(kv) {}

void Scheduler::add(Sequence* seq) {
  seq->running = false;
  waiting_.push_back(seq);
}

std::int64_t Scheduler::tokens_in_kv() const {
  std::int64_t n = 0;
  for (const Sequence* s : running_) n += s->num_computed;
  return n;
}

void Scheduler::preempt(Sequence* victim) {
  kv_->release(*victim);
  victim->num_computed = 0;  // recompute: prompt and generated tokens are prefilled again
  victim->running = false;
  victim->preemptions++;
  ++preemptions_;
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  waiting_.push_front(victim);
}

Sequence* Scheduler::pick_victim(const std::vector<Sequence*>& batch, Sequence* requester) {
  // The most recently admitted sequence that is neither on the devices nor in this batch.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    Sequence* s = *it;
    if (s == requester || s->in_flight) continue;
    if (std::find(batch.begin(), batch.end(), s) != batch.end()) continue;
    return s;
  }
  return nullptr;
}

ScheduledStep Scheduler::schedule(Time now) {
  ScheduledStep step;
  schedule(now, &step);
  return step;
}

void Scheduler::schedule(Time now, ScheduledStep* out) {
  ScheduledStep& step = *out;
  step.clear();
  int budget = opts_.max_num_batched_tokens;
  const int seq_cap = opts_.max_seqs_per_step > 0 ? opts_.max_seqs_per_step : opts_.max_num_seqs;

  auto add_work = [&](Sequence* s, int n) {
    SeqWork w;
    w.request = s->req.id;
    w.num_tokens = n;
    w.context_len = s->num_computed + n;
    w.is_prefill = !s->decoding();
    w.samples = (s->num_computed + n == s->known_tokens());
    step.plan.add_seq(w);
    step.seqs.push_back(s);
    s->in_flight = true;
    if (s->first_scheduled_s < 0) s->first_scheduled_s = now;
    budget -= n;
  };

  // 1. Running sequences, oldest first.
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    if (static_cast<int>(step.seqs.size()) >= seq_cap) break;
    Sequence* s = running_[i];
    if (s->in_flight) continue;
    int n = std::min(s->remaining(), budget);
    if (!opts_.chunked_prefill && n < s->remaining()) continue;
    bool ok = kv_->grow(*s, s->num_computed + n);
    while (!ok) {
      Sequence* victim = pick_victim(step.seqs, s);
      if (!victim) break;
      const bool victim_before =
          std::find(running_.begin(), running_.begin() + i, victim) != running_.begin() + i;
      preempt(victim);
      ++step.preempted;
      if (victim_before) --i;  // running_ shifted left under us
      ok = kv_->grow(*s, s->num_computed + n);
    }
    if (!ok) {
      // Nobody left to preempt: this sequence itself yields its blocks.
      if (s->blocks.empty() || step.seqs.empty()) continue;
      preempt(s);
      ++step.preempted;
      --i;
      continue;
    }
    add_work(s, n);
  }

  // 2. Waiting sequences in queue order; none when this step had to preempt.
  while (step.preempted == 0 && !waiting_.empty() && budget > 0 &&
         static_cast<int>(running_.size()) < opts_.max_num_seqs &&
         static_cast<int>(step.seqs.size()) < seq_cap) {
    Sequence* s = waiting_.front();
    int n = s->remaining();
    if (n > budget) {
      if (!opts_.chunked_prefill) break;
      n = budget;
    }
    if (!kv_->can_admit(kv_->extra_blocks(*s, s->num_computed + n))) break;
    kv_->grow(*s, s->num_computed + n);
    waiting_.pop_front();
    s->running = true;
    running_.push_back(s);
    add_work(s, n);
  }

  if (!step.empty()) {
    step.plan.step_id = next_step_++;
  }
}

StepOutcome Scheduler::complete(const ScheduledStep& step, const StepResult& result, Time now) {
  StepOutcome out;
  complete(step, result, now, &out);
  return out;
}

void Scheduler::complete(const ScheduledStep& step, const StepResult& result, Time now,
                         StepOutcome* outcome) {
  StepOutcome& out = *outcome;
  out.clear();
  // Sequences leaving running_ are marked (running = false) and compacted out once at the
  // end, keeping the others in admission order.
  bool left = false;
  for (std::size_t i = 0; i < step.seqs.size(); ++i) {
    Sequence* s = step.seqs[i];
    const SeqWork& w = step.plan.seqs[i];
    s->in_flight = false;
    if (!result.status.ok()) {
      // The step's work is lost: recompute from scratch, or give up after the retries.
      s->step_failures++;
      kv_->release(*s);
      s->num_computed = 0;
      left = left || s->running;
      s->running = false;
      if (s->step_failures > opts_.max_step_retries) {
        s->reason = "step failed " + std::to_string(s->step_failures) +
                    " times: " + result.status.message();
        out.failed.push_back(s);
      } else {
        waiting_.push_front(s);
      }
      continue;
    }
    s->num_computed += w.num_tokens;
    if (s->num_computed < s->known_tokens()) continue;  // more prefill chunks to go
    s->num_generated++;
    if (s->first_token_s < 0) s->first_token_s = now;
    s->last_token_s = now;
    out.produced_token.push_back(s);
    if (s->num_generated >= s->req.max_output_tokens) {
      kv_->release(*s);
      left = true;
      s->running = false;
      out.finished.push_back(s);
    }
  }
  if (left) std::erase_if(running_, [](const Sequence* s) { return !s->running; });
}

bool Scheduler::remove(Sequence* seq) {
  auto w = std::find(waiting_.begin(), waiting_.end(), seq);
  if (w != waiting_.end()) {
    waiting_.erase(w);
    kv_->release(*seq);
    return true;
  }
  auto r = std::find(running_.begin(), running_.end(), seq);
  if (r != running_.end()) {
    running_.erase(r);
    kv_->release(*seq);
    seq->running = false;
    return true;
  }
  return false;
}

}  // namespace prima::sched
