// TextDecoder: output text released token by token — stop strings (also split across
// tokens) end the text before them, incomplete UTF-8 waits for its end, invalid UTF-8 becomes
// U+FFFD — and the codecs' prompt encoding for the sim backend.
#include "server/text_decoder.h"

#include <gtest/gtest.h>

#include "server/synthetic_text.h"
#include "server/text_codec.h"

namespace prima::server {
namespace {

std::string run(TextDecoder& d, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += d.push(p);
  return out + d.flush();
}

TEST(TextDecoder, WithoutStopsTheTextIsTheConcatenation) {
  TextDecoder d;
  EXPECT_EQ(d.push(" Hello"), " Hello");
  EXPECT_EQ(d.push(","), ",");
  EXPECT_EQ(d.flush(), "");
  EXPECT_FALSE(d.stopped());
}

TEST(TextDecoder, StopStringSplitAcrossTokensIsNeverReleased) {
  TextDecoder d({"END"});
  EXPECT_EQ(d.push("abc E"), "abc ");  // "E" could start "END": held back
  EXPECT_EQ(d.push("N"), "");
  EXPECT_EQ(d.push("Dxyz"), "");
  EXPECT_TRUE(d.stopped());
  EXPECT_EQ(d.push("more"), "");
  EXPECT_EQ(d.flush(), "");
}

TEST(TextDecoder, AFalseStartIsReleasedOnceItCannotBeAStop) {
  TextDecoder d({"END"});
  EXPECT_EQ(d.push("E"), "");
  EXPECT_EQ(d.push("Nx"), "ENx");
  EXPECT_FALSE(d.stopped());
  EXPECT_EQ(d.push("EN"), "");
  EXPECT_EQ(d.flush(), "EN");  // the end: what was held comes out
}

TEST(TextDecoder, TheEarliestOfSeveralStopsWins) {
  TextDecoder d({"\n\n", "."});
  EXPECT_EQ(run(d, {"One", " two", ". Three\n\n"}), "One two");
  EXPECT_TRUE(d.stopped());
}

TEST(TextDecoder, EveryWayOfSplittingGivesTheSameText) {
  const std::string text = "caf\xC3\xA9 \xE2\x82\xAC 12 STOP tail";
  for (std::size_t cut1 = 0; cut1 <= text.size(); ++cut1)
    for (std::size_t cut2 = cut1; cut2 <= text.size(); ++cut2) {
      TextDecoder d({"STOP"});
      std::string out;
      for (const auto& p :
           {text.substr(0, cut1), text.substr(cut1, cut2 - cut1), text.substr(cut2)}) {
        const std::string r = d.push(p);
        EXPECT_EQ(valid_utf8(r), r) << "released invalid UTF-8 at cuts " << cut1 << "," << cut2;
        out += r;
      }
      out += d.flush();
      EXPECT_EQ(out, "caf\xC3\xA9 \xE2\x82\xAC 12 ") << cut1 << "," << cut2;
    }
}

TEST(TextDecoder, IncompleteUtf8WaitsAndInvalidBytesBecomeReplacementCharacters) {
  TextDecoder d;
  EXPECT_EQ(d.push("\xE2\x82"), "");  // first two bytes of the euro sign
  EXPECT_EQ(d.push("\xAC!"), "\xE2\x82\xAC!");
  EXPECT_EQ(d.push("\xFF"
                   "a"),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(d.push("\xC3"), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");  // cut short at the end
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(complete_utf8_prefix("ab\xF0\x9F\x98"), 2u);
  EXPECT_EQ(complete_utf8_prefix("ab\xF0\x9F\x98\x80"), 6u);
}

TEST(TextDecoder, IncludeStopKeepsTheStopStringAndTheLongestStartingThere) {
  TextDecoder d({"ab", "abc"}, /*include_stop=*/true);
  std::string out = d.push("xxa");
  out += d.push("bcyy");
  EXPECT_EQ(out, "xxabc");
  EXPECT_TRUE(d.stopped());
}

TEST(TextDecoder, UnarmedPushesLookForNoStopAndAreNotMatchedLater) {
  TextDecoder d({"."});
  EXPECT_EQ(d.push("a.b", /*stops_armed=*/false), "a.b");
  EXPECT_FALSE(d.stopped());
  EXPECT_EQ(d.push("c"), "c");  // the earlier "." was released: not a stop now
  EXPECT_EQ(d.push("d.e"), "d");
  EXPECT_TRUE(d.stopped());
}

TEST(SyntheticCodec, CountsBytesAndNamesTheWords) {
  const TextCodec& c = synthetic_codec();
  EXPECT_FALSE(c.real());
  GenRequest g;
  c.encode("abcdefghi", &g);
  EXPECT_EQ(g.prompt_tokens, 3);
  EXPECT_TRUE(g.prompt_ids.empty());
  GenRequest h;
  ASSERT_FALSE(c.encode_chat({{"user", "abcd"}, {"assistant", ""}}, {}, &h));
  EXPECT_EQ(h.prompt_tokens, tokens_for_bytes(4 + 16 + 4 + 9 + 16));
  EXPECT_EQ(c.piece(5, -1), token_text(5));
  EXPECT_TRUE(c.stop_ids().empty());
}

}  // namespace
}  // namespace prima::server
