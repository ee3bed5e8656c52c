#include "engine/faults/fault_spec.h"

#include <gtest/gtest.h>

#include <cmath>

namespace prima::faults {
namespace {

// bitbrick_k1-like: 2 nodes x 4 GPUs, GPUDirect RDMA on (no PCIe links named).
plan::Topology topo(int nodes = 2, int per_rack = 0) {
  plan::Topology t;
  t.name = "test_topo";
  t.nodes = nodes;
  t.nodes_per_rack = per_rack;
  t.node.gpus = 4;
  return t;
}

std::vector<FaultSpec> parse(const std::string& faults, const plan::Topology& t = topo()) {
  config::Json j = config::Json::parse("{\"faults\": " + faults + "}");
  config::JsonReader r(j, "s.json");
  auto out = parse_faults(r, t, 100, 400);
  r.finish();
  return out;
}

std::string error(const std::string& faults, const plan::Topology& t = topo()) {
  Status st = config::to_status([&] { parse(faults, t); });
  return st.ok() ? "" : st.message();
}

TEST(FaultSpec, AbsentMeansNoFaults) {
  config::Json j = config::Json::object();
  config::JsonReader r(j, "s.json");
  EXPECT_TRUE(parse_faults(r, topo(), 100, 400).empty());
  EXPECT_NO_THROW(r.finish());
  CommEnv env = parse_env(r);
  EXPECT_EQ(env.collective_timeout_s, 600);
  EXPECT_TRUE(env.ucx_memtype_cache);
}

TEST(FaultSpec, ReadsEveryType) {
  auto f = parse(R"([
    {"type": "thermal", "target": "cluster", "start": "10s", "duration": "30s",
     "profile": [[0, 22], [10, 40], [30, 22]], "drift_ppm_per_c": 2},
    {"type": "link_degradation", "target": {"link": "node1_nic"}, "start": 5, "duration": 5,
     "bandwidth_factor": 0.5, "latency_factor": 2},
    {"type": "link_down", "target": {"nic": 0}, "start": 50, "duration": 1},
    {"type": "node_failure", "name": "n1 dies", "target": {"node": 1}, "start": 20,
     "duration": "60s"},
    {"type": "gpu_failure", "target": {"gpu": 7}, "start": 1},
    {"type": "straggler", "target": {"gpu": 2}, "start": 0, "speed_factor": 0.25},
    {"type": "nvlink_saturation", "target": {"node": 0}, "start": 0, "share": 0.7},
    {"type": "rdma_registration_failure", "target": {"node": 1}, "start": 0,
     "failure_rate": 0.1, "retry": "2ms", "max_retries": 4},
    {"type": "unresponsive_peer", "target": {"gpu": 5}, "start": 30, "duration": 10,
     "stall": "8s"},
    {"type": "storage_slowdown", "target": "storage", "start": 0, "bandwidth_factor": 0.2},
    {"type": "corrupted_shard", "target": {"gpu": 3}}
  ])");
  ASSERT_EQ(f.size(), 11u);
  EXPECT_EQ(f[0].type, FaultType::kThermal);
  EXPECT_EQ(f[0].start_s, 10);
  EXPECT_EQ(f[0].end_s, 40);
  ASSERT_EQ(f[0].thermal.profile.size(), 3u);
  EXPECT_EQ(f[0].thermal.profile[1].second, 40);
  EXPECT_EQ(f[0].thermal.drift_ppm_per_c, 2);
  EXPECT_EQ(f[0].target.nodes(topo()), (std::vector<int>{0, 1}));
  EXPECT_EQ(f[1].target.kind, FaultTarget::Kind::kLink);
  EXPECT_EQ(f[1].target.index, 1);
  EXPECT_EQ(f[1].bandwidth_factor, 0.5);
  EXPECT_EQ(f[2].target.describe(), "link node0_nic");
  EXPECT_EQ(f[3].label(3), "n1 dies");
  EXPECT_EQ(f[3].end_s, 80);
  EXPECT_EQ(f[3].target.gpus(topo()), (std::vector<DeviceId>{4, 5, 6, 7}));
  EXPECT_TRUE(std::isinf(f[4].end_s));
  EXPECT_EQ(f[4].label(4), "gpu_failure#4");
  EXPECT_EQ(f[5].speed_factor, 0.25);
  EXPECT_EQ(f[6].share, 0.7);
  EXPECT_EQ(f[7].max_retries, 4);
  EXPECT_DOUBLE_EQ(f[7].retry_s, 0.002);
  EXPECT_EQ(f[8].stall_s, 8);
  EXPECT_EQ(f[9].target.kind, FaultTarget::Kind::kStorage);
  EXPECT_EQ(f[10].type, FaultType::kCorruptedShard);
  EXPECT_TRUE(f[3].active_at(20));
  EXPECT_FALSE(f[3].active_at(80));
}

TEST(FaultSpec, RacksGroupNodes) {
  auto f = parse(R"([{"type": "thermal", "target": {"rack": 1}, "start": 0,
                      "profile": [[0, 30]]}])",
                 topo(6, 2));
  EXPECT_EQ(f[0].target.nodes(topo(6, 2)), (std::vector<int>{2, 3}));
  EXPECT_NE(error(R"([{"type": "thermal", "target": {"rack": 3}, "start": 0,
                       "profile": [[0, 30]]}])",
                  topo(6, 2))
                .find("rack 3 is not in topology test_topo (racks 0-2)"),
            std::string::npos);
}

