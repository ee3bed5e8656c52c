#include "engine/kv/block_manager.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace prima::kv {
namespace {

TEST(BlockManager, GrowsAndReleasesWholeBlocks) {
  BlockManager kv(10, 16, 0.0);
  Sequence s;
  EXPECT_TRUE(kv.grow(s, 1));
  EXPECT_EQ(s.blocks.size(), 1u);
  EXPECT_TRUE(kv.grow(s, 16));
  EXPECT_EQ(s.blocks.size(), 1u);
  EXPECT_TRUE(kv.grow(s, 17));
  EXPECT_EQ(s.blocks.size(), 2u);
  EXPECT_EQ(kv.free_blocks(), 8);
  EXPECT_EQ(s.blocks[0], 0);  // lowest ids first: deterministic
  EXPECT_EQ(s.blocks[1], 1);
  kv.release(s);
  EXPECT_TRUE(s.blocks.empty());
  EXPECT_EQ(kv.free_blocks(), 10);
  EXPECT_EQ(kv.peak_used_blocks(), 2);
}

TEST(BlockManager, RefusesWhenFullWithoutPartialAllocation) {
  BlockManager kv(3, 4, 0.0);
  Sequence a, b;
  ASSERT_TRUE(kv.grow(a, 8));
  EXPECT_FALSE(kv.grow(b, 8));
  EXPECT_TRUE(b.blocks.empty());
  EXPECT_EQ(kv.free_blocks(), 1);
}

// Without block ids (the simulator), the counts and every decision are those of the manager
// that keeps ids, over a random run of grows and releases; no block table is filled.
TEST(BlockManager, CountsOnlyModeDecidesAsWithIds) {
  BlockManager with_ids(80, 16, 0.0), counts(80, 16, 0.0);
  counts.set_keep_ids(false);
  EXPECT_TRUE(with_ids.keeps_ids());
  EXPECT_FALSE(counts.keeps_ids());
  std::vector<Sequence> a(12), b(12);
  std::mt19937 rng(5);
  int refused = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::size_t k = rng() % a.size();
    if (rng() % 4 == 0) {
      with_ids.release(a[k]);
      counts.release(b[k]);
      a[k].num_computed = b[k].num_computed = 0;
    } else {
      const int tokens = a[k].num_computed + 1 + int(rng() % 40);
      const bool ok = with_ids.grow(a[k], tokens);
      ASSERT_EQ(counts.grow(b[k], tokens), ok) << "step " << i;
      if (ok) a[k].num_computed = b[k].num_computed = tokens;
      refused += !ok;
    }
    ASSERT_EQ(counts.free_blocks(), with_ids.free_blocks()) << "step " << i;
    ASSERT_EQ(b[k].num_blocks, a[k].num_blocks);
    ASSERT_EQ(a[k].num_blocks, static_cast<int>(a[k].blocks.size()));
    ASSERT_TRUE(b[k].blocks.empty());
  }
  EXPECT_EQ(counts.peak_used_blocks(), with_ids.peak_used_blocks());
  EXPECT_EQ(with_ids.peak_used_blocks(), 80);  // the run filled the cache
  EXPECT_GT(refused, 0);                       // and was refused blocks
  // Prefix caching needs ids: it turns them back on.
  BlockManager cached(10, 16, 0.0);
  cached.set_prefix_caching(true);
  cached.set_keep_ids(false);
  EXPECT_TRUE(cached.keeps_ids());
}

TEST(BlockManager, WatermarkGuardsAdmission) {
  BlockManager kv(100, 16, 0.1);
  EXPECT_TRUE(kv.can_admit(90));
  EXPECT_FALSE(kv.can_admit(91));
}

TEST(BlockManager, InternalFragmentation) {
  BlockManager kv(10, 16, 0.0);
  Sequence s;
  ASSERT_TRUE(kv.grow(s, 20));  // 2 blocks = 32 slots for 20 tokens
  EXPECT_DOUBLE_EQ(kv.internal_fragmentation(20), 1.0 - 20.0 / 32.0);
}

}  // namespace
}  // namespace prima::kv
