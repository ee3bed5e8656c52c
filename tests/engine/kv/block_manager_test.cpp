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

// Over a random run of grows and releases, every sequence's block table holds its block
// count of distinct ids, and held plus free blocks make the cache.
TEST(BlockManager, BlockTablesAndFreeCountBalanceOverARandomRun) {
  BlockManager kv(80, 16, 0.0);
  std::vector<Sequence> a(12);
  std::mt19937 rng(5);
  int refused = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::size_t k = rng() % a.size();
    if (rng() % 4 == 0) {
      kv.release(a[k]);
      a[k].num_computed = 0;
    } else {
      const int tokens = a[k].num_computed + 1 + int(rng() % 40);
      const bool ok = kv.grow(a[k], tokens);
      if (ok) a[k].num_computed = tokens;
      refused += !ok;
    }
    int held = 0;
    std::vector<char> seen(80, 0);
    for (const Sequence& s : a) {
      ASSERT_EQ(s.num_blocks, static_cast<int>(s.blocks.size())) << "step " << i;
      held += s.num_blocks;
      for (int blk : s.blocks) {
        ASSERT_FALSE(seen[blk]) << "block " << blk << " held twice at step " << i;
        seen[blk] = 1;
      }
    }
    ASSERT_EQ(held + kv.free_blocks(), 80) << "step " << i;
  }
  EXPECT_EQ(kv.peak_used_blocks(), 80);  // the run filled the cache
  EXPECT_GT(refused, 0);                 // and was refused blocks
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
