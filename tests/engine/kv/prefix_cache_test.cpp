// Prefix cache of the paged KV cache: hash-chained full blocks, reference counts, LRU
// eviction of released cached blocks, compaction.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/kv/block_manager.h"
#include "tests/engine/kv/kv_test_util.h"

namespace prima::kv {
namespace {

using testing::compute;
using testing::seq;

TEST(PrefixCache, SharesFullPrefixBlocksWithRefCounts) {
  BlockManager kv(20, 4, 0.0);
  kv.set_prefix_caching(true);
  Sequence a = seq(14, 1, 10), b = seq(12, 1, 10);
  compute(kv, a);  // 4 blocks; blocks 0 and 1 (8 tokens) lie inside the 10-token prefix
  EXPECT_EQ(kv.used_blocks(), 4);
  EXPECT_EQ(kv.match_prefix(b), 8);
  EXPECT_EQ(b.blocks, (std::vector<int>{a.blocks[0], a.blocks[1]}));
  EXPECT_EQ(kv.ref_count(a.blocks[0]), 2);
  EXPECT_EQ(kv.used_blocks(), 4);  // shared, not copied

  // Release order does not matter: a first, then b.
  kv.release(a);
  EXPECT_EQ(kv.ref_count(b.blocks[0]), 1);
  EXPECT_EQ(kv.used_blocks(), 2);
  const int b0 = b.blocks[0];
  kv.release(b);
  EXPECT_EQ(kv.ref_count(b0), 0);
  EXPECT_EQ(kv.cached_blocks(), 2);  // still cached, evictable
  EXPECT_EQ(kv.free_blocks(), 20);
}

TEST(PrefixCache, OtherGroupsAndOffMeanNoHit) {
  BlockManager kv(20, 4, 0.0);
  kv.set_prefix_caching(true);
  Sequence a = seq(14, 1, 12), b = seq(14, 2, 12);
  compute(kv, a);
  EXPECT_EQ(kv.match_prefix(b), 0);
  BlockManager off(20, 4, 0.0);
  Sequence c = seq(14, 1, 12), d = seq(14, 1, 12);
  compute(off, c);
  EXPECT_EQ(off.match_prefix(d), 0);
}

TEST(PrefixCache, NeverTheWholePrompt) {
  BlockManager kv(20, 4, 0.0);
  kv.set_prefix_caching(true);
  Sequence a = seq(8, 1, 8), b = seq(8, 1, 8);
  compute(kv, a);
  EXPECT_EQ(kv.match_prefix(b), 4);  // 8 cached, but the last token must be computed
}

TEST(PrefixCache, RealTokenIdsHashTheBlockContents) {
  BlockManager kv(20, 4, 0.0);
  kv.set_prefix_caching(true);
  Sequence a, b, c;
  a.req.prompt_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  b.req.prompt_ids = {1, 2, 3, 4, 5, 6, 7, 0, 9};  // differs in the second block
  c.req.prompt_ids = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2};
  for (Sequence* s : {&a, &b, &c}) s->req.prompt_tokens = int(s->req.prompt_ids.size());
  compute(kv, a);
  EXPECT_EQ(kv.match_prefix(b), 4);
  EXPECT_EQ(kv.match_prefix(c), 8);
}

// A Mooncake trace's block ids: requests share the blocks of their common leading ids, at the
// prima block size (16 tokens per block, 32 per traced 512-token block), whatever comes after.
TEST(PrefixCache, TracedBlockIdsShareTheCommonLeadingBlocks) {
  BlockManager kv(1000, 16, 0.0);
  kv.set_prefix_caching(true);
  auto traced = [](int prompt, std::vector<std::uint64_t> ids) {
    Sequence s;
    s.req.prompt_tokens = prompt;
    s.req.max_output_tokens = 4;
    s.req.prefix_hashes = std::make_shared<const std::vector<std::uint64_t>>(std::move(ids));
    s.req.prefix_hash_tokens = 512;
    s.req.prefix_tokens = std::min<int>(prompt, 512 * s.req.prefix_hashes->size());
    return s;
  };
  Sequence a = traced(1024, {1, 2});
  compute(kv, a);
  Sequence b = traced(1500, {1, 2, 3});
  EXPECT_EQ(kv.match_prefix(b), 1024);  // both of a's traced blocks
  Sequence c = traced(1000, {1, 9});
  EXPECT_EQ(kv.match_prefix(c), 512);  // the first only
  Sequence d = traced(700, {4, 2});
  EXPECT_EQ(kv.match_prefix(d), 0);  // the same second id after another first: not a prefix
  Sequence e = traced(520, {1});
  EXPECT_EQ(kv.match_prefix(e), 512);
}

// Past the shared prefix a prompt's full blocks are the request's own: no other request hits
// them, but the request itself does when it is admitted again after a preemption (recompute),
// as long as they were not evicted.
TEST(PrefixCache, APreemptedRequestFindsItsOwnPromptBlocks) {
  BlockManager kv(20, 4, 0.0);
  kv.set_prefix_caching(true);
  Sequence a = seq(14, 0, 0);  // nothing shared: 3 full blocks of its own
  compute(kv, a);
  Sequence other = seq(14, 0, 0);
  EXPECT_EQ(kv.match_prefix(other), 0);
  kv.keep_for_recompute(a);  // preempted: its blocks stay cached
  kv.release(a);
  a.num_computed = 0;
  EXPECT_EQ(kv.cached_blocks(), 3);
  EXPECT_EQ(kv.match_prefix(a), 12);
  kv.release(a);
  // Evicted (tail first) by another request's blocks: only the head is left.
  Sequence big = seq(4 * 19, 0, 0);
  ASSERT_TRUE(kv.grow(big, big.known_tokens()));
  EXPECT_EQ(kv.match_prefix(a), 4);
  kv.release(a);
  kv.release(big);
  // A request that finishes leaves its own blocks free, not cached: nobody else can use them.
  Sequence d = seq(14, 0, 0);
  compute(kv, d);
  kv.release(d);
  EXPECT_EQ(kv.match_prefix(d), 0);
  // Off: nothing stays cached.
  BlockManager off(20, 4, 0.0);
  Sequence c = seq(14, 0, 0);
  compute(off, c);
  off.keep_for_recompute(c);
  off.release(c);
  c.num_computed = 0;
  EXPECT_EQ(off.match_prefix(c), 0);
}

TEST(PrefixCache, EvictsLeastRecentlyReleasedWhenFreeListIsEmpty) {
  BlockManager kv(4, 4, 0.0);
  kv.set_prefix_caching(true);
  Sequence a = seq(9, 1, 8), b = seq(9, 2, 8);
  compute(kv, a);  // 3 blocks, 2 cached
  kv.release(a);
  compute(kv, b);  // takes the 2 free blocks and evicts 1 cached one (a's tail first)
  EXPECT_EQ(kv.evictions(), 1);
  kv.release(b);
  Sequence a2 = seq(9, 1, 8);
  EXPECT_EQ(kv.match_prefix(a2), 4);  // a's chain kept its head block only
  Sequence b2 = seq(9, 2, 8);
  EXPECT_EQ(kv.match_prefix(b2), 8);
}

TEST(PrefixCache, StatisticsAndCompaction) {
  BlockManager kv(10, 4, 0.0);
  kv.set_prefix_caching(true);
  kv.note_lookup(100, 0);
  kv.note_lookup(100, 50);
  EXPECT_EQ(kv.prefix_lookups(), 2);
  EXPECT_EQ(kv.prefix_hits(), 1);
  EXPECT_DOUBLE_EQ(kv.prefix_hit_rate(), 0.25);
  Sequence a = seq(9, 1, 8);
  compute(kv, a);
  kv.release(a);
  EXPECT_EQ(kv.cached_blocks(), 2);
  EXPECT_EQ(kv.compact(), 2);
  EXPECT_EQ(kv.cached_blocks(), 0);
  EXPECT_EQ(kv.compactions(), 1);
  Sequence c;
  ASSERT_TRUE(kv.grow(c, 4));
  EXPECT_EQ(c.blocks[0], 0);  // free list order restored: lowest id first
}

}  // namespace
}  // namespace prima::kv
