#include "engine/sched/scheduler.h"

#include <algorithm>
#include <climits>
#include <string>

#include "engine/workload/random.h"

namespace prima::sched {

struct Scheduler::Budget {
  int tokens = 0;       // the step's token budget left
  int seq_cap = 0;      // sequences per step
  int prefill = 0;      // prefill tokens left (max_prefill_tokens_per_step)
  int decode = 0;       // decode sequences left (max_decode_seqs_per_step)
  int long_tokens = 0;  // tokens long prompts may still take this step
  // With a decode cap: decodes whose last token is older than this go first (fairness).
  Time decode_cutoff = Scheduler::kNever;
  int cutoff_ties = 0;                    // decodes at exactly the cutoff still allowed
  bool no_decode = false;                 // a prefill-only step (mixed_batches false)
  Time admit_before = Scheduler::kNever;  // admits requests that arrived by then (overlap)
  // guaranteed_no_evict: blocks the running sequences still need to reach their
  // max_output_tokens (-1: not counted yet this step).
  int reserve_blocks = -1;
};

Scheduler::Scheduler(SchedulerOptions opts, kv::BlockManager* kv) : opts_(opts), kv_(kv) {
  kv_->set_prefix_caching(opts_.enable_prefix_caching);
}

bool Scheduler::is_long(const Sequence* s) const {
  return opts_.long_prompt_queue && opts_.type == SchedulerType::kContinuous &&
         s->req.prompt_tokens > opts_.long_prompt_threshold;
}

bool Scheduler::before(const Sequence* a, const Sequence* b) const {
  const int ca = static_cast<int>(a->req.priority), cb = static_cast<int>(b->req.priority);
  if (ca != cb) return ca < cb;
  const double da = a->req.arrival_s + (a->req.sla_s > 0 ? a->req.sla_s : kNoSlaDeadline_s);
  const double db = b->req.arrival_s + (b->req.sla_s > 0 ? b->req.sla_s : kNoSlaDeadline_s);
  if (da != db) return da < db;
  if (a->req.arrival_s != b->req.arrival_s) return a->req.arrival_s < b->req.arrival_s;
  return a->req.id < b->req.id;
}

void Scheduler::enqueue(Sequence* s, bool front) {
  std::deque<Sequence*>& q = is_long(s) ? long_waiting_ : waiting_;
  if (!opts_.priority_scheduling) {
    if (front)
      q.push_front(s);
    else
      q.push_back(s);
    return;
  }
  auto it = std::upper_bound(q.begin(), q.end(), s,
                             [this](const Sequence* a, const Sequence* b) { return before(a, b); });
  q.insert(it, s);
}

bool Scheduler::can_ever_fit(const Sequence& s) const {
  const int usable = kv_->num_blocks() - kv_->watermark_blocks();
  if (kv_->blocks_for(s.max_tokens()) > usable) return false;
  if (!opts_.chunked_prefill && s.req.prompt_tokens > opts_.max_num_batched_tokens) return false;
  if (opts_.priority_scheduling && s.req.priority != Priority::kHigh) {
    int chunk = std::min(s.req.prompt_tokens, opts_.max_num_batched_tokens);
    if (opts_.max_prefill_tokens_per_step > 0)
      chunk = std::min(chunk, opts_.max_prefill_tokens_per_step);
    if (!opts_.chunked_prefill) chunk = s.req.prompt_tokens;
    const int reserved = static_cast<int>(opts_.reserved_high_share * kv_->num_blocks());
    if (kv_->blocks_for(std::max(1, chunk)) > usable - reserved) return false;
  }
  return true;
}

void Scheduler::add(Sequence* seq) {
  seq->running = false;
  enqueue(seq, false);
}

std::int64_t Scheduler::tokens_in_kv() const {
  std::int64_t n = 0;
  for (const Sequence* s : running_) n += s->num_computed;
  return n - std::int64_t(kv_->shared_extra_refs()) * kv_->block_size();
}

double Scheduler::kv_token_utilization() const {
  const std::int64_t cap = kv_->capacity_tokens();
  return cap > 0 ? double(tokens_in_kv()) / double(cap) : 0.0;
}

double Scheduler::bytes_of(int blocks) const {
  return double(blocks) * opts_.block_size * opts_.kv_bytes_per_token;
}

void Scheduler::preempt(Sequence* victim, ScheduledStep* step) {
  const int nblocks = victim->num_blocks;
  const bool swap =
      opts_.preemption_mode == PreemptionMode::kSwap && victim->num_computed > 0 &&
      (opts_.swap_space_blocks == 0 || swapped_blocks_ + nblocks <= opts_.swap_space_blocks);
  if (!swap) kv_->keep_for_recompute(*victim);
  kv_->release(*victim);
  if (swap) {
    // Its K/V go to host memory; it resumes where it was.
    victim->swapped_blocks = nblocks;
    swapped_blocks_ += nblocks;
    step->batch.shape.swap_out_bytes += bytes_of(nblocks);
    ++swap_outs_;
  } else {
    victim->num_computed = 0;  // recompute: prompt and generated tokens are prefilled again
  }
  victim->running = false;
  victim->preemptions++;
  ++preemptions_;
  if (victim->req.priority == Priority::kHigh) --running_high_;
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  leave_ready(victim);
  enqueue(victim, true);
}

Sequence* Scheduler::pick_victim(const std::vector<Sequence*>& batch, Sequence* requester) {
  // The most recently admitted sequence that is neither on the devices nor in this batch;
  // with priorities, of the lowest class first and never of a class above the requester's.
  const int lowest = opts_.priority_scheduling ? kNumPriorities - 1 : 0;
  const int highest = opts_.priority_scheduling ? static_cast<int>(requester->req.priority) : 0;
  for (int c = lowest; c >= highest; --c) {
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
      Sequence* s = *it;
      if (s == requester || s->in_flight) continue;
      if (opts_.priority_scheduling && static_cast<int>(s->req.priority) != c) continue;
      if (std::find(batch.begin(), batch.end(), s) != batch.end()) continue;
      return s;
    }
  }
  return nullptr;
}

