// HttpServer's lifecycle: serve() ends on stop() whenever stop() comes. A stop() before serve()
// has begun (`prima serve` given SIGINT right after it bound its port, while its HTTP thread is
// still starting) makes serve() return at once instead of serving on; a stop() racing serve()'s
// start, or while it serves, ends it; stop() twice is harmless.
#include "server/http_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "tests/support/bridge_fixture.h"

namespace prima::server {
namespace {

using namespace std::chrono_literals;

struct Fixture : prima::testing::BridgeFixture {
  std::unique_ptr<HttpServer> http;
  Fixture() {
    ServerOptions o;
    o.port = 0;
    o.threads = 2;
    ModelInfo m;
    m.name = "test";
    m.max_model_len = 256;
    http = std::make_unique<HttpServer>(o, bridge.get(), m, "sim");
    EXPECT_TRUE(http->bind().ok());
  }
};

// serve() on a thread of its own; true when it returned within `within`. One that did not is
// stopped again (it is running by then) so that the test ends either way.
bool serve_returns(HttpServer* http, const std::function<void()>& before_wait,
                   std::chrono::seconds within = 10s) {
  auto served = std::async(std::launch::async, [http] { http->serve(); });
  before_wait();
  if (served.wait_for(within) == std::future_status::ready) return true;
  while (served.wait_for(10ms) != std::future_status::ready) http->stop();
  return false;
}

TEST(HttpServerStop, BeforeServeMakesServeReturnAtOnce) {
  Fixture f;
  f.http->stop();
  EXPECT_TRUE(serve_returns(f.http.get(), [] {}));
  f.http->stop();  // again: nothing to stop, returns
}

TEST(HttpServerStop, WhileServingEndsServe) {
  Fixture f;
  EXPECT_TRUE(serve_returns(f.http.get(), [&] {
    httplib::Client c("127.0.0.1", f.http->port());
    int status = 0;
    for (int i = 0; i < 500 && status == 0; ++i)
      if (auto r = c.Get("/health"))
        status = r->status;
      else
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(status, 200);
    f.http->stop();
    f.http->stop();
  }));
}

// stop() from another thread at the moment serve() starts, many times: each serve() ends.
TEST(HttpServerStop, RacingServeStartEndsServe) {
  for (int i = 0; i < 50; ++i) {
    Fixture f;
    HttpServer* http = f.http.get();
    EXPECT_TRUE(serve_returns(http,
                              [http, i] {
                                if (i % 2) std::this_thread::yield();
                                std::thread([http] { http->stop(); }).join();
                              }))
        << "round " << i;
  }
}

}  // namespace
}  // namespace prima::server
