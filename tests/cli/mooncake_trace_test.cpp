// A Mooncake trace replayed by `prima simulate` with the prefix cache on: requests share the
// KV blocks of their common leading block ids, and the report's prefix_cache counts exactly
// the hand-computed hits. A bad line is exit 2 naming file:line and the field.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

std::string scenario(const std::string& dir, int replicas = 1,
                     const std::string& policy = "round_robin") {
  std::ofstream(dir + "/s.json") << R"({"name": "mooncake", "seed": 1, "duration": "10s",
    "model": "llama-2-7b", "topology": {"base": "dgx_a100", "nodes": 1},
    "deployment": {"replicas": )" << replicas
                                 << R"(}, "router": {"policy": ")" << policy
                                 << R"("}, "scheduler": {"enable_prefix_caching": true},
    "workload": {"arrival": {"type": "trace", "format": "mooncake", "path": "trace.jsonl"}}})";
  return dir + "/s.json";
}

TEST(MooncakeTrace, SharedLeadingBlockIdsHitThePrefixCache) {
  const std::string dir = temp_dir("mooncake");
  // One second apart: each request has finished (its blocks cached) before the next.
  std::ofstream(dir + "/trace.jsonl")
      << R"({"timestamp": 1000, "input_length": 1024, "output_length": 4, "hash_ids": [1, 2]})"
      << "\n"
      << R"({"timestamp": 2000, "input_length": 1500, "output_length": 4, "hash_ids": [1, 2, 3]})"
      << "\n"
      << R"({"timestamp": 3000, "input_length": 1000, "output_length": 4, "hash_ids": [1, 9]})"
      << "\n"
      << R"({"timestamp": 4000, "input_length": 700, "output_length": 4, "hash_ids": [4, 2]})"
      << "\n";
  std::string failure;
  const json r = simulate_report(scenario(dir), &failure);
  ASSERT_FALSE(r.is_null()) << failure;
  EXPECT_EQ(r["requests"]["completed"], 4);
  const json& pc = r["prefix_cache"];
  EXPECT_EQ(pc["lookups"], 4) << pc.dump();
  EXPECT_EQ(pc["hits"], 2) << pc.dump();                 // the second and the third request
  EXPECT_EQ(pc["hit_tokens"], 1024 + 512) << pc.dump();  // two traced blocks, then one
}

// Four replicas: round robin scatters a session's turns (each replica's cache is its own), while
// prefix affinity sends the turns that start with the same block to one replica, where they hit.
TEST(MooncakeTrace, PrefixAffinityKeepsASessionOnTheReplicaThatCachedIt) {
  const std::string dir = temp_dir("mooncake_affinity");
  {
    std::ofstream t(dir + "/trace.jsonl");
    for (int turn = 0; turn < 4; ++turn) {  // one session: each turn extends the last
      t << R"({"timestamp": )" << 1000 * (turn + 1) << R"(, "input_length": )" << 512 * (turn + 2)
        << R"(, "output_length": 4, "hash_ids": [)";
      for (int b = 0; b < turn + 2; ++b) t << (b ? ", " : "") << 100 + b;
      t << "]}\n";
    }
  }
  std::string failure;
  const json rr = simulate_report(scenario(dir, 4), &failure);
  ASSERT_FALSE(rr.is_null()) << failure;
  EXPECT_EQ(rr["prefix_cache"]["hits"], 0) << rr["prefix_cache"].dump();  // a new replica each
  const json pa = simulate_report(scenario(dir, 4, "prefix_affinity"), &failure);
  ASSERT_FALSE(pa.is_null()) << failure;
  EXPECT_EQ(pa["prefix_cache"]["hits"], 3) << pa["prefix_cache"].dump();
  // Turn t (t >= 1) finds the t + 1 blocks of turn t - 1: 1024 + 1536 + 2048 tokens.
  EXPECT_EQ(pa["prefix_cache"]["hit_tokens"], 1024 + 1536 + 2048) << pa["prefix_cache"].dump();
}

TEST(MooncakeTrace, BadLineIsExitTwoNamingTheLineAndField) {
  const std::string dir = temp_dir("mooncake_bad");
  std::ofstream(dir + "/trace.jsonl")
      << R"({"timestamp": 1000, "input_length": 100, "output_length": 4, "hash_ids": [1]})"
      << "\n"
      << R"({"timestamp": 2000, "input_length": 100, "output_length": 4, "hash_ids": [1, 2]})"
      << "\n";
  auto r = run_prima("simulate " + scenario(dir) + " -q --json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("trace.jsonl:2: /hash_ids: 2 block ids for 100 input tokens"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace prima::testing