void Scheduler::make_room_for_high(ScheduledStep* step) {
  // Before running sequences take the step: preempt lower classes (not on the devices) so
  // that the high-class requests at the head of the queues can be admitted now.
  int seats = 0, blocks = 0, tokens = 0;
  for (std::deque<Sequence*>* q : {&waiting_, &long_waiting_}) {
    for (const Sequence* s : *q) {
      if (s->req.priority != Priority::kHigh) break;
      const int n = std::min(s->remaining(), opts_.max_num_batched_tokens);
      if (seats > 0 && tokens + n > opts_.max_num_batched_tokens) return;
      tokens += n;
      ++seats;
      blocks += kv_->blocks_for(s->num_computed + n);
      while (static_cast<int>(running_.size()) + seats > opts_.max_num_seqs ||
             !kv_->can_admit(blocks)) {
        Sequence* v = pick_priority_victim(Priority::kHigh);
        if (!v) return;
        preempt(v, step);
        ++step->preempted;
        ++priority_preemptions_;
      }
    }
  }
}

Sequence* Scheduler::pick_priority_victim(Priority requester) const {
  // Lowest class first, newest first; never a sequence on the devices or in this step.
  for (int c = kNumPriorities - 1; c > static_cast<int>(requester); --c)
    for (auto it = running_.rbegin(); it != running_.rend(); ++it)
      if (static_cast<int>((*it)->req.priority) == c && !(*it)->in_flight) return *it;
  return nullptr;
}

// Adds n tokens of s to the step (its SeqWork and the shape) and charges the budget.
void Scheduler::add_work(Sequence* s, int n, Budget& b, ScheduledStep* step, Time now, int draft) {
  const bool is_prefill = !s->decoding();
  SeqWork w;
  w.request = s->req.id;
  w.seq = s;
  w.num_tokens = n;
  w.context_len = s->num_computed + n;
  w.is_prefill = is_prefill;
  w.samples = w.context_len - draft == s->known_tokens();
  w.draft_tokens = draft;
  step->batch.add_seq(w);
  step->seqs.push_back(s);
  s->in_flight = true;
  s->step_tokens = n;
  s->step_draft = draft;
  if (!s->scheduled) {
    s->scheduled = true;
    s->first_scheduled_s = now;
  }
  b.tokens -= n;
  if (is_prefill) {
    b.prefill -= n;
    if (is_long(s)) b.long_tokens -= n;
  } else {
    b.decode -= 1;
  }
}

