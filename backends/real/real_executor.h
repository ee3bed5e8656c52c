// RealExecutor: the engine's Executor for one replica on the real backend (job rank 0), over a
// StepRunner: this process's RankRunner for replica 0, a RelayRunner for the others. launch() runs
// on the engine's loop: it copies the step's inputs (token ids via Sequence::token_at, positions,
// block tables, sampling parameters) into a StepInput and queues it; a worker thread (the only
// user of the runner, its communicators and the kernels' ThreadPool) runs the steps in
// order, keeping up to `pp` of them in the pipeline, and posts each StepResult (times from the
// runtime's clock, sampled ids) back through Runtime::post. check_health queues a ping that
// every rank must answer. Destruction (or stop()) finishes the queued steps and joins the
// worker. launch/check_health: loop thread only; the rest is internal.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "backends/real/step_runner.h"
#include "engine/model/model_spec.h"
#include "engine/runtime.h"

namespace prima::real {

class RealExecutor : public Executor {
 public:
  // `model` (borrowed, may be null): the FLOPs each StepResult reports.
  RealExecutor(Runtime* rt, StepRunner* runner, int block_size, int pp,
               const model::ModelSpec* model = nullptr);
  ~RealExecutor() override;

  void launch(const StepBatch& step, std::function<void(const StepResult&)> done) override;
  int max_inflight() const override { return pp_; }
  void check_health(std::function<void(Status)> done) override;
  // Finishes the queued work and joins the worker thread (idempotent).
  void stop();
  // Any thread: not ok once a step failed on the ranks (a rank that stopped answering, a
  // transport error): the ranks' pipeline is then out of step, so this executor fails every
  // later step and probe, and only a restart of the job brings the replica back.
  Status failure() const;

  // The step's inputs as the ranks need them (reads the sequences; loop thread).
  static StepInput make_input(const StepBatch& step, int block_size);

 private:
  struct Job {
    StepInput input;
    std::function<void(const StepResult&)> done;
    std::function<void(Status)> health;  // ping jobs
    Time start_s = 0;
    double flops = 0;
  };
  void loop();
  void finish(Job& job, Status st, SampledTokens tokens);
  void break_with(const Status& st);

  Runtime* rt_;
  StepRunner* runner_;
  const model::ModelSpec* model_;
  int block_size_, pp_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  mutable std::mutex failure_mu_;
  Status failure_;  // a step failed on the ranks: later steps fail at once (by failure_mu_)
  std::thread worker_;
};

}  // namespace prima::real
