// Sequence's layout: what every step touches sits in its first cache line (request.h), and the
// BlockManager keeps Sequence::num_blocks equal to the block table's size.
#include "engine/core/request.h"

#include <gtest/gtest.h>

#include <cstddef>

#include "engine/kv/block_manager.h"

namespace prima {
namespace {

std::ptrdiff_t offset(const Sequence& s, const void* field) {
  return static_cast<const char*>(field) - reinterpret_cast<const char*>(&s);
}

TEST(Sequence, StepFieldsShareTheFirstCacheLine) {
  EXPECT_EQ(alignof(Sequence), 64u);
  const Sequence s;
  for (const void* f : {static_cast<const void*>(&s.num_computed),
                        static_cast<const void*>(&s.num_generated),
                        static_cast<const void*>(&s.step_tokens),
                        static_cast<const void*>(&s.num_blocks),
                        static_cast<const void*>(&s.in_flight), static_cast<const void*>(&s.running),
                        static_cast<const void*>(&s.scheduled),
                        static_cast<const void*>(&s.last_token_s),
                        static_cast<const void*>(&s.run_rank), static_cast<const void*>(&s.req.id),
                        static_cast<const void*>(&s.req.arrival_s),
                        static_cast<const void*>(&s.req.prompt_tokens)})
    EXPECT_LT(offset(s, f), 64);
  EXPECT_LE(offset(s, &s.req.max_output_tokens) + std::ptrdiff_t(sizeof(int)), 64);
}

TEST(Sequence, BlockManagerKeepsNumBlocks) {
  kv::BlockManager kv(64, 16, 0.0);
  Sequence s;
  s.req.prompt_tokens = 40;
  s.req.max_output_tokens = 100;
  ASSERT_TRUE(kv.grow(s, 40));
  EXPECT_EQ(s.num_blocks, 3);
  EXPECT_EQ(s.blocks.size(), 3u);
  EXPECT_TRUE(kv.grow(s, 48));  // still 3 blocks
  EXPECT_EQ(s.num_blocks, 3);
  ASSERT_TRUE(kv.grow(s, 49));
  EXPECT_EQ(s.num_blocks, 4);
  EXPECT_GE(s.blocks.capacity(), 9u);  // reserved for prompt + output (140 tokens) at once
  EXPECT_FALSE(kv.grow(s, 64 * 16 + 1));  // more than the cache: no change
  EXPECT_EQ(s.num_blocks, 4);
  kv.release(s);
  EXPECT_EQ(s.num_blocks, 0);
  EXPECT_TRUE(s.blocks.empty());
  EXPECT_EQ(kv.free_blocks(), 64);
}

}  // namespace
}  // namespace prima