void Scheduler::run_running(Budget& b, int pass, ScheduledStep* step, Time now) {
  const bool decode_capped = opts_.max_decode_seqs_per_step > 0;
  // The running sequences not on the devices, oldest first. A victim preempted below stays
  // in ready_ until the end of the walk (walking_ready_), no longer running.
  walking_ready_ = true;
  const std::size_t seqs_before = step->seqs.size();
  // Loop invariants, read once (the walk appends nothing to ready_; see walking_ready_).
  const std::size_t nready = ready_.size();
  const std::size_t seq_cap = static_cast<std::size_t>(std::max(0, b.seq_cap));
  const bool long_queue = opts_.long_prompt_queue;
  const bool chunked = opts_.chunked_prefill;
  for (std::size_t i = 0; i < nready; ++i) {
    Sequence* s = ready_[i];
    if (b.tokens <= 0) break;
    if (step->seqs.size() >= seq_cap) break;
    if (!s->running) continue;  // preempted by a sequence before it
    const bool decode = s->decoding();
    // With the long-prompt queue: pass 0 runs all but long prefills, pass 1 those.
    if (long_queue && (pass == 1) != (!decode && is_long(s))) continue;
    int n = std::min(s->remaining(), b.tokens);
    int draft = 0;
    if (decode && opts_.speculative_tokens > 0) {
      // Verify up to speculative_tokens drafts with the next token, never past the output's
      // end or the step's token budget.
      draft =
          std::max(0, std::min({opts_.speculative_tokens,
                                s->req.max_output_tokens - s->num_generated - 1, b.tokens - 1}));
      n = 1 + draft;
    }
    if (decode && b.no_decode) continue;
    if (decode) {
      // Without a decode cap (max_decode_seqs_per_step), b.decode cannot run out and there
      // is no cutoff: the sequence's timestamps are not even loaded.
      if (decode_capped) {
        if (b.decode <= 0 || s->last_token_s > b.decode_cutoff) continue;
        if (s->last_token_s == b.decode_cutoff && b.decode_cutoff != kNever) {
          if (b.cutoff_ties <= 0) continue;
          --b.cutoff_ties;
        }
      }
    } else {
      n = std::min(n, b.prefill);
      if (is_long(s)) n = std::min(n, b.long_tokens);
      if (n <= 0) continue;
    }
    if (!chunked && n < s->remaining()) continue;
    bool ok = kv_->grow(*s, s->num_computed + n);
    while (!ok) {
      Sequence* victim = pick_victim(step->seqs, s);
      if (!victim) break;
      preempt(victim, step);
      ++step->preempted;
      ok = kv_->grow(*s, s->num_computed + n);
    }
    if (!ok) {
      // Nobody left to preempt: this sequence itself yields its blocks.
      if (s->num_blocks == 0 || step->seqs.empty()) continue;
      preempt(s, step);
      ++step->preempted;
      continue;
    }
    add_work(s, n, b, step, now, draft);
  }
  walking_ready_ = false;
  std::erase_if(ready_, [](const Sequence* s) { return s->in_flight || !s->running; });
  // Pass 1 adds long prefills of lower ranks after pass 0's sequences.
  if (pass == 1 && step->seqs.size() > seqs_before && seqs_before > 0) step->in_rank_order = false;
}

void Scheduler::enter_running(Sequence* s) {
  s->run_rank = ++run_ranks_;
  s->running = true;
  running_.push_back(s);
  if (s->req.priority == Priority::kHigh) ++running_high_;
}

void Scheduler::leave_ready(Sequence* s) {
  if (s->in_flight || walking_ready_) return;
  auto it = std::find(ready_.begin(), ready_.end(), s);
  if (it != ready_.end()) ready_.erase(it);
}

void Scheduler::back_to_ready(std::vector<Sequence*>& back, bool in_rank_order) {
  if (back.empty()) return;
  auto by_rank = [](const Sequence* a, const Sequence* b) { return a->run_rank < b->run_rank; };
  // A step's sequences are in admission order but for pass 1 of the long-prompt queue.
  if (!in_rank_order && !std::is_sorted(back.begin(), back.end(), by_rank))
    std::sort(back.begin(), back.end(), by_rank);
  if (ready_.empty() || by_rank(ready_.back(), back.front())) {
    ready_.insert(ready_.end(), back.begin(), back.end());
    return;
  }
  ready_scratch_.resize(ready_.size() + back.size());
  std::merge(ready_.begin(), ready_.end(), back.begin(), back.end(), ready_scratch_.begin(),
             by_rank);
  ready_.swap(ready_scratch_);
}

