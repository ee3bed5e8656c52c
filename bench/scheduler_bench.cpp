// Google Benchmark: one scheduling decision of a saturated replica: Scheduler::schedule then
// Scheduler::complete with 256 running and 10,000 waiting sequences (the engine-side cost the
// simulator pays on every step), FIFO and with priority scheduling. Finished sequences go back to
// the queue, so the state stays saturated across iterations.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/sched/scheduler.h"

namespace {

using namespace prima;

void run_saturated(benchmark::State& state, bool priorities) {
  constexpr int kRunning = 256;
  constexpr int kWaiting = 10000;
  sched::SchedulerOptions opts;
  opts.max_num_seqs = kRunning;
  opts.max_num_batched_tokens = 4096;
  opts.priority_scheduling = priorities;
  opts.reserved_high_share = priorities ? 0.1 : 0;
  // Enough blocks for the running sequences, never for the whole queue.
  kv::BlockManager kv(kRunning * 200, opts.block_size, opts.watermark);
  sched::Scheduler sched(opts, &kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < kRunning + kWaiting; ++i) {
    auto s = std::make_unique<Sequence>();
    s->req.id = RequestId(i + 1);
    s->req.arrival_s = i * 1e-3;
    s->req.prompt_tokens = 64 + (i * 37) % 400;
    s->req.max_output_tokens = 16 + (i * 53) % 300;
    if (priorities) {  // 20% high, 20% low; half of them with an SLA
      s->req.priority = i % 5 == 0   ? Priority::kHigh
                        : i % 5 == 1 ? Priority::kLow
                                     : Priority::kNormal;
      if (i % 2 == 0) s->req.sla_s = 0.2 + (i % 7) * 0.1;
    }
    sched.add(s.get());
    seqs.push_back(std::move(s));
  }
  // Warm up until the replica runs kRunning sequences.
  StepResult ok;
  for (int i = 0; i < 1000 && int(sched.num_running()) < kRunning; ++i)
    (void)sched.complete(sched.schedule(0), ok, 0);

  std::int64_t seqs_scheduled = 0;
  sched::ScheduledStep step;  // reused, as Replica does
  sched::StepOutcome out;
  for (auto _ : state) {
    sched.schedule(0, &step);
    seqs_scheduled += static_cast<std::int64_t>(step.seqs.size());
    sched.complete(step, ok, 0, &out);
    for (Sequence* s : out.finished) {  // back to the queue: keeps the load steady
      s->num_computed = 0;
      s->num_generated = 0;
      s->first_scheduled_s = s->first_token_s = s->last_token_s = -1;
      sched.add(s);
    }
    benchmark::DoNotOptimize(out);
  }
  state.counters["running"] = double(sched.num_running());
  state.counters["waiting"] = double(sched.num_waiting());
  state.counters["seqs_per_step"] =
      benchmark::Counter(double(seqs_scheduled), benchmark::Counter::kAvgIterations);
  state.counters["preemptions"] = double(sched.total_preemptions());
}

void BM_SchedulerStep(benchmark::State& state) {
  run_saturated(state, false);
}
BENCHMARK(BM_SchedulerStep);

// The same with priority scheduling on: 20% high / 60% normal / 20% low, half with an SLA;
// the queue is ordered by class and deadline, 10% of seats and blocks reserved for high.
void BM_SchedulerStepPriority(benchmark::State& state) {
  run_saturated(state, true);
}
BENCHMARK(BM_SchedulerStepPriority);

}  // namespace
