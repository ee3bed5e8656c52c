// Guard: the API key protects every API route but not health and metrics; admission holds at
// most max_concurrent places (429 beyond), gives them back, and refuses all while draining.
#include "server/guard.h"

#include <gtest/gtest.h>

namespace prima::server {
namespace {

httplib::Request req(const std::string& path, const std::string& auth = "") {
  httplib::Request r;
  r.path = path;
  if (!auth.empty()) r.headers.emplace("Authorization", auth);
  return r;
}

TEST(Guard, ApiKey) {
  Guard open_guard(GuardOptions{"", 4});
  EXPECT_FALSE(open_guard.check_auth(req("/v1/completions")));
  Guard g(GuardOptions{"k3y", 4});
  EXPECT_FALSE(g.check_auth(req("/v1/completions", "Bearer k3y")));
  for (const char* bad : {"", "Bearer k3", "Bearer k3yy", "k3y", "Basic k3y"}) {
    auto e = g.check_auth(req("/v1/chat/completions", bad));
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->status, 401);
    EXPECT_EQ(e->type, "authentication_error");
  }
  EXPECT_TRUE(g.check_auth(req("/generate")));
  EXPECT_TRUE(g.check_auth(req("/v2/models/m/infer")));
  EXPECT_FALSE(g.check_auth(req("/health")));
  EXPECT_FALSE(g.check_auth(req("/v2/health/ready")));
  EXPECT_FALSE(g.check_auth(req("/metrics")));
}

TEST(Guard, AdmissionIsBoundedAndDrains) {
  Guard g(GuardOptions{"", 2});
  ApiError why;
  auto a = g.admit(&why);
  auto b = g.admit(&why);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(g.admit(&why));
  EXPECT_EQ(why.status, 429);
  EXPECT_EQ(g.in_use(), 2);
  a.reset();
  EXPECT_EQ(g.in_use(), 1);
  auto c = g.admit(&why);
  EXPECT_TRUE(c);
  c.reset();
  g.start_draining();
  ApiError d;
  EXPECT_FALSE(g.admit(&d));
  EXPECT_EQ(d.status, 503);
  b.reset();
  EXPECT_EQ(g.in_use(), 0);
}

}  // namespace
}  // namespace prima::server
