// Helpers of the KV-cache tests: sequences with a shared prefix, computed into a cache as the
// scheduler does.
#pragma once

#include <gtest/gtest.h>

#include "engine/kv/block_manager.h"

namespace prima::kv::testing {

// Each call is a new request (its own id, as the engine gives every request).
inline Sequence seq(int prompt, std::uint64_t group, int prefix) {
  static RequestId next_id = 1;
  Sequence s;
  s.req.id = next_id++;
  s.req.prompt_tokens = prompt;
  s.req.max_output_tokens = 4;
  s.req.prefix_group = group;
  s.req.prefix_tokens = prefix;
  return s;
}

// Computes the whole prompt of s into the cache (as the scheduler does).
inline void compute(BlockManager& kv, Sequence& s) {
  s.num_computed = kv.match_prefix(s);
  ASSERT_TRUE(kv.grow(s, s.known_tokens()));
  s.num_computed = s.known_tokens();
  kv.commit(s, s.num_computed);
}

}  // namespace prima::kv::testing
