// RequestClient against an in-process cpp-httplib server: SSE written in tiny pieces (tokens
// timed as they arrive), usage and timing headers, HTTP errors, a stream cut short, a server
// that is not there. Also base-URL parsing.
#include "loadgen/client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace prima::loadgen {
namespace {

class FakeServer {
 public:
  FakeServer() {
    svr_.Post("/v1/completions", [](const httplib::Request& req, httplib::Response& res) {
      auto body = std::make_shared<std::string>(
          "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":null}]}\r\n\r\n"
          ": keep-alive\n\n"
          "data: {\"choices\":[{\"index\":0,\"text\":\" b\",\"finish_reason\":null}]}\n\n"
          "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],"
          "\"prima\":{\"ttft_s\":0.001,\"e2e_s\":0.002,\"queue_s\":0}}\n\n"
          "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n");
      if (req.body.find("\"max_tokens\":3") == std::string::npos) *body += "data: [DONE]\n\n";
      auto pos = std::make_shared<std::size_t>(0);
      res.set_chunked_content_provider(
          "text/event-stream", [body, pos](std::size_t, httplib::DataSink& sink) {
            if (*pos >= body->size()) {
              sink.done();
              return true;
            }
            std::size_t n = std::min<std::size_t>(5, body->size() - *pos);
            sink.write(body->data() + *pos, n);
            *pos += n;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            return true;
          });
    });
    svr_.Post("/generate", [](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Authorization") != "Bearer k") {
        res.status = 401;
        res.set_content(R"({"error":"bad key","error_type":"auth"})", "application/json");
        return;
      }
      res.set_header("x-prima-sim-ttft-s", "0.25");
      res.set_header("x-prima-sim-queue-s", "0.05");
      res.set_header("x-prompt-tokens", "6");
      res.set_content(R"({"generated_text":" a b c","details":{"generated_tokens":3}})",
                      "application/json");
    });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    svr_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server svr_;
  int port_ = 0;
  std::thread thread_;
};

ClientOptions options(const std::string& url, Endpoint e, bool stream) {
  ClientOptions o;
  o.url = *parse_base_url(url);
  o.endpoint = e;
  o.body.model = "m";
  o.body.stream = stream;
  o.timeout_s = 10;
  o.t0 = std::chrono::steady_clock::now();
  return o;
}

PlannedRequest planned(int out) {
  PlannedRequest p;
  p.prompt_tokens = 4;
  p.output_tokens = out;
  return p;
}

TEST(Client, StreamedInSmallPieces) {
  FakeServer s;
  ClientOptions o = options(s.url(), Endpoint::kCompletions, true);
  RequestClient c(o);
  for (int i = 0; i < 2; ++i) {  // twice on one keep-alive connection
    RequestResult r = c.send(planned(2), "hi");
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.http_status, 200);
    EXPECT_EQ(r.output_tokens, 2);
    EXPECT_TRUE(r.usage_reported);
    EXPECT_EQ(r.prompt_tokens, 4);
    ASSERT_TRUE(r.has_ttft());
    EXPECT_GT(r.ttft_s(), 0);
    EXPECT_LE(r.first_token_s, r.end_s);
    ASSERT_EQ(r.itl_s.size(), 1u);
    EXPECT_GT(r.itl_s[0], 0);
    EXPECT_DOUBLE_EQ(r.server.ttft_s, 0.001);
  }
}

TEST(Client, StreamWithoutDoneIsAFailure) {
  FakeServer s;
  RequestClient c(options(s.url(), Endpoint::kCompletions, true));
  RequestResult r = c.send(planned(3), "hi");  // the fake leaves out [DONE] for max_tokens 3
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("[DONE]"), std::string::npos) << r.error;
}

TEST(Client, HttpErrorsAndHeaders) {
  FakeServer s;
  ClientOptions o = options(s.url(), Endpoint::kTgi, false);
  {
    RequestClient c(o);
    RequestResult r = c.send(planned(3), "hi");
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.http_status, 401);
    EXPECT_EQ(r.error, "HTTP 401: bad key");
  }
  o.api_key = "k";
  RequestClient c(o);
  RequestResult r = c.send(planned(3), "hi");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.prompt_tokens, 6);
  EXPECT_FALSE(r.has_ttft());
  EXPECT_TRUE(r.server.has_ttft);
  EXPECT_DOUBLE_EQ(r.server.ttft_s, 0.25);
  EXPECT_DOUBLE_EQ(r.server.queue_s, 0.05);
  EXPECT_FALSE(r.server.has_e2e);
}

TEST(Client, ServerDownIsARecordedFailure) {
  // A port that was free a moment ago: bound, never listened on, closed.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  ::close(fd);
  ClientOptions o = options("http://127.0.0.1:" + std::to_string(port), Endpoint::kChat, true);
  o.connect_timeout_s = 2;
  RequestClient c(o);
  RequestResult r = c.send(planned(3), "hi");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_NE(r.error.find("no answer from"), std::string::npos) << r.error;
  EXPECT_FALSE(fetch_model_name(o).ok());
}

TEST(Client, BaseUrls) {
  auto a = parse_base_url("http://127.0.0.1:8000/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->scheme_host_port, "http://127.0.0.1:8000");
  EXPECT_EQ(a->prefix, "");
  auto b = parse_base_url("https://host/api/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->scheme_host_port, "https://host");
  EXPECT_EQ(b->prefix, "/api");
  EXPECT_FALSE(parse_base_url("127.0.0.1:8000").ok());
  EXPECT_FALSE(parse_base_url("ftp://x").ok());
  EXPECT_FALSE(parse_base_url("http://").ok());
}

}  // namespace
}  // namespace prima::loadgen
