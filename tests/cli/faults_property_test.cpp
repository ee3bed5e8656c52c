// Fault injection's property test: random fault schedules on a small cluster. For every
// schedule the run must end with every request accounted for exactly once (conservation, one
// requests.csv row per request, no duplicate ids, a reason on every rejected or failed
// request), and the same scenario and seed must give the same report. Schedules come from a
// seeded generator, so a failure names a reproducible case (the scenario file is kept in the
// message).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

// Llama-2-13B fp16, TP1 x PP5, two replicas on three bitbrick nodes (12 GPUs): both replicas
// straddle two nodes, so NIC faults hit their pipeline sends. GPUs 10 and 11 are spare.
json base_scenario(int seed) {
  return json{{"name", "fault_property"},
              {"seed", seed},
              {"duration", 30},
              {"max_drain", 600},
              {"model", "llama-2-13b"},
              {"topology", {{"base", "bitbrick_k1"}, {"nodes", 3}}},
              {"deployment",
               {{"parallel_strategy", {{"tensor_parallel", 1}, {"pipeline_parallel", 5}}},
                {"replicas", 2}}},
              {"scheduler", {{"max_num_seqs", 32}, {"max_num_batched_tokens", 2048}}},
              {"health", {{"probe_interval", "2s"}, {"pending_timeout", "120s"}}},
              {"workload",
               {{"arrival", {{"type", "poisson"}, {"rate_rps", 3}}},
                {"prompt_tokens", {{"type", "uniform"}, {"min", 50}, {"max", 600}}},
                {"output_tokens", {{"type", "uniform"}, {"min", 10}, {"max", 120}}}}}};
}

// One random fault. Windows are short and types distinct per schedule, so overlaps of the
// same type on one element cannot happen (they are load-time errors, tested elsewhere).
json random_fault(const std::string& type, std::mt19937_64& g) {
  std::uniform_real_distribution<double> start(0, 25), dur(1, 20), u(0, 1);
  std::uniform_int_distribution<int> node(0, 2), gpu(0, 11);
  json f{{"type", type}, {"start", std::round(start(g) * 10) / 10}};
  if (type == "corrupted_shard") f["start"] = 0;
  if (type != "corrupted_shard") f["duration"] = std::round(dur(g) * 10) / 10;
  if (type == "thermal") {
    f["target"] = u(g) < 0.5 ? json("cluster") : json{{"node", node(g)}};
    const double d = f["duration"].get<double>();
    f["profile"] = json::array(
        {json::array({0, 22}), json::array({d / 3, 30 + 30 * u(g)}), json::array({d, 24})});
  } else if (type == "link_degradation") {
    f["target"] = json{{"nic", node(g)}};
    f["bandwidth_factor"] = 0.05 + 0.9 * u(g);
    f["latency_factor"] = 1 + 10 * u(g);
  } else if (type == "link_down") {
    f["target"] = json{{"nic", node(g)}};
  } else if (type == "node_failure") {
    f["target"] = json{{"node", node(g)}};
  } else if (type == "gpu_failure" || type == "unresponsive_peer" || type == "corrupted_shard") {
    f["target"] = json{{"gpu", gpu(g)}};
    if (type == "unresponsive_peer") f["stall"] = 0.5 + 10 * u(g);
  } else if (type == "straggler") {
    f["target"] = json{{"gpu", gpu(g)}};
    f["speed_factor"] = 0.1 + 0.8 * u(g);
  } else if (type == "nvlink_saturation") {
    f["target"] = json{{"node", node(g)}};
    f["share"] = 0.9 * u(g);
  } else if (type == "rdma_registration_failure") {
    f["target"] = u(g) < 0.3 ? json("cluster") : json{{"node", node(g)}};
    f["failure_rate"] = u(g);
    f["max_retries"] = static_cast<int>(4 * u(g));
  } else if (type == "storage_slowdown") {
    f["target"] = "storage";
    f["bandwidth_factor"] = 0.05 + 0.9 * u(g);
  }
  return f;
}

json random_schedule(int index) {
  std::mt19937_64 g(0x5eed0000u + static_cast<unsigned>(index));
  static const std::vector<std::string> types = {
      "thermal",           "link_degradation", "link_down",         "node_failure",
      "gpu_failure",       "straggler",        "nvlink_saturation", "rdma_registration_failure",
      "unresponsive_peer", "storage_slowdown", "corrupted_shard"};
  json sc = base_scenario(1 + index % 7);
  std::vector<std::string> pool = types;
  std::shuffle(pool.begin(), pool.end(), g);
  const int n = 1 + static_cast<int>(g() % 4);
  json faults = json::array();
  for (int i = 0; i < n; ++i) faults.push_back(random_fault(pool[i], g));
  sc["faults"] = faults;
  if (g() % 3 == 0) sc["env"] = json{{"NCCL_TIMEOUT", std::to_string(1 + g() % 10)}};
  if (g() % 4 == 0) sc["health"]["min_available"] = 1;
  return sc;
}

