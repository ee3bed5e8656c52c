// build_sim_cluster's KV offload tiers: each replica reads a block back at its own pool's
// share of it, a shared tier holds the blocks of every pool, and a tier counts a block's
// bytes once however many TP ranks hold copies of them.
// Each TEST runs in its own process (ctest), since SimGrid allows one engine per process.
#include "backends/sim/sim_cluster.h"

#include <gtest/gtest.h>

namespace prima::sim {
namespace {

std::unique_ptr<SimCluster> cluster(scenario::Scenario* sc, const std::vector<std::string>& sets) {
  auto loaded = scenario::load_scenario("", sets);
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  if (!loaded.ok()) return nullptr;
  *sc = *loaded;
  auto c = build_sim_cluster(*sc);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(*c) : nullptr;
}

const kv::KvTiers& tiers_of(const SimCluster& c, std::size_t replica) {
  return *c.engine->replicas()[replica]->kv().tiers();
}

const char* kTiers =
    R"(kv_offload={"tiers": [{"type": "host", "capacity": "100GB"},
                              {"type": "remote", "capacity": "10TB"}]})";

// Llama-3-70B on two H200 nodes as 4 TP2 prefill replicas and 1 TP8 decode replica: a GPU of
// the decode replica holds 1/4 of what a prefill GPU holds of a block, so it reads a block
// back from host memory (over its own PCIe link) 4x faster; both see the one remote store,
// whose blocks are the model's whole KV of 16 tokens (80 layers x 8 KV heads x 128 x K and V
// x 2 bytes).
TEST(SimCluster, EachPoolReadsTiersAtItsOwnShareOfABlock) {
  scenario::Scenario sc;
  auto c = cluster(&sc, {"model=llama-3-70b", "quantization=fp8",
                         R"(topology={"base": "h200_node", "nodes": 2})",
                         "deployment.parallel_strategy.tensor_parallel=2",
                         "deployment.parallel_strategy.pipeline_parallel=1",
                         "deployment.parallel_strategy.micro_batch=0", "deployment.replicas=5",
                         R"(disaggregation={"prefill_replicas": 4, "decode_replicas": 1,
                             "prefill": {"tensor_parallel": 2}, "decode": {"tensor_parallel": 8}})",
                         "scheduler.enable_prefix_caching=true", kTiers});
  ASSERT_TRUE(c);
  ASSERT_EQ(c->engine->replicas().size(), 5u);
  const double prefill_host = tiers_of(*c, 0).seconds_per_block(0);
  const double decode_host = tiers_of(*c, 4).seconds_per_block(0);
  EXPECT_NEAR(prefill_host / decode_host, 4, 1e-9);
  const double pcie = sc.topology.node.pcie.bandwidth_Bps;
  const double block = sc.scheduler.block_size * 80 * 2 * 8 * 128 * 2.0;
  EXPECT_NEAR(prefill_host, block / 2 / pcie, 1e-12);
  for (std::size_t r = 0; r < 5; ++r)
    EXPECT_EQ(tiers_of(*c, r).tiers()[1].get(), tiers_of(*c, 0).tiers()[1].get()) << r;
  EXPECT_NE(tiers_of(*c, 4).tiers()[0].get(), tiers_of(*c, 0).tiers()[0].get());
  const kv::KvTierSpec& remote = tiers_of(*c, 0).tiers()[1]->spec();
  EXPECT_DOUBLE_EQ(remote.bytes_per_block, block);
  EXPECT_EQ(remote.capacity_blocks, static_cast<std::int64_t>(10e12 / block));
  EXPECT_DOUBLE_EQ(tiers_of(*c, 4).tiers()[0]->spec().bytes_per_block, block);
}

// Qwen3-235B at TP8 has 4 KV heads: each is on 2 ranks. A tier stores a block once (4 heads'
// worth: 16 tokens x 94 layers x K and V x 128 x 2 bytes), and each GPU reads its copy of 1
// head; with context parallelism 2 the ranks hold halves instead of copies: the same block in
// the tier, half a head's worth read by each GPU.
void expect_block_and_read(int cp) {
  scenario::Scenario sc;
  auto c = cluster(&sc, {"model=qwen3-235b-a22b", "quantization=fp8", "topology=h200_node",
                         "deployment.parallel_strategy.tensor_parallel=8",
                         "deployment.parallel_strategy.pipeline_parallel=1",
                         "deployment.parallel_strategy.micro_batch=0",
                         "deployment.parallel_strategy.context_parallel=" + std::to_string(cp),
                         "deployment.replicas=1", "scheduler.enable_prefix_caching=true", kTiers});
  ASSERT_TRUE(c);
  const kv::KvTiers& t = tiers_of(*c, 0);
  const double head = 16 * 94 * 2 * 128 * 2.0;
  EXPECT_DOUBLE_EQ(t.tiers()[0]->spec().bytes_per_block, 4 * head);
  EXPECT_NEAR(t.seconds_per_block(0), head / cp / sc.topology.node.pcie.bandwidth_Bps, 1e-15);
}

TEST(SimCluster, TiersCountABlockOnceWhateverTheCopiesOnTheRanks) {
  expect_block_and_read(1);
}

TEST(SimCluster, ContextParallelRanksReadTheirShareOfABlock) {
  expect_block_and_read(2);
}

}  // namespace
}  // namespace prima::sim
