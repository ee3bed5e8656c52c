// KV offload tiers: LRU store, demotion down the hierarchy, inclusive reads, traffic
// conservation; the prefix cache offloading its evicted blocks and reading them back.
#include "engine/kv/kv_tiers.h"

#include <gtest/gtest.h>

#include <memory>

#include "engine/kv/block_manager.h"
#include "tests/engine/kv/kv_test_util.h"

namespace prima::kv {
namespace {

std::shared_ptr<KvTier> tier(const char* name, std::int64_t blocks, double s_per_block) {
  return std::make_shared<KvTier>(KvTierSpec{name, blocks, s_per_block, 1e6});
}

// written - removed = stored for every tier, and what one tier removes without dropping is
// what the next one is written.
void expect_conserved(const KvTiers& t) {
  for (std::size_t i = 0; i < t.tiers().size(); ++i) {
    const KvTierStats& s = t.tiers()[i]->stats();
    EXPECT_EQ(s.written - s.removed, s.stored) << t.tiers()[i]->spec().name;
    if (i + 1 < t.tiers().size())
      EXPECT_EQ(s.removed - s.dropped, t.tiers()[i + 1]->stats().written);
    else
      EXPECT_EQ(s.removed, s.dropped);
  }
}

TEST(KvTiers, OffloadDemotesDownTheHierarchyAndConserves) {
  KvTiers t({tier("host", 2, 1e-3), tier("nvme", 3, 1e-2)});
  for (std::uint64_t h = 1; h <= 7; ++h) t.offload(h);
  // host keeps the two newest (6, 7); nvme the three before (3, 4, 5); 1 and 2 fell off.
  const auto& host = t.tiers()[0]->stats();
  const auto& nvme = t.tiers()[1]->stats();
  EXPECT_EQ(host.written, 7);
  EXPECT_EQ(host.removed, 5);
  EXPECT_EQ(host.stored, 2);
  EXPECT_EQ(nvme.written, 5);
  EXPECT_EQ(nvme.removed, 2);
  EXPECT_EQ(nvme.dropped, 2);
  EXPECT_EQ(nvme.stored, 3);
  EXPECT_TRUE(t.tiers()[0]->contains(7));
  EXPECT_TRUE(t.tiers()[1]->contains(3));
  EXPECT_FALSE(t.tiers()[1]->contains(2));
  expect_conserved(t);
}

TEST(KvTiers, ReadsAreInclusiveAndRefreshTheLru) {
  KvTiers t({tier("host", 2, 1e-3), tier("nvme", 4, 1e-2)});
  t.offload(1);
  t.offload(2);
  EXPECT_EQ(t.read(1), 0);  // a host hit; 1 is now the most recently used
  t.offload(3);             // evicts 2 (least recent), not 1
  EXPECT_TRUE(t.tiers()[0]->contains(1));
  EXPECT_TRUE(t.tiers()[1]->contains(2));
  EXPECT_EQ(t.read(2), 1);  // found on nvme, stays there
  t.offload(2);             // the GPU evicts it again: a tier holds it, nothing is written
  EXPECT_EQ(t.tiers()[0]->stats().written, 3);
  EXPECT_EQ(t.tiers()[1]->stats().written, 1);
  EXPECT_EQ(t.read(99), -1);
  EXPECT_EQ(t.tiers()[0]->stats().read + t.tiers()[1]->stats().read, 2);
  expect_conserved(t);
}

TEST(KvTiers, ASharedTierMeetsEveryReplicasBlocks) {
  auto remote = tier("remote", 10, 5e-3);
  KvTiers a({tier("host", 1, 1e-3), remote}), b({tier("host", 1, 1e-3), remote});
  a.offload(1);
  a.offload(2);             // 1 demoted to the shared remote tier
  EXPECT_EQ(b.read(1), 1);  // replica b reads what replica a offloaded
}

// Writes queue per replica and tier at the write time per block, from the time they are
// asked; a block is readable once written, and a lookup before that is a late miss.
TEST(KvTiers, WritesQueueAndBlocksAreReadableWhenWritten) {
  KvTiers t({tier("host", 10, 1e-3)}, {}, {0.5});
  EXPECT_EQ(t.write_seconds_per_block(0), 0.5);
  t.set_now(0);
  t.offload(1);  // readable at 0.5
  t.offload(2);  // queued behind it: 1.0
  t.set_now(0.4);
  EXPECT_EQ(t.read(1), -1);
  EXPECT_EQ(t.tiers()[0]->stats().late, 1);
  t.set_now(0.6);
  EXPECT_EQ(t.read(1), 0);
  EXPECT_EQ(t.read(2), -1);
  EXPECT_EQ(t.tiers()[0]->stats().late, 2);
  t.set_now(2.0);
  t.offload(3);  // the queue is idle: from now, readable at 2.5
  EXPECT_EQ(t.read(2), 0);
  EXPECT_EQ(t.read(3), -1);
  t.set_now(2.5);
  EXPECT_EQ(t.read(3), 0);
  EXPECT_EQ(t.tiers()[0]->stats().read, 3);
  expect_conserved(t);
  // Another replica's queue into a shared tier is its own.
  auto remote = tier("remote", 10, 1e-3);
  KvTiers a({remote}, {}, {1.0}), b({remote}, {}, {1.0});
  a.offload(7);
  b.offload(8);
  a.set_now(1.0);
  EXPECT_EQ(a.read(8), 0);  // b's write finished at 1.0 too
}

Sequence seq(int prompt, std::uint64_t group) {
  return testing::seq(prompt, group, prompt);
}
using testing::compute;

// A 6-block GPU cache of 4-token blocks: group 1's 4 cached blocks are evicted by group 2,
// offloaded to host, and group 1's next request reads 4 blocks back (16 tokens, the last one
// recomputed, so 3 blocks = 12 tokens) at 1 ms each instead of recomputing them.
TEST(KvTiers, EvictedPrefixBlocksAreReadBackWithTheirTime) {
  BlockManager kv(6, 4, 0.0);
  kv.set_prefix_caching(true);
  auto tiers =
      std::make_shared<KvTiers>(std::vector<std::shared_ptr<KvTier>>{tier("host", 8, 1e-3)});
  kv.set_tiers(tiers);
  Sequence a = seq(16, 1);
  compute(kv, a);
  kv.release(a);  // 4 cached blocks, evictable
  Sequence b = seq(24, 2);
  compute(kv, b);  // needs 6 blocks: evicts all 4 of group 1
  EXPECT_EQ(kv.evictions(), 4);
  EXPECT_EQ(tiers->tiers()[0]->stats().written, 4);
  kv.release(b);
  Sequence c = seq(16, 1);
  EXPECT_EQ(kv.match_prefix(c), 12);  // (16 - 1) / 4 = 3 blocks: the last token is computed
  EXPECT_EQ(tiers->tiers()[0]->stats().read, 3);
  EXPECT_EQ(kv.tier_hit_tokens(), 12);
  EXPECT_NEAR(kv.take_load_s(), 3e-3, 1e-15);
  EXPECT_EQ(kv.take_load_s(), 0);  // charged once
  // The blocks read back are cached on the GPU again: another request shares them.
  ASSERT_TRUE(kv.grow(c, 16));
  c.num_computed = 16;
  kv.commit(c, 16);
  Sequence d = seq(16, 1);
  EXPECT_EQ(kv.match_prefix(d), 12);
  EXPECT_EQ(tiers->tiers()[0]->stats().read, 3);  // no more tier reads
}

// The block manager passes the step's time to its tiers: blocks evicted at 0 into a tier that
// writes one per second are written by 1, 2, 3 and 4 s, the chain's head last (the cache
// evicts a released sequence's blocks tail first); a request at 1.5 s finds the head still
// being written and reads nothing back, one at 10 s reads all three.
TEST(KvTiers, ThePrefixCacheSeesOnlyWrittenBlocks) {
  BlockManager kv(6, 4, 0.0);
  kv.set_prefix_caching(true);
  auto tiers =
      std::make_shared<KvTiers>(std::vector<std::shared_ptr<KvTier>>{tier("host", 8, 1e-3)},
                                std::vector<double>{}, std::vector<double>{1.0});
  kv.set_tiers(tiers);
  kv.set_now(0);
  Sequence a = seq(16, 1);
  compute(kv, a);
  kv.release(a);
  Sequence b = seq(24, 2);
  compute(kv, b);  // evicts group 1's 4 blocks at 0 s
  kv.release(b);
  kv.set_now(1.5);
  Sequence c = seq(16, 1);
  EXPECT_EQ(kv.match_prefix(c), 0);
  EXPECT_EQ(tiers->tiers()[0]->stats().late, 1);
  kv.release(c);
  kv.set_now(10);
  Sequence d = seq(16, 1);
  EXPECT_EQ(kv.match_prefix(d), 12);
}

}  // namespace
}  // namespace prima::kv