TEST(FaultSpec, UnknownTargetsNameTheEntry) {
  EXPECT_NE(
      error(R"([{"type": "gpu_failure", "target": {"gpu": 8}, "start": 1}])")
          .find("s.json: /faults/0/target/gpu: gpu 8 is not in topology test_topo (gpus 0-7)"),
      std::string::npos);
  EXPECT_NE(error(R"([{"type": "node_failure", "target": {"node": 2}, "start": 1}])")
                .find("/faults/0/target/node: node 2 is not in topology"),
            std::string::npos);
  EXPECT_NE(error(R"([{"type": "link_down", "target": {"link": "node5_nic"}, "start": 1}])")
                .find("/faults/0/target/link: link \"node5_nic\" is not in topology test_topo"),
            std::string::npos);
  EXPECT_NE(error(R"([{"type": "link_down", "target": {"link": "spine3"}, "start": 1}])")
                .find("unknown link \"spine3\""),
            std::string::npos);
  // PCIe links exist only when GPUDirect RDMA is off.
  EXPECT_NE(error(R"([{"type": "link_down", "target": {"link": "node0_pcie"}, "start": 1}])"), "");
  EXPECT_NE(error(R"([{"type": "link_down", "target": {"gpu": 1}, "start": 1}])")
                .find("/faults/0/target: a link_down fault takes {\"link\": name} or {\"nic\": i}"),
            std::string::npos);
  EXPECT_NE(
      error(R"([{"type": "meteor", "target": "cluster", "start": 1}])").find("/faults/0/type"),
      std::string::npos);
}

TEST(FaultSpec, TimesOutsideTheRunAreErrors) {
  EXPECT_NE(error(R"([{"type": "gpu_failure", "target": {"gpu": 1}, "start": 100}])")
                .find("/faults/0/start: 100 s is outside the run's arrival window [0, 100 s)"),
            std::string::npos);
  EXPECT_NE(error(R"([{"type": "gpu_failure", "target": {"gpu": 1}, "start": -1}])"), "");
  EXPECT_NE(error(R"([{"type": "gpu_failure", "target": {"gpu": 1}, "start": 50,
                       "duration": 1000}])")
                .find("/faults/0/duration: the fault ends at 1050 s, after the run's end (400 s"),
            std::string::npos);
  EXPECT_NE(error(R"([{"type": "gpu_failure", "target": {"gpu": 1}, "start": 5, "duration": 0}])"),
            "");
  EXPECT_NE(
      error(R"([{"type": "corrupted_shard", "target": {"gpu": 1}, "start": 5}])").find("start 0"),
      std::string::npos);
}