int Scheduler::blocks_to_finish(const Sequence& s) const {
  return std::max(0, kv_->blocks_for(s.max_tokens()) - s.num_blocks);
}

Scheduler::Admit Scheduler::try_admit(Sequence* s, Budget& b, int cap, ScheduledStep* step,
                                      Time now) {
  const bool reserve = opts_.priority_scheduling && s->req.priority != Priority::kHigh;
  const int running = static_cast<int>(running_.size());
  if (running >= opts_.max_num_seqs) return Admit::kNoSeat;
  int reserved_blocks = 0;
  if (reserve) {
    const int seats = static_cast<int>(opts_.reserved_high_share * opts_.max_num_seqs);
    if (running - running_high_ >= opts_.max_num_seqs - seats) return Admit::kNoSeat;
    reserved_blocks = static_cast<int>(opts_.reserved_high_share * kv_->num_blocks());
  }
  // Prefix cache: share the cached blocks of its prompt (never the whole prompt).
  // A request scoring its prompt computes every position (no cached prefix).
  const bool lookup = kv_->prefix_caching() && s->swapped_blocks == 0 && s->num_computed == 0 &&
                      s->num_blocks == 0 && s->req.sampling.prompt_logprobs < 0;
  int hit = 0;
  if (lookup) s->num_computed = hit = kv_->match_prefix(*s);
  auto undo = [&] {
    if (lookup) {
      kv_->release(*s);
      s->num_computed = 0;
    }
  };
  int n = std::min(s->remaining(), b.tokens);
  if (s->decoding()) {
    if (b.decode <= 0) return undo(), Admit::kNoBudget;
  } else {
    n = std::min({n, b.prefill, cap});
    if (n <= 0) return undo(), Admit::kNoBudget;
  }
  if (!opts_.chunked_prefill && n < s->remaining()) return undo(), Admit::kNoBudget;
  if (!kv_->can_admit(kv_->extra_blocks(*s, s->num_computed + n), reserved_blocks))
    return undo(), Admit::kNoBlocks;
  const bool no_evict = opts_.capacity_policy == CapacityPolicy::kGuaranteedNoEvict;
  if (no_evict &&
      !kv_->can_admit(kv_->extra_blocks(*s, s->max_tokens()), reserved_blocks + b.reserve_blocks))
    return undo(), Admit::kNoBlocks;
  kv_->grow(*s, s->num_computed + n);
  if (no_evict) b.reserve_blocks += blocks_to_finish(*s);
  if (lookup) kv_->note_lookup(s->req.prompt_tokens, hit);
  step->batch.shape.kv_load_s += kv_->take_load_s();
  if (s->swapped_blocks > 0) {
    step->batch.shape.swap_in_bytes += bytes_of(s->swapped_blocks);
    swapped_blocks_ -= s->swapped_blocks;
    s->swapped_blocks = 0;
    ++swap_ins_;
  }
  enter_running(s);
  add_work(s, n, b, step, now);
  return Admit::kOk;
}

void Scheduler::admit_queue(std::deque<Sequence*>& q, Budget& b, bool long_q, ScheduledStep* step,
                            Time now) {
  if (opts_.capacity_policy == CapacityPolicy::kGuaranteedNoEvict && b.reserve_blocks < 0 &&
      !q.empty()) {
    b.reserve_blocks = 0;
    for (const Sequence* s : running_) b.reserve_blocks += blocks_to_finish(*s);
  }
  while (!q.empty() && b.tokens > 0 && static_cast<int>(step->seqs.size()) < b.seq_cap) {
    Sequence* s = q.front();
    if (s->req.arrival_s > b.admit_before) break;  // arrived after the running step was formed
    const Admit a = try_admit(s, b, long_q ? b.long_tokens : INT_MAX, step, now);
    if (a == Admit::kOk) {
      q.pop_front();
      continue;
    }
    if (opts_.priority_scheduling && s->req.priority == Priority::kHigh &&
        (a == Admit::kNoSeat || a == Admit::kNoBlocks)) {
      if (Sequence* v = pick_priority_victim(Priority::kHigh)) {
        preempt(v, step);
        ++step->preempted;
        ++priority_preemptions_;
        continue;
      }
    }
    break;
  }
}

