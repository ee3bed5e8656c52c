// The policies' effects on a small closed simulation (steps cost 2 ms + 20 us per token):
// priorities keep the high class's TTFT low under overload; the long-prompt queue keeps
// short requests' TTFT low beside long documents.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/sched/scheduler.h"
#include "tests/engine/sched/sched_test_util.h"

namespace prima::sched {
namespace {

using testutil::make_seq;

struct Arrival {
  Time t;
  int prompt, output;
  Priority p;
};

// Runs the arrivals to completion; returns the sequences (with their timestamps).
std::vector<std::unique_ptr<Sequence>> simulate(const SchedulerOptions& o,
                                                const std::vector<Arrival>& arrivals) {
  kv::BlockManager kv(4000, o.block_size, o.watermark);
  Scheduler sch(o, &kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::size_t next = 0;
  Time t = 0;
  while (next < arrivals.size() || sch.num_waiting() + sch.num_running() > 0) {
    while (next < arrivals.size() && arrivals[next].t <= t) {
      const Arrival& a = arrivals[next];
      seqs.push_back(make_seq(RequestId(next + 1), a.prompt, a.output, a.p, a.t, 0.5));
      sch.add(seqs.back().get());
      ++next;
    }
    ScheduledStep st = sch.schedule(t);
    if (st.empty()) {
      if (next < arrivals.size()) t = std::max(t, arrivals[next].t);
      continue;
    }
    t += 0.002 + 20e-6 * double(st.batch.shape.tokens());
    sch.complete(st, StepResult{}, t);
  }
  return seqs;
}

double p99_ttft(const std::vector<std::unique_ptr<Sequence>>& seqs, bool (*pick)(const Sequence&)) {
  std::vector<double> v;
  for (const auto& s : seqs)
    if (pick(*s)) v.push_back(s->first_token_s - s->req.arrival_s);
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, std::size_t(0.99 * double(v.size())))];
}

TEST(Effects, PrioritiesKeepTheHighClassFastUnderOverload) {
  std::mt19937_64 rng(5);
  std::vector<Arrival> arrivals;
  for (int i = 0; i < 3000; ++i)  // ~1.5x what 32 sequences of 200 outputs can serve
    arrivals.push_back({i * 0.004, 100 + int(rng() % 200), 150 + int(rng() % 100),
                        rng() % 5 == 0 ? Priority::kHigh : Priority::kNormal});
  SchedulerOptions o;
  o.max_num_seqs = 32;
  o.max_num_batched_tokens = 2048;
  auto fifo = simulate(o, arrivals);
  o.priority_scheduling = true;
  auto prio = simulate(o, arrivals);
  auto high = [](const Sequence& s) { return s.req.priority == Priority::kHigh; };
  auto normal = [](const Sequence& s) { return s.req.priority == Priority::kNormal; };
  const double fifo_high = p99_ttft(fifo, high), prio_high = p99_ttft(prio, high);
  const double prio_normal = p99_ttft(prio, normal);
  std::printf("p99 TTFT high: fifo %.3f s, priorities %.3f s; normal with priorities %.3f s\n",
              fifo_high, prio_high, prio_normal);
  EXPECT_LT(prio_high, 0.5);  // within its SLA
  EXPECT_GT(fifo_high, 2.0);  // without priorities it degrades with everyone else
  EXPECT_GT(prio_normal, 2.0);
}

TEST(Effects, LongPromptQueueHalvesShortRequestsTtft) {
  std::mt19937_64 rng(9);
  std::vector<Arrival> arrivals;
  for (int i = 0; i < 2000; ++i) {
    const bool doc = rng() % 25 == 0;  // ~4% documents: below capacity
    arrivals.push_back({i * 0.01, doc ? 6000 + int(rng() % 4000) : 50 + int(rng() % 200),
                        doc ? 20 : 30 + int(rng() % 40), Priority::kNormal});
  }
  SchedulerOptions o;
  o.max_num_seqs = 64;
  o.max_num_batched_tokens = 2048;
  auto plain = simulate(o, arrivals);
  o.long_prompt_queue = true;
  auto queued = simulate(o, arrivals);
  auto is_short = [](const Sequence& s) { return s.req.prompt_tokens <= 512; };
  const double a = p99_ttft(plain, is_short), b = p99_ttft(queued, is_short);
  std::printf("short p99 TTFT: %.3f s without the long-prompt queue, %.3f s with it\n", a, b);
  EXPECT_LE(b, a / 2);
}

}  // namespace
}  // namespace prima::sched
