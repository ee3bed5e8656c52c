// SseParser: events split at every byte position, CRLF/CR line ends, comments, multi-line
// data, fields, [DONE], and a last event without its blank line.
#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace prima::loadgen {
namespace {

std::vector<SseEvent> parse_in_pieces(const std::string& s, const std::vector<std::size_t>& cuts,
                                      SseParser** out_parser = nullptr) {
  std::vector<SseEvent> evs;
  SseParser p([&](const SseEvent& e) { evs.push_back(e); });
  std::size_t prev = 0;
  for (std::size_t c : cuts) {
    p.feed(std::string_view(s).substr(prev, c - prev));
    prev = c;
  }
  p.feed(std::string_view(s).substr(prev));
  p.finish();
  return evs;
}

std::vector<std::string> datas(const std::vector<SseEvent>& evs) {
  std::vector<std::string> d;
  for (const auto& e : evs) d.push_back(e.data);
  return d;
}

const std::string kStream =
    ": keep-alive\n\n"
    "data: {\"a\":1}\n\n"
    "data:no-space\n\n"
    "data: line 1\ndata: line 2\n\n"
    "event: update\nid: 7\ndata: x\n\n"
    "retry: 100\nunknown: y\n\n"  // no data: not an event
    "data: [DONE]\n\n";
const std::vector<std::string> kWant = {"{\"a\":1}", "no-space", "line 1\nline 2", "x", "[DONE]"};

TEST(SseParser, WholeStream) {
  std::vector<SseEvent> evs;
  SseParser p([&](const SseEvent& e) { evs.push_back(e); });
  p.feed(kStream);
  EXPECT_EQ(datas(evs), kWant);
  EXPECT_EQ(p.comments(), 1u);
  EXPECT_EQ(evs[3].event, "update");
  EXPECT_EQ(evs[3].id, "7");
  EXPECT_EQ(evs[0].event, "");
}

TEST(SseParser, SplitAtEveryPosition) {
  for (std::size_t i = 0; i <= kStream.size(); ++i)
    ASSERT_EQ(datas(parse_in_pieces(kStream, {i})), kWant) << "cut at " << i;
  for (std::size_t i = 0; i <= kStream.size(); ++i)
    for (std::size_t j = i; j <= kStream.size(); j += 7)
      ASSERT_EQ(datas(parse_in_pieces(kStream, {i, j})), kWant) << "cuts " << i << "," << j;
}

TEST(SseParser, ByteByByte) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(datas(parse_in_pieces(kStream, cuts)), kWant);
}

TEST(SseParser, CrLfAndCrLineEndsSplitAnywhere) {
  std::string crlf, cr;
  for (char c : kStream) {
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    cr += c == '\n' ? '\r' : c;
  }
  for (const std::string* s : {&crlf, &cr})
    for (std::size_t i = 0; i <= s->size(); ++i)
      ASSERT_EQ(datas(parse_in_pieces(*s, {i})), kWant) << "cut at " << i;
}

TEST(SseParser, LastEventWithoutBlankLineNeedsFinish) {
  std::vector<SseEvent> evs;
  SseParser p([&](const SseEvent& e) { evs.push_back(e); });
  p.feed("data: a\n\ndata: b");
  EXPECT_EQ(evs.size(), 1u);
  p.finish();
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[1].data, "b");
}

TEST(SseParser, EmptyDataLineIsAnEmptyEvent) {
  std::vector<SseEvent> evs;
  SseParser p([&](const SseEvent& e) { evs.push_back(e); });
  p.feed("data\n\ndata:\n\n");
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[0].data, "");
  EXPECT_EQ(evs[1].data, "");
  EXPECT_EQ(p.events(), 2u);
}

TEST(SseParser, MultiByteCharactersSplitInside) {
  const std::string s = "data: caf\xc3\xa9 \xe2\x82\xac\n\n";
  for (std::size_t i = 0; i <= s.size(); ++i) {
    auto evs = parse_in_pieces(s, {i});
    ASSERT_EQ(evs.size(), 1u);
    EXPECT_EQ(evs[0].data, "caf\xc3\xa9 \xe2\x82\xac");
  }
}

}  // namespace
}  // namespace prima::loadgen