int Scheduler::batch_ready(Time now) const {
  const int w = static_cast<int>(waiting_.size());
  if (w == 0) return 0;
  const int cap = std::min(opts_.max_batch_size, opts_.max_num_seqs);
  if (w >= cap) return cap;
  for (auto it = opts_.preferred_batch_sizes.rbegin(); it != opts_.preferred_batch_sizes.rend();
       ++it)
    if (*it <= w) return *it;
  return now >= next_wakeup() ? w : 0;
}

Time Scheduler::next_wakeup() const {
  if (opts_.type != SchedulerType::kDynamicBatching || !running_.empty() || waiting_.empty())
    return kNever;
  Time oldest = waiting_.front()->req.arrival_s;
  for (const Sequence* s : waiting_) oldest = std::min(oldest, s->req.arrival_s);
  return oldest + opts_.batch_timeout_s;
}

void Scheduler::form_batch(int n) {
  auto by_arrival = [](const Sequence* a, const Sequence* b) {
    return a->req.arrival_s != b->req.arrival_s ? a->req.arrival_s < b->req.arrival_s
                                                : a->req.id < b->req.id;
  };
  std::vector<Sequence*>& c = batch_scratch_;
  c.assign(waiting_.begin(), waiting_.end());
  for (BatchStrategy st : opts_.strategies) {
    if (st == BatchStrategy::kFillFifo) {
      std::stable_sort(c.begin(), c.end(), by_arrival);
      continue;
    }
    // size_aware: the window of n requests of similar prompt length around the oldest one.
    if (static_cast<int>(c.size()) <= n) continue;
    const Sequence* oldest = *std::min_element(c.begin(), c.end(), by_arrival);
    std::stable_sort(c.begin(), c.end(), [&](const Sequence* a, const Sequence* b) {
      return a->req.prompt_tokens != b->req.prompt_tokens
                 ? a->req.prompt_tokens < b->req.prompt_tokens
                 : by_arrival(a, b);
    });
    const int p = static_cast<int>(std::find(c.begin(), c.end(), oldest) - c.begin());
    int best = std::max(0, p - n + 1);
    const int last = std::min(p, static_cast<int>(c.size()) - n);
    for (int j = best + 1; j <= last; ++j)
      if (c[j + n - 1]->req.prompt_tokens - c[j]->req.prompt_tokens <
          c[best + n - 1]->req.prompt_tokens - c[best]->req.prompt_tokens)
        best = j;
    c.erase(c.begin() + best + n, c.end());
    c.erase(c.begin(), c.begin() + best);
  }
  if (static_cast<int>(c.size()) > n) c.resize(n);
  // Admit the batch as far as KV blocks allow (each needs its known tokens' blocks).
  int need = 0;
  bool any = false;
  for (Sequence* s : c) {
    const int blocks = kv_->extra_blocks(*s, s->known_tokens());
    if (!kv_->can_admit(need + blocks)) continue;
    need += blocks;
    enter_running(s);
    ready_.push_back(s);
    any = true;
  }
  if (!any) return;
  std::erase_if(waiting_, [](const Sequence* s) { return s->running; });
  ++batches_formed_;
}

ScheduledStep Scheduler::schedule(Time now) {
  ScheduledStep step;
  schedule(now, &step);
  return step;
}

