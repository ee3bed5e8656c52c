// Log-probabilities in the APIs' shapes (logprobs_json.h) and the sim backend's synthetic
// logprobs (engine_bridge.h): OpenAI completions' parallel lists with text offsets that
// continue across chunks and the sampled token always among the alternatives; chat's exact
// bytes for a token that splits a character; TGI tokens; synthetic logprobs that follow the
// seed, are <= 0, sorted, and list the token itself first.
#include "server/logprobs_json.h"

#include <gtest/gtest.h>

#include "server/engine_bridge.h"
#include "server/text_codec.h"

namespace prima::server {
namespace {

StreamToken token(int index, int id, std::string piece, float lp, std::vector<TokenAlt> top) {
  StreamToken t;
  t.index = index;
  t.id = id;
  t.piece = std::move(piece);
  t.has_logprob = true;
  t.logprob = lp;
  t.top = std::move(top);
  return t;
}

TEST(LogprobsJson, CompletionListsOffsetsAndTheSampledToken) {
  std::size_t offset = 5;  // after an echoed prompt of 5 characters
  const auto a = token(0, 10, " h\xC3\xA9", -0.5f, {{11, "x", -0.1f}, {10, " h\xC3\xA9", -0.5f}});
  const auto b = token(1, 12, "llo", -1.0f, {{13, "y", -0.2f}});  // sampled one not in top
  const auto j = completion_logprobs({a, b}, &offset);
  EXPECT_EQ(j["tokens"], nlohmann::json({" h\xC3\xA9", "llo"}));
  EXPECT_EQ(j["token_logprobs"][1], -1.0f);
  EXPECT_EQ(j["text_offset"], nlohmann::json({5, 8}));  // " hé" is 3 characters
  EXPECT_EQ(offset, 11u);
  EXPECT_EQ(j["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(j["top_logprobs"][1]["llo"], -1.0f);
  EXPECT_EQ(j["top_logprobs"][1]["y"], -0.2f);
}

TEST(LogprobsJson, ChatKeepsTheExactBytesOfASplitCharacter) {
  const auto t = token(0, 5, "\xC3", -2.0f, {{5, "\xC3", -2.0f}});
  const auto j = chat_logprobs({t});
  const auto& e = j["content"][0];
  EXPECT_EQ(e["token"], "\xEF\xBF\xBD");  // U+FFFD: the piece alone is not valid UTF-8
  EXPECT_EQ(e["bytes"], nlohmann::json({195}));
  EXPECT_EQ(e["top_logprobs"][0]["bytes"], nlohmann::json({195}));
  EXPECT_TRUE(j["refusal"].is_null());
  EXPECT_NO_THROW((void)j.dump());
}

TEST(LogprobsJson, TgiTokensUseTheSyntheticIdInSimulation) {
  StreamToken t = token(33, -1, " cluster", -0.25f, {{1, " cluster", -0.25f}});
  EXPECT_EQ(tgi_token(t, t.piece)["id"], 1);  // 33 mod 32
  t.special = true;
  EXPECT_EQ(tgi_token(t, "")["special"], true);
  EXPECT_EQ(tgi_top_tokens(t)[0]["text"], " cluster");
}

TEST(SyntheticLogprobs, FollowTheSeedAndAreSorted) {
  const TextCodec& codec = synthetic_codec();
  for (int index : {0, 5, 40}) {
    StreamToken a, b, c;
    synthetic_logprobs(7, index, 4, codec, &a);
    synthetic_logprobs(7, index, 4, codec, &b);
    synthetic_logprobs(8, index, 4, codec, &c);
    ASSERT_TRUE(a.has_logprob);
    EXPECT_EQ(a.logprob, b.logprob);
    EXPECT_NE(a.logprob, c.logprob);
    EXPECT_LE(a.logprob, 0.f);
    ASSERT_EQ(a.top.size(), 4u);
    EXPECT_EQ(a.top[0].id, index % 32);
    EXPECT_EQ(a.top[0].piece, codec.piece(index, -1));  // the token itself first
    EXPECT_EQ(a.top[0].logprob, a.logprob);
    for (int k = 1; k < 4; ++k) {
      EXPECT_LT(a.top[k].logprob, a.top[k - 1].logprob);
      EXPECT_EQ(a.top[k].id, (index + k) % 32);
    }
  }
}

}  // namespace
}  // namespace prima::server
