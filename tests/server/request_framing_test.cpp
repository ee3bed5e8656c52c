// Request framing: where a request ends (Content-Length, chunked, none), fed whole or a byte
// at a time; the limits (413 for chunked bodies too, 431) hold as soon as they are passed;
// framing a server must refuse is an error with its status.
#include "server/request_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace prima::server {
namespace {

using State = Framing::State;

// Frames `req` as if it arrived one byte at a time; returns the final Framing.
Framing trickle(const std::string& req, const FramingLimits& lim = {}) {
  Framing f;
  for (std::size_t n = 1; n <= req.size(); ++n)
    if (frame_request(std::string_view(req).substr(0, n), lim, &f) >= State::kComplete) break;
  return f;
}

TEST(RequestFraming, FindsTheEndOfEachKindOfRequest) {
  const std::string get = "GET /health?x=1 HTTP/1.1\r\nHost: a\r\n\r\n";
  const std::string post = "POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  const std::string chunked =
      "POST /generate HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"
      "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nTrailer: x\r\n\r\n";
  for (const std::string& req : {get, post, chunked}) {
    for (const std::string& next : {std::string(), std::string("GET / HTTP/1.1\r\n")}) {
      Framing f;
      EXPECT_EQ(frame_request(req + next, {}, &f), State::kComplete) << req;
      EXPECT_EQ(f.request_bytes, req.size()) << req;  // pipelined bytes are not part of it
      const Framing t = trickle(req);
      EXPECT_EQ(t.state, State::kComplete) << req;
      EXPECT_EQ(t.request_bytes, req.size()) << req;
    }
  }
  Framing f;
  frame_request(get, {}, &f);
  EXPECT_EQ(f.path, "/health");
  EXPECT_EQ(trickle(chunked).chunk_total, 5u);
  // Incomplete: waits for more.
  Framing g;
  EXPECT_EQ(frame_request(post.substr(0, post.size() - 1), {}, &g), State::kNeedBody);
  Framing h;
  EXPECT_EQ(frame_request("GET / HTTP/1.1\r\nHost:", {}, &h), State::kNeedHeaders);
}

TEST(RequestFraming, LimitsHoldAsSoonAsTheyArePassed) {
  FramingLimits lim;
  lim.max_body_bytes = 100;
  lim.max_header_bytes = 64;
  Framing a;
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", lim, &a),
            State::kError);
  EXPECT_EQ(a.status, 413);
  // Chunked: refused at the chunk that passes the limit, before the body arrives.
  Framing b;
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n50\r\n" +
                              std::string(80, 'a') + "\r\n40\r\n",
                          lim, &b),
            State::kError);
  EXPECT_EQ(b.status, 413);
  // Headers: refused once 64 bytes pass without their end.
  Framing c;
  EXPECT_EQ(frame_request("GET / HTTP/1.1\r\nX: " + std::string(60, 'a'), lim, &c), State::kError);
  EXPECT_EQ(c.status, 431);
  // Many one-byte chunks: the framing overhead is bounded too.
  std::string tiny = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  FramingLimits big;
  big.max_body_bytes = 10000;
  for (int i = 0; i < 9000; ++i) tiny += "1;xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\na\r\n";
  Framing d;
  EXPECT_EQ(frame_request(tiny, big, &d), State::kError);
  EXPECT_EQ(d.status, 413);
}

TEST(RequestFraming, RefusesAmbiguousOrUnsupportedFraming) {
  struct Case {
    std::string req;
    int status;
  };
  const Case cases[] = {
      {"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", 400},
  };
  for (const auto& c : cases) {
    Framing f;
    EXPECT_EQ(frame_request(c.req, {}, &f), State::kError) << c.req;
    EXPECT_EQ(f.status, c.status) << c.req;
    EXPECT_FALSE(f.message.empty());
  }
  // Equal duplicates are fine; Expect: 100-continue is noticed.
  Framing g;
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nContent-Length: 2\r\ncontent-length: 2\r\n"
                          "Expect: 100-continue\r\n\r\n",
                          {}, &g),
            State::kNeedBody);
  EXPECT_TRUE(g.expect_continue);
}

// A request without Content-Length or Transfer-Encoding has no body: a POST gets an explicit
// "Content-Length: 0" so that httplib does not wait for a body until the connection closes.
TEST(RequestFraming, ARequestWithoutALengthHasAnEmptyBody) {
  for (const std::string eol : {"\r\n", "\n"}) {
    std::string req = "POST /v1/completions HTTP/1.1" + eol + "Host: x" + eol + eol + "GET /";
    Framing f;
    ASSERT_EQ(frame_request(req, {}, &f), State::kComplete);
    declare_empty_body(&req, &f);
    EXPECT_EQ(req.substr(0, f.request_bytes), "POST /v1/completions HTTP/1.1" + eol + "Host: x" +
                                                  eol + "Content-Length: 0" + eol + eol);
    EXPECT_EQ(req.substr(f.request_bytes), "GET /");  // the next request is untouched
  }
  std::string get = "GET /health HTTP/1.1\r\n\r\n";
  Framing g;
  ASSERT_EQ(frame_request(get, {}, &g), State::kComplete);
  declare_empty_body(&get, &g);
  EXPECT_EQ(get, "GET /health HTTP/1.1\r\n\r\n");
  std::string sized = "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
  Framing h;
  ASSERT_EQ(frame_request(sized, {}, &h), State::kComplete);
  declare_empty_body(&sized, &h);
  EXPECT_EQ(sized, "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
}

}  // namespace
}  // namespace prima::server