TEST(FaultSpec, IncompatibleOverlapsAreErrors) {
  EXPECT_NE(error(R"([
    {"type": "thermal", "target": "cluster", "start": 0, "duration": 50, "profile": [[0, 30]]},
    {"type": "thermal", "target": {"node": 1}, "start": 40, "duration": 10, "profile": [[0, 40]]}
  ])")
                .find("/faults/1: overlaps /faults/0 (thermal#0 on cluster): two thermal faults "
                      "cannot act on node:1 at the same time"),
            std::string::npos);
  EXPECT_NE(error(R"([
    {"type": "link_down", "target": {"nic": 1}, "start": 0, "duration": 50},
    {"type": "link_down", "target": {"link": "node1_nic"}, "start": 10, "duration": 5}
  ])"),
            "");
  // Disjoint windows, or different types on one element, are fine (effects compose).
  EXPECT_EQ(error(R"([
    {"type": "thermal", "target": "cluster", "start": 0, "duration": 50, "profile": [[0, 30]]},
    {"type": "thermal", "target": {"node": 1}, "start": 50, "duration": 10, "profile": [[0, 40]]},
    {"type": "straggler", "target": {"node": 1}, "start": 0},
    {"type": "node_failure", "target": {"node": 1}, "start": 20, "duration": 5}
  ])"),
            "");
}

TEST(FaultSpec, BadParametersNameTheKey) {
  EXPECT_NE(error(R"([{"type": "straggler", "target": {"gpu": 1}, "start": 0,
                       "speed_factor": 0}])")
                .find("/faults/0/speed_factor"),
            std::string::npos);
  EXPECT_NE(error(R"([{"type": "link_degradation", "target": {"nic": 1}, "start": 0}])")
                .find("needs bandwidth_factor < 1 or latency_factor > 1"),
            std::string::npos);
  EXPECT_NE(error(R"([{"type": "thermal", "target": "cluster", "start": 0,
                       "profile": [[0, 30], [0, 31]]}])")
                .find("/faults/0/profile/1"),
            std::string::npos);
  EXPECT_NE(error(R"([{"type": "nvlink_saturation", "target": {"node": 0}, "start": 0,
                       "share": 1}])")
                .find("/faults/0/share"),
            std::string::npos);
  // Keys of other types are not silently accepted.
  EXPECT_NE(error(R"([{"type": "gpu_failure", "target": {"gpu": 1}, "start": 0, "stall": 3}])")
                .find("stall"),
            std::string::npos);
}

TEST(FaultSpec, Env) {
  config::Json j =
      config::Json::parse(R"({"env": {"NCCL_TIMEOUT": "600", "UCX_MEMTYPE_CACHE": "n"}})");
  config::JsonReader r(j, "s.json");
  CommEnv env = parse_env(r);
  EXPECT_EQ(env.collective_timeout_s, 600);
  EXPECT_FALSE(env.ucx_memtype_cache);
  EXPECT_EQ(env.ib_timeout, 18);  // NCCL's default
  EXPECT_NEAR(env.ib_ack_timeout_s(), 1.0737, 1e-4);
  config::Json ib = config::Json::parse(R"({"env": {"NCCL_IB_TIMEOUT": "14"}})");
  EXPECT_NEAR(parse_env(config::JsonReader(ib, "s.json")).ib_ack_timeout_s(), 0.0671, 1e-4);
  config::Json bad_ib = config::Json::parse(R"({"env": {"NCCL_IB_TIMEOUT": 40}})");
  Status ib_st = config::to_status([&] { parse_env(config::JsonReader(bad_ib, "s.json")); });
  EXPECT_NE(ib_st.message().find("/env/NCCL_IB_TIMEOUT: expected an integer 1-31"),
            std::string::npos);
  config::Json bad = config::Json::parse(R"({"env": {"NCCL_TIMOUT": "600"}})");
  Status st = config::to_status([&] { parse_env(config::JsonReader(bad, "s.json")); });
  EXPECT_NE(st.message().find("s.json: /env/NCCL_TIMOUT: unknown variable; known: NCCL_TIMEOUT"),
            std::string::npos);
  config::Json bad2 = config::Json::parse(R"({"env": {"NCCL_TIMEOUT": "soon"}})");
  st = config::to_status([&] { parse_env(config::JsonReader(bad2, "s.json")); });
  EXPECT_NE(st.message().find("/env/NCCL_TIMEOUT: expected seconds > 0"), std::string::npos);
}

}  // namespace
}  // namespace prima::faults
