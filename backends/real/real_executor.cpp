// RealExecutor (see real_executor.h).
#include "backends/real/real_executor.h"

#include <cmath>

#include "engine/core/request.h"

namespace prima::real {

RealExecutor::RealExecutor(Runtime* rt, StepRunner* runner, int block_size, int pp,
                           const model::ModelSpec* model)
    : rt_(rt), runner_(runner), model_(model), block_size_(block_size), pp_(pp) {
  worker_ = std::thread([this] { loop(); });
}

RealExecutor::~RealExecutor() {
  stop();
}

void RealExecutor::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

StepInput RealExecutor::make_input(const StepBatch& step, int block_size) {
  StepInput in;
  in.step_id = step.step_id;
  in.kind = StepKind::kForward;
  in.seqs.reserve(step.seqs.size());
  for (const SeqWork& w : step.seqs) {
    SeqInput q;
    q.request = w.request;
    q.pos0 = w.context_len - w.num_tokens;
    q.samples = w.samples;
    if (w.seq) {
      q.tokens.reserve(w.num_tokens);
      for (int p = w.context_len - w.num_tokens; p < w.context_len; ++p)
        q.tokens.push_back(w.seq->token_at(p));
      const std::size_t need = std::size_t((w.context_len + block_size - 1) / block_size);
      q.blocks.assign(w.seq->blocks.begin(),
                      w.seq->blocks.begin() + std::min(need, w.seq->blocks.size()));
      q.sampling = w.seq->req.sampling;
      // min_tokens: the stop ids cannot be drawn yet (vLLM masks them the same way).
      if (w.samples && w.seq->num_generated < w.seq->req.min_tokens)
        for (int id : w.seq->req.stop_ids) q.sampling.logit_bias.emplace_back(id, -INFINITY);
      if (q.sampling.prompt_logprobs >= 0) {  // the prompt ids after the chunk's positions
        const int prompt = w.seq->req.prompt_tokens;
        for (int p = q.pos0; p < w.context_len && p + 1 < prompt; ++p)
          q.score_ids.push_back(w.seq->token_at(p + 1));
      }
      if (w.samples && q.sampling.penalized()) {
        if (q.sampling.repetition_penalty != 1.0) q.prompt_history = w.seq->req.prompt_ids;
        q.output_history = w.seq->output_ids;
      }
    }
    in.seqs.push_back(std::move(q));
  }
  return in;
}

void RealExecutor::launch(const StepBatch& step, std::function<void(const StepResult&)> done) {
  Job j;
  j.input = make_input(step, block_size_);
  j.done = std::move(done);
  if (model_)
    for (const SeqWork& w : step.seqs)
      j.flops += model_->forward_flops(w.num_tokens, w.context_len, w.samples);
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(j));
  }
  cv_.notify_all();
}

void RealExecutor::check_health(std::function<void(Status)> done) {
  Job j;
  j.input.kind = StepKind::kPing;
  j.health = std::move(done);
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(j));
  }
  cv_.notify_all();
}

void RealExecutor::break_with(const Status& st) {
  std::lock_guard<std::mutex> l(failure_mu_);
  failure_ = st;
}

Status RealExecutor::failure() const {
  std::lock_guard<std::mutex> l(failure_mu_);
  return failure_;
}

void RealExecutor::finish(Job& job, Status st, SampledTokens tokens) {
  if (job.health) {
    rt_->post([f = std::move(job.health), st] { f(st); });
    return;
  }
  StepResult r;
  r.status = st;
  r.start_s = job.start_s;
  r.end_s = rt_->now();
  r.stage_busy_s.assign(pp_, r.end_s - r.start_s);
  r.tokens = st.ok() ? std::move(tokens.ids) : std::vector<int>(job.input.seqs.size(), -1);
  r.flops = st.ok() ? job.flops : 0;
  if (st.ok()) {
    r.logprobs = std::move(tokens.logprobs);
    r.prompt_logprobs = std::move(tokens.prompt_logprobs);
  }
  rt_->post([f = std::move(job.done), r = std::move(r)] { f(r); });
}

void RealExecutor::loop() {
  std::deque<Job> inflight;
  for (;;) {
    Job job;
    bool start_new = false;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stopping_ || !queue_.empty() || !inflight.empty(); });
      if (queue_.empty() && inflight.empty()) break;  // stopping with nothing left
      // Start a new step while the pipeline has room (pings wait for an empty pipeline).
      if (!queue_.empty() && static_cast<int>(inflight.size()) < pp_ &&
          (queue_.front().input.kind == StepKind::kForward || inflight.empty())) {
        job = std::move(queue_.front());
        queue_.pop_front();
        start_new = true;
      }
    }
    if (start_new) {
      job.start_s = rt_->now();
      if (Status broken = failure(); !broken.ok()) {
        finish(job, broken, {});
        continue;
      }
      Status st =
          job.input.kind == StepKind::kPing ? runner_->ping() : runner_->begin_step(job.input);
      if (job.input.kind == StepKind::kPing || !st.ok()) {
        if (!st.ok() && job.input.kind == StepKind::kForward &&
            st.code() != StatusCode::kInvalidArgument) {
          break_with(st);
        }
        finish(job, st, {});
      } else {
        inflight.push_back(std::move(job));
      }
      continue;
    }
    // The pipeline is full (or nothing new): collect the oldest step's tokens.
    Job& head = inflight.front();
    auto tokens = runner_->finish_step(head.input);
    if (!tokens.ok()) {
      if (tokens.status().code() != StatusCode::kInvalidArgument) break_with(tokens.status());
      finish(head, tokens.status(), {});
    } else {
      finish(head, ok_status(), std::move(*tokens));
    }
    inflight.pop_front();
  }
}

}  // namespace prima::real