void Scheduler::schedule(Time now, ScheduledStep* out) {
  ScheduledStep& step = *out;
  step.clear();
  kv_->set_now(now);
  Budget b;
  b.tokens = opts_.max_num_batched_tokens;
  b.seq_cap = opts_.max_seqs_per_step > 0 ? opts_.max_seqs_per_step : opts_.max_num_seqs;
  b.prefill = opts_.max_prefill_tokens_per_step > 0 ? opts_.max_prefill_tokens_per_step : INT_MAX;
  b.decode = opts_.max_decode_seqs_per_step > 0 ? opts_.max_decode_seqs_per_step : INT_MAX;
  b.long_tokens = INT_MAX;
  if (opts_.max_decode_seqs_per_step > 0) {
    // Decodes over the cap: those that waited longest for their last token go first.
    decode_scratch_.clear();
    for (const Sequence* s : running_)
      if (!s->in_flight && s->decoding()) decode_scratch_.push_back(s->last_token_s);
    const int cap = opts_.max_decode_seqs_per_step;
    if (static_cast<int>(decode_scratch_.size()) > cap) {
      std::nth_element(decode_scratch_.begin(), decode_scratch_.begin() + (cap - 1),
                       decode_scratch_.end());
      b.decode_cutoff = decode_scratch_[cap - 1];
      b.cutoff_ties =
          cap - static_cast<int>(std::count_if(decode_scratch_.begin(), decode_scratch_.end(),
                                               [&](Time t) { return t < b.decode_cutoff; }));
    }
  }
  if (opts_.long_prompt_queue) {
    // Long prompts get at most their share while short work waits or prefills.
    bool short_work = !waiting_.empty();
    for (std::size_t i = 0; i < running_.size() && !short_work; ++i) {
      const Sequence* s = running_[i];
      short_work = !s->in_flight && !s->decoding() && !is_long(s);
    }
    if (short_work)
      b.long_tokens = std::max(1, static_cast<int>(opts_.long_prompt_budget_share * b.tokens));
  }

  if (opts_.type == SchedulerType::kDynamicBatching) {
    // Request-level batching: a new batch only once the previous one fully finished.
    if (running_.empty()) {
      if (int n = batch_ready(now); n > 0) form_batch(n);
    }
    run_running(b, 0, &step, now);
  } else {
    if (opts_.priority_scheduling) make_room_for_high(&step);
    const int priority_preempted = step.preempted;
    // Overlap: this step was formed when the previous one started.
    if (opts_.overlap_schedule && !running_.empty()) b.admit_before = last_formed_s_;
    // Unmixed steps: prefill work first; the decodes run in a step of their own when none can.
    const Budget full = b;
    b.no_decode = !opts_.mixed_batches;
    // 1. Running sequences, oldest first (long prefills last, within their share).
    run_running(b, 0, &step, now);
    if (opts_.long_prompt_queue) run_running(b, 1, &step, now);
    // 2. Waiting sequences in queue order; none when this step had to preempt. Short
    // prompts first; long ones only when every short one was admitted.
    auto admit_waiting = [&] {
      if (step.preempted != priority_preempted) return;
      admit_queue(waiting_, b, false, &step, now);
      if (waiting_.empty() && !long_waiting_.empty())
        admit_queue(long_waiting_, b, true, &step, now);
    };
    admit_waiting();
    if (b.no_decode && step.seqs.empty()) {
      b = full;  // no prefill could run: a decode step
      run_running(b, 0, &step, now);
    }
    if (step.seqs.empty() && full.admit_before != kNever) {
      b = full;  // nothing else to run: the overlap hides no arrival from an idle replica
      b.admit_before = kNever;
      admit_waiting();
    }
  }

  if (!step.empty()) {
    last_formed_s_ = now;
    step.batch.step_id = next_step_++;
  }
}

StepOutcome Scheduler::complete(const ScheduledStep& step, const StepResult& result, Time now) {
  StepOutcome out;
  complete(step, result, now, &out);
  return out;
}

void Scheduler::on_finished() {
  ++finished_;
  if (opts_.compact_every_requests > 0 && finished_ % opts_.compact_every_requests == 0)
    kv_->compact();
}

