// Communicator tests. In process: the size-1 world (this test is not launched by mpirun).
// Across processes: prima_comm_check (built beside this binary) under
// `mpirun --allow-run-as-root --oversubscribe -np N` for N = 2, 3, 4 and both transports,
// every rank's result line asserted; and a peer that leaves early must make rank 0's recv fail
// within the timeout, naming the peer.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "backends/real/comm/communicator.h"
#include "tests/support/run_prima.h"

namespace prima::real {
namespace {

std::string check_binary() {
  if (const char* env = std::getenv("PRIMA_COMM_CHECK")) return env;
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "prima_comm_check")
      .string();
}

struct ProcessRun {
  int exit_code = -1;
  std::string out;
  double seconds = 0;
};

ProcessRun run(const std::string& args) {
  const std::string dir = testing::temp_dir("comm");
  const std::string out = dir + "/out";
  const std::string cmd = args + " >" + out + " 2>&1 </dev/null";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  ProcessRun r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = testing::read_file(out);
  std::filesystem::remove_all(dir);
  return r;
}

std::string mpirun(int n, const std::string& args) {
  return "timeout 60 mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(n) + " " +
         check_binary() + " " + args;
}

TEST(CommunicatorTest, SizeOneWorldWithoutMpirun) {
  ASSERT_FALSE(launched_by_mpi());
  auto world = make_world_communicator();
  ASSERT_TRUE(world.ok()) << world.status().to_string();
  Communicator& c = **world;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  float v[3] = {1.5f, -2.f, 7.f};
  ASSERT_TRUE(c.allreduce_sum(v, 3).ok());
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[2], 7.f);
  ASSERT_TRUE(c.broadcast(v, sizeof v, 0).ok());
  EXPECT_FALSE(c.broadcast(v, sizeof v, 1).ok());
  ASSERT_TRUE(c.barrier().ok());
  Status self = c.send(0, 1, v, sizeof v);
  EXPECT_EQ(self.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(self.message().find("itself"), std::string::npos) << self.message();
  EXPECT_EQ(c.recv(1, 1, v, sizeof v).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(c.recv_msg(0, 1).ok());
  auto g = c.group({0});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ((*g)->size(), 1);
  EXPECT_FALSE(c.group({1}).ok());
  EXPECT_FALSE(c.group({}).ok());
}

TEST(CommunicatorTest, RejectsBadOptions) {
  CommOptions bad_transport;
  bad_transport.transport = "tcp";
  auto a = make_world_communicator(bad_transport);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("tcp"), std::string::npos);
  CommOptions bad_timeout;
  bad_timeout.timeout_s = 0;
  EXPECT_FALSE(make_world_communicator(bad_timeout).ok());
}

TEST(CommunicatorTest, CheckProgramAlone) {
  ProcessRun r = run(check_binary());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("comm_check rank=0 size=1 transport=ucx result=OK"), std::string::npos)
      << r.out;
}

class MultiRankTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(MultiRankTest, EveryRankPasses) {
  const auto& [transport, n] = GetParam();
  ProcessRun r = run(mpirun(n, "--transport=" + transport + " --timeout=20"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (int rank = 0; rank < n; ++rank) {
    const std::string line = "comm_check rank=" + std::to_string(rank) +
                             " size=" + std::to_string(n) + " transport=" + transport +
                             " result=OK";
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing '" << line << "' in\n" << r.out;
  }
  EXPECT_EQ(r.out.find("result=FAIL"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Transports, MultiRankTest,
                         ::testing::Combine(::testing::Values("ucx", "mpi"),
                                            ::testing::Values(2, 3, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_np" +
                                  std::to_string(std::get<1>(info.param));
                         });

class PeerExitTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PeerExitTest, RecvFromDepartedPeerFailsWithinTimeout) {
  ProcessRun r = run(mpirun(2, "--mode=peer-exits --timeout=1 --transport=" + GetParam()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("comm_check rank=0 size=2 transport=" + GetParam() + " result=OK"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("recv from rank 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("timed out"), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 20.0) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Transports, PeerExitTest, ::testing::Values("ucx", "mpi"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace prima::real
