#include "engine/kv/block_manager.h"

#include <gtest/gtest.h>

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