void Scheduler::complete(const ScheduledStep& step, const StepResult& result, Time now,
                         StepOutcome* outcome) {
  StepOutcome& out = *outcome;
  out.clear();
  std::vector<Sequence*>& back = back_scratch_;  // still running: ready for the next step
  back.clear();
  // Sequences leaving running_ are marked (running = false) and compacted out once at the
  // end, keeping the others in admission order.
  bool left = false;
  // Loop invariants, read once (the compiler cannot tell that writing a Sequence leaves them).
  const bool step_ok = result.status.ok();
  const bool prefix_caching = kv_->prefix_caching();
  const std::size_t sampled = result.tokens.size();
  const std::size_t n = step.seqs.size();
  for (std::size_t i = 0; i < n; ++i) {
    Sequence* s = step.seqs[i];
    s->in_flight = false;
    if (!step_ok) {
      // The step's work is lost: recompute from scratch, or give up after the retries.
      s->step_draft = 0;
      s->step_failures++;
      kv_->release(*s);
      s->num_computed = 0;
      left = left || s->running;
      if (s->running && s->req.priority == Priority::kHigh) --running_high_;
      s->running = false;
      if (s->step_failures > opts_.max_step_retries) {
        s->reason = "step failed " + std::to_string(s->step_failures) +
                    " times: " + result.status.message();
        out.failed.push_back(s);
      } else {
        enqueue(s, true);
      }
      continue;
    }
    // A speculative step keeps the K/V of its next token and of the accepted drafts, and
    // produces those drafts plus the token sampled after them.
    const int produced = s->step_draft > 0 ? 1 + accepted_drafts(*s, result, i) : 1;
    if (i < result.prompt_logprobs.size()) record_prompt_logprobs(s, result.prompt_logprobs[i]);
    s->num_computed += s->step_draft > 0 ? produced : s->step_tokens;
    s->step_draft = 0;
    if (prefix_caching) kv_->commit(*s, s->num_computed);
    if (s->num_computed >= s->known_tokens()) {  // else more prefill chunks to go
      s->num_generated += produced;
      s->step_new_tokens = produced;
      bool stop = false;
      if (i < sampled && result.tokens[i] >= 0) {
        const int tok = result.tokens[i];
        s->output_ids.push_back(tok);
        if (i < result.logprobs.size()) s->last_logprobs = result.logprobs[i];
        stop =
            s->num_generated >= s->req.min_tokens &&
            std::find(s->req.stop_ids.begin(), s->req.stop_ids.end(), tok) != s->req.stop_ids.end();
      }
      // The first token (num_generated never decreases): first_token_s is read only then.
      if (s->num_generated == 1 && s->first_token_s < 0) s->first_token_s = now;
      s->last_token_s = now;
      out.produced_token.push_back(s);
      if (stop || s->num_generated >= s->req.max_output_tokens) {
        s->finish_reason = stop ? "stop" : "length";
        kv_->release(*s);
        left = true;
        if (s->req.priority == Priority::kHigh) --running_high_;
        s->running = false;
        out.finished.push_back(s);
        on_finished();
      }
    }
    if (s->running) back.push_back(s);
  }
  if (left) std::erase_if(running_, [](const Sequence* s) { return !s->running; });
  back_to_ready(back, step.in_rank_order);
}

void Scheduler::record_prompt_logprobs(Sequence* s, const std::vector<TokenLogprobs>& lps) {
  // Entry j scores the prompt token at position num_computed + j + 1; a recomputed chunk
  // (after a preemption) writes the same positions again.
  const std::size_t scored = static_cast<std::size_t>(std::max(0, s->req.prompt_tokens - 1));
  if (lps.empty() || scored == 0) return;
  if (s->prompt_logprobs.size() < scored) s->prompt_logprobs.resize(scored);
  const std::size_t first = static_cast<std::size_t>(s->num_computed);
  for (std::size_t j = 0; j < lps.size() && first + j < scored; ++j)
    s->prompt_logprobs[first + j] = lps[j];
}

int Scheduler::accepted_drafts(const Sequence& s, const StepResult& r, std::size_t i) const {
  const int k = s.step_draft;
  if (i < r.accepted.size() && r.accepted[i] >= 0) return std::min(r.accepted[i], k);
  // Each draft is accepted with probability acceptance_rate until the first rejection; the
  // draw for a position depends on (seed, request, position) only.
  auto uniform = [&](int pos) {
    const std::uint64_t z = opts_.acceptance_seed ^ (s.req.id * 0x9E3779B97F4A7C15ULL) ^
                            (static_cast<std::uint64_t>(pos) * 0xD1B54A32D192ED03ULL);
    return static_cast<double>(workload::splitmix64_mix(z + 0x9E3779B97F4A7C15ULL) >> 11) *
           0x1.0p-53;
  };
  int a = 0;
  while (a < k && uniform(s.num_generated + a) < opts_.acceptance_rate) ++a;
  return a;
}

bool Scheduler::remove(Sequence* seq) {
  for (std::deque<Sequence*>* q : {&waiting_, &long_waiting_}) {
    auto w = std::find(q->begin(), q->end(), seq);
    if (w == q->end()) continue;
    q->erase(w);
    kv_->release(*seq);
    swapped_blocks_ -= seq->swapped_blocks;
    seq->swapped_blocks = 0;
    return true;
  }
  auto r = std::find(running_.begin(), running_.end(), seq);
  if (r != running_.end()) {
    running_.erase(r);
    leave_ready(seq);
    kv_->release(*seq);
    if (seq->req.priority == Priority::kHigh) --running_high_;
    seq->running = false;
    return true;
  }
  return false;
}

}  // namespace prima::sched