void check_run(const json& sc, const std::string& dir, json* report) {
  const std::string file = dir + "/scenario.json";
  std::ofstream(file) << sc.dump(1);
  auto r = run_prima("simulate " + file + " --out " + dir + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\nscenario: " << sc.dump();
  *report = read_json(dir + "/report.json");
  const auto& q = (*report)["requests"];
  const long submitted = q["submitted"].get<long>();
  EXPECT_GT(submitted, 0);
  EXPECT_EQ(submitted,
            q["completed"].get<long>() + q["rejected"].get<long>() + q["failed"].get<long>())
      << sc.dump();
  // requests.csv: one row per request, each id once, a reason on every non-completed row.
  std::istringstream in(read_file(dir + "/requests.csv"));
  std::string line;
  std::getline(in, line);
  std::set<long> ids;
  long rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    const long id = std::stol(line.substr(0, line.find(',')));
    EXPECT_TRUE(ids.insert(id).second) << "request " << id << " ended twice: " << sc.dump();
    if (line.find(",completed,") == std::string::npos) {
      EXPECT_EQ(line.find(",\"\""), std::string::npos) << "no reason: " << line;
      // Every fault here ends within 20 s and the drain allows 600 s: a request still in the
      // system at the drain limit means something hung (liveness), not slowness.
      EXPECT_EQ(line.find("drain limit"), std::string::npos) << line << "\n" << sc.dump();
      if (std::getenv("PRIMA_FAULT_REASONS") != nullptr) {  // diagnostics for a bug hunt
        std::string why = line.substr(line.find(",\"") + 2, 48);
        for (char& c : why)
          if (c >= '0' && c <= '9') c = 'N';
        std::fprintf(stderr, "reason: %s | %s\n", why.c_str(), sc["faults"].dump().c_str());
      }
    }
  }
  EXPECT_EQ(rows, submitted) << sc.dump();
  EXPECT_EQ((*report)["incidents"].size(), sc["faults"].size());
}

TEST(FaultProperty, RandomSchedulesConserveRequestsAndAreDeterministic) {
  // 200 in CI; PRIMA_FAULT_SCHEDULES=N runs more (a longer local bug hunt).
  const char* env = std::getenv("PRIMA_FAULT_SCHEDULES");
  const int kSchedules = env != nullptr ? std::max(1, std::atoi(env)) : 200;
  // The schedules must exercise the failure paths, not just run clean.
  long replica_failures = 0, recoveries = 0, reroutes = 0, probes_failed = 0, load_errors = 0,
       failed = 0;
  for (int i = 0; i < kSchedules; ++i) {
    SCOPED_TRACE("schedule " + std::to_string(i));
    json sc = random_schedule(i);
    json a, b;
    check_run(sc, temp_dir("fault_prop_a"), &a);
    if (HasFatalFailure()) return;
    check_run(sc, temp_dir("fault_prop_b"), &b);
    if (HasFatalFailure()) return;
    EXPECT_EQ(without_run(a), without_run(b)) << "not deterministic: " << sc.dump();
    const json& f = a["failover"];
    replica_failures += f["replica_failures"].get<long>();
    recoveries += f["replica_recoveries"].get<long>();
    reroutes += f["reroutes"].get<long>();
    probes_failed += f["probes_failed"].get<long>();
    load_errors += a.contains("load_errors") ? 1 : 0;
    failed += a["requests"]["failed"].get<long>();
  }
  if (kSchedules < 200) return;  // the thresholds below are for the full set
  EXPECT_GT(replica_failures, 20);
  EXPECT_GT(recoveries, 10);
  EXPECT_GT(reroutes, 50);
  EXPECT_GT(probes_failed, 0);
  EXPECT_GT(load_errors, 5);
  std::printf(
      "%d schedules: %ld replica failures, %ld recoveries, %ld re-routed requests, "
      "%ld failed probes, %ld runs with a corrupted shard, %ld failed requests\n",
      kSchedules, replica_failures, recoveries, reroutes, probes_failed, load_errors, failed);
}

}  // namespace
}  // namespace prima::testing
