// The planner driven without the CLI and without simulations: a ProbeRunner that answers from
// a closed form (each GPU carries 1.5 req/s within the SLO). The planner finds each
// configuration's rate, ranks them, answers a target rate with the smallest configuration,
// writes plan.json and results.jsonl, resumes from its results with no new probe, and shards
// partition the work that a merge then reuses.
#include "engine/capacity/planner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/config/json_reader.h"

namespace prima::capacity {
namespace {

using config::Json;
namespace fs = std::filesystem;

// Answers each probe at once: ok while the rate is within 1.5 req/s per GPU of the scenario.
class ClosedFormRunner : public ProbeRunner {
 public:
  int running() const override { return static_cast<int>(pending_.size()); }
  bool full() const override { return running() >= 2; }
  Status start(const ProbeJob& job) override {
    const Json& s = job.scenario;
    const Json& ps = s["deployment"]["parallel_strategy"];
    const int gpus = ps.value("tensor_parallel", 1) * ps.value("pipeline_parallel", 1) *
                     s["deployment"].value("replicas", 1);
    const double rate = s["workload"]["arrival"]["rate_rps"].get<double>();
    ProbeMetrics m;
    m.ok = true;
    const bool meets = rate <= 1.5 * gpus;
    m.ttft_p99_s = meets ? 0.1 : 5.0;
    m.attainment = meets ? 1.0 : 0.5;
    m.goodput_rps = meets ? rate : 0.5 * rate;
    m.throughput_rps = rate;
    m.output_tokens_per_s = 50 * rate;
    m.tpot_mean_s = 0.02;
    m.gpu_utilization = std::min(1.0, rate / (1.5 * gpus));
    m.submitted = m.completed = 100;
    pending_.push_back({job.tag, m});
    ++started_;
    return ok_status();
  }
  std::vector<ProbeDone> wait() override { return std::exchange(pending_, {}); }
  int started() const { return started_; }

 private:
  std::vector<ProbeDone> pending_;
  int started_ = 0;
};

PlanSpec plan(double target_rps) {
  Json j = Json::parse(R"({"scenario": {"model": "llama-2-7b", "topology": "dgx_a100",
      "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 100,
                   "output_tokens": 50}},
    "slo": {"ttft_p99": "300ms"},
    "search": {"topologies": ["dgx_a100"], "tensor_parallel": [1, 2], "replicas": [1, 2, 3]},
    "rate": {"min_rps": 0.5, "max_rps": 20, "tolerance": 0.02}})");
  if (target_rps > 0) j["target"] = {{"rate_rps", target_rps}};
  auto p = parse_plan(j, "p.json", ".");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

std::string fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("prima_planner_test_" + name);
  fs::remove_all(d);
  return d.string();
}

Json read(const std::string& path) {
  std::ifstream f(path);
  return Json::parse(f);
}

TEST(Planner, FindsRatesRanksAndResumesWithoutTheCli) {
  const PlanSpec spec = plan(0);
  PlannerOptions o;
  o.out_dir = fresh_dir("rates");
  ClosedFormRunner runner;
  auto run = run_planner(spec, o, &runner);
  ASSERT_TRUE(run.ok()) << run.status().message();
  const Json& p = run->plan;
  ASSERT_EQ(p["ranked"].size(), 6u);
  for (const Json& e : p["ranked"]) {
    const double capacity = 1.5 * e["config"]["gpus"].get<int>();
    // The search's tolerance of the true threshold, and never above it.
    EXPECT_LE(e["max_rate_rps"].get<double>(), std::min(capacity, 20.0) + 1e-9) << e["key"];
    EXPECT_GE(e["max_rate_rps"].get<double>(), std::min(capacity, 20.0) / 1.02 - 1e-9) << e["key"];
  }
  EXPECT_EQ(read(o.out_dir + "/plan.json")["ranked"], p["ranked"]);
  // Every probe is a line of results.jsonl; a second run reuses them all.
  std::ifstream res(run->results_path);
  int lines = 0;
  for (std::string l; std::getline(res, l);) ++lines;
  EXPECT_EQ(lines, runner.started());
  ClosedFormRunner again;
  auto resumed = run_planner(spec, o, &again);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(again.started(), 0);
  EXPECT_EQ(resumed->plan["ranked"], p["ranked"]);
}

TEST(Planner, AnswersATargetRateWithTheSmallestConfiguration) {
  PlannerOptions o;
  o.out_dir = fresh_dir("target");
  ClosedFormRunner runner;
  // 4 req/s needs 3 GPUs: TP1 x3 (4.5 req/s); TP2 x1 (3 req/s) fails; TP1 x2 fails.
  auto run = run_planner(plan(4), o, &runner);
  ASSERT_TRUE(run.ok()) << run.status().message();
  const Json& t = run->plan["target"];
  EXPECT_EQ(t["fewest_gpus"]["key"], "dgx_a100 A100-SXM4-80GB tp1 pp1 x3");
  EXPECT_EQ(t["fewest_gpus"]["gpus"], 3);
  // x2 was in the space and searched: the answer's minimality rests on it.
  EXPECT_FALSE(t["one_replica_fewer"]["checked"].get<bool>());
}

TEST(Planner, ShardsSplitTheSearchAndTheMergeReusesIt) {
  const PlanSpec spec = plan(0);
  PlannerOptions whole;
  whole.out_dir = fresh_dir("whole");
  ClosedFormRunner a;
  auto ref = run_planner(spec, whole, &a);
  ASSERT_TRUE(ref.ok());

  PlannerOptions shard;
  shard.out_dir = fresh_dir("shards");
  shard.shard_count = 2;
  int started = 0;
  for (int i = 0; i < 2; ++i) {
    shard.shard_index = i;
    ClosedFormRunner r;
    auto s = run_planner(spec, shard, &r);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_TRUE(s->plan.is_null());  // a shard writes results only
    EXPECT_EQ(s->screened.to_search.size(), 3u);
    started += r.started();
  }
  EXPECT_EQ(started, a.started());
  PlannerOptions merge = shard;
  merge.shard_count = 1;
  merge.shard_index = 0;
  ClosedFormRunner m;
  auto merged = run_planner(spec, merge, &m);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(m.started(), 0);
  EXPECT_EQ(merged->plan["ranked"], ref->plan["ranked"]);
}

TEST(Planner, BadInputIsInvalidArgument) {
  Json j = Json::parse(R"({"scenario": {"model": "llama-2-7b", "topology": "dgx_a100",
      "workload": {"arrival": {"type": "closed_loop", "users": 4}}},
    "slo": {"ttft_p99": "300ms"}, "search": {"topologies": ["dgx_a100"]}})");
  auto p = parse_plan(j, "p.json", ".");
  ASSERT_TRUE(p.ok()) << p.status().message();
  PlannerOptions o;
  o.out_dir = fresh_dir("bad");
  ClosedFormRunner r;
  auto run = run_planner(*p, o, &r);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("closed_loop"), std::string::npos);
  EXPECT_FALSE(fs::exists(o.out_dir));  // nothing written for a plan that cannot run
}

}  // namespace
}  // namespace prima::capacity
