// Multi-turn sessions and KV offload tiers through `prima simulate`: a conversation's turns
// hit the prefix cache by the hand count; evicted blocks go to host memory and NVMe and come
// back on later turns, with each tier's traffic conserved in report.json; bad sections exit 2
// naming the JSON path.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

// One user, conversations of 3 turns, fixed lengths, no think time: turn 2 resends turn 1
// (512 + 64 tokens) plus 512 new ones and finds turn 1's 512 prompt tokens cached; turn 3
// (1,664 tokens) finds turn 2's 1,088. The generated tokens are not cached (prompt blocks
// only), so 512 + 1,088 = 1,600 hit tokens, 2 hits in 3 lookups.
TEST(Sessions, TurnsHitTheirConversationsPrefixByHand) {
  const std::string dir = temp_dir("sessions");
  std::ofstream(dir + "/s.json") << R"({"name": "sessions", "seed": 1, "duration": "60s",
    "model": "llama-2-7b", "topology": {"base": "dgx_a100", "nodes": 1},
    "scheduler": {"enable_prefix_caching": true},
    "workload": {"arrival": {"type": "closed_loop", "users": 1}, "max_requests": 3,
                 "prompt_tokens": 512, "output_tokens": 64,
                 "sessions": {"turns": 3}}})";
  std::string failure;
  const json r = simulate_report(dir + "/s.json", &failure);
  ASSERT_FALSE(r.is_null()) << failure;
  EXPECT_EQ(r["requests"]["completed"], 3);
  const json& pc = r["prefix_cache"];
  EXPECT_EQ(pc["lookups"], 3) << pc.dump();
  EXPECT_EQ(pc["hits"], 2) << pc.dump();
  EXPECT_EQ(pc["hit_tokens"], 512 + 1088) << pc.dump();
}

// The shipped scenario: 600 users' conversations overflow the GPUs' KV cache; with host and
// NVMe tiers the evicted blocks come back, so more prompt tokens hit and more requests meet
// the SLO than without them. Per tier, written - removed = stored, and what host removes
// (none dropped: NVMe has room) is what NVMe is written.
TEST(KvOffload, TiersBringEvictedConversationsBackAndConserveTraffic) {
  std::string failure;
  const std::string path = source_path("scenarios/policies/multi_turn_kv_offload.json");
  const json with = simulate_report(path, &failure);
  ASSERT_FALSE(with.is_null()) << failure;
  const json without = simulate_report(path + " --set kv_offload=null", &failure);
  ASSERT_FALSE(without.is_null()) << failure;
  const json& tiers = with["kv_tiers"]["tiers"];
  ASSERT_EQ(tiers.size(), 2u);
  EXPECT_EQ(tiers[0]["tier"], "host");
  EXPECT_EQ(tiers[1]["tier"], "nvme");
  for (const json& t : tiers)
    EXPECT_EQ(t["written_blocks"].get<std::int64_t>() - t["removed_blocks"].get<std::int64_t>(),
              t["stored_blocks"].get<std::int64_t>())
        << t.dump();
  EXPECT_EQ(tiers[0]["removed_blocks"], tiers[1]["written_blocks"]);
  EXPECT_GT(tiers[0]["read_blocks"].get<std::int64_t>(), 0);
  EXPECT_GT(tiers[1]["read_blocks"].get<std::int64_t>(), 0);
  EXPECT_GT(with["kv_tiers"]["hit_tokens"].get<std::int64_t>(), 0);
  EXPECT_GT(with["prefix_cache"]["hit_rate"].get<double>(),
            without["prefix_cache"]["hit_rate"].get<double>() + 0.1);
  EXPECT_GT(with["slo"]["attainment"].get<double>(), without["slo"]["attainment"].get<double>());
  EXPECT_FALSE(without.contains("kv_tiers"));
}

// Writes take the tier's write bandwidth: at 200 MB/s per GPU into host memory (against the
// PCIe link's 64 GB/s) the evictions outrun the writes, lookups find blocks still being
// written, and fewer prompt tokens come back than with the default.
TEST(KvOffload, ASlowWriteBandwidthLeavesBlocksUnwrittenWhenTheyAreWanted) {
  std::string failure;
  const std::string path = source_path("scenarios/policies/multi_turn_kv_offload.json");
  const json fast = simulate_report(path, &failure);
  ASSERT_FALSE(fast.is_null()) << failure;
  const json slow = simulate_report(
      path + R"( --set 'kv_offload={"tiers": [{"type": "host", "capacity": "300GB",)"
             R"( "write_bandwidth": "200MB/s"}, {"type": "nvme", "capacity": "4TB",)"
             R"( "bandwidth": "6GB/s"}]}')",
      &failure);
  ASSERT_FALSE(slow.is_null()) << failure;
  const json& f = fast["kv_tiers"]["tiers"][0];
  const json& w = slow["kv_tiers"]["tiers"][0];
  EXPECT_NEAR(w["write_s_per_block"].get<double>() / f["write_s_per_block"].get<double>(),
              64e9 / 200e6, 1e-6);
  EXPECT_GT(w["late_blocks"].get<std::int64_t>(), 10 * (f["late_blocks"].get<std::int64_t>() + 1));
  EXPECT_LT(w["read_blocks"].get<std::int64_t>(), f["read_blocks"].get<std::int64_t>() / 2);
  EXPECT_LT(slow["prefix_cache"]["hit_rate"].get<double>(),
            fast["prefix_cache"]["hit_rate"].get<double>() - 0.05);
  EXPECT_LT(slow["slo"]["attainment"].get<double>(), fast["slo"]["attainment"].get<double>());
}

TEST(KvOffload, BadSectionsNameThePath) {
  const std::string dir = temp_dir("kv_offload_bad");
  auto run = [&](const std::string& extra, const std::string& scheduler) {
    std::ofstream(dir + "/s.json") << R"({"name": "bad", "model": "llama-2-7b",
      "topology": {"base": "dgx_a100", "nodes": 1}, "scheduler": )"
                                   << scheduler << ", " << extra << R"(})";
    return run_prima("simulate " + dir + "/s.json --no-files -q");
  };
  const std::string wl =
      R"("workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 100,
                      "output_tokens": 10})";
  // The default engine (vllm) caches prefixes; with the cache off, offload tiers are an error.
  auto r = run(R"("kv_offload": {"tiers": [{"type": "host", "capacity": "1TB"}]}, )" + wl,
               R"({"enable_prefix_caching": false})");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/kv_offload: KV offload tiers hold prefix-cache blocks"), std::string::npos)
      << r.err;
  r = run(
      R"("kv_offload": {"tiers": [{"type": "nvme", "capacity": "1TB"}, {"type": "host", "capacity": "1TB"}]}, )" +
          wl,
      R"({"enable_prefix_caching": true})");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/kv_offload/tiers: tier 1 (host) must come after and below tier 0 (nvme)"),
            std::string::npos)
      << r.err;
  r = run(
      R"("workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 100,
                      "output_tokens": 10, "sessions": {"turns": 3}})",
      "{}");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/workload/sessions: multi-turn sessions need arrival type closed_loop"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace prima::testing
