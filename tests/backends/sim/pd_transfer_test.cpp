// Disaggregated prefill/decode on the sim backend: the KV hand-off is a SimGrid flow that
// contends with other traffic, and weight loading for a new replica reads from the storage
// host. Each TEST runs in its own process (ctest), since SimGrid allows one engine per process.
#include <gtest/gtest.h>

#include <memory>

#include "backends/sim/platform.h"
#include "backends/sim/sim_fabric.h"
#include "backends/sim/sim_runtime.h"
#include "engine/cluster/serving_engine.h"
#include "tests/backends/sim/sim_test_util.h"

namespace prima::sim {
namespace {

using testing::test_topology;

// Every step takes 10 ms on the simulated clock (the GPUs are not what this test is about).
class TimerExecutor : public Executor {
 public:
  explicit TimerExecutor(Runtime* rt) : rt_(rt) {}
  void launch(const StepBatch&, std::function<void(const StepResult&)> done) override {
    StepResult r;
    r.start_s = rt_->now();
    r.end_s = r.start_s + 0.01;
    r.stage_busy_s = {0.01};
    rt_->at(r.end_s, [r, done = std::move(done)] { done(r); });
  }

 private:
  Runtime* rt_;
};

// Records how long each transfer took.
class TimedFabric : public Fabric {
 public:
  TimedFabric(Fabric* inner, Runtime* rt) : inner_(inner), rt_(rt) {}
  void transfer(DeviceId from, DeviceId to, Bytes n, std::function<void(Status)> done) override {
    const Time start = rt_->now();
    inner_->transfer(from, to, n, [this, start, done = std::move(done)](Status s) {
      EXPECT_TRUE(s.ok()) << s.to_string();
      durations.push_back(rt_->now() - start);
      done(std::move(s));
    });
  }
  std::vector<double> durations;

 private:
  Fabric* inner_;
  Runtime* rt_;
};

cluster::ReplicaSetup on_gpu(Executor* ex, DeviceId d) {
  cluster::ReplicaSetup rs;
  rs.executor = ex;
  rs.num_kv_blocks = 10000;
  rs.devices = {{d}};
  return rs;
}

TEST(SimDisaggregation, TwoHandOffsThroughOneNicTakeTwiceAsLong) {
  auto p = SimPlatform::create(test_topology(3));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  SimRuntime rt;
  SimFabric sim_fabric(p->get(), &rt);
  TimedFabric fabric(&sim_fabric, &rt);
  TimerExecutor ex(&rt);
  metrics::Recorder rec;
  cluster::EngineOptions o;
  o.kv_bytes_per_token = 1e6;  // 1000 prompt tokens: 1 GB of KV
  o.cluster.disaggregation.prefill_replicas = 1;
  o.cluster.disaggregation.decode_replicas = 2;
  // Prefill on node 0; decode replicas on nodes 1 and 2: both hand-offs leave through node
  // 0's NIC (25 GB/s), on different fabric paths.
  cluster::ServingEngine eng(&rt, o, {on_gpu(&ex, 0), on_gpu(&ex, 8), on_gpu(&ex, 16)}, &rec);
  eng.set_fabric(&fabric);
  auto submit = [&](Time t) {
    Request r;
    r.arrival_s = t;
    r.prompt_tokens = 1000;
    r.max_output_tokens = 4;
    eng.submit(r);
  };
  submit(0);       // alone
  rt.at(10, [&] {  // two at once: one prefill step, two hand-offs
    submit(rt.now());
    submit(rt.now());
  });
  (*p)->run();
  EXPECT_EQ(rec.count(Outcome::kCompleted), 3);
  ASSERT_EQ(fabric.durations.size(), 3u);
  const double alone = fabric.durations[0];
  EXPECT_NEAR(alone, 8e-6 + 1e9 / 25e9, 1e-6);
  EXPECT_NEAR(fabric.durations[1], 8e-6 + 2 * 1e9 / 25e9, 1e-6);
  EXPECT_NEAR(fabric.durations[2], 8e-6 + 2 * 1e9 / 25e9, 1e-6);
  // TTFT is the prefill step alone; the transfer shows in TPOT.
  for (const auto& r : rec.records()) EXPECT_NEAR(r.ttft_s(), 0.01, 1e-9);
  EXPECT_EQ(eng.counters().handoffs, 3);
}

}  // namespace
}  // namespace prima::sim
