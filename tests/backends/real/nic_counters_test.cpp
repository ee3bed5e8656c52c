// Retransmission counters read from a fake /sys and /proc tree: RDMA ports sum their
// retransmission hw_counters, TCP gives RetransSegs; missing counters or files are skipped.
#include "backends/real/nic_counters.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace prima::real {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(NicCounters, RdmaPortsSumTheirRetransmitCountersAndTcpGivesRetransSegs) {
  const fs::path root = fs::temp_directory_path() / ("prima_nic_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path p1 = root / "sys/class/infiniband/mlx5_0/ports/1/hw_counters";
  write(p1 / "local_ack_timeout_err", "3\n");
  write(p1 / "packet_seq_err", "4\n");
  write(p1 / "implied_nak_seq_err", "5\n");
  write(p1 / "out_of_buffer", "1000\n");  // not a retransmission
  const fs::path p2 = root / "sys/class/infiniband/mlx5_1/ports/1/hw_counters";
  write(p2 / "packet_seq_err", "7\n");  // a kernel with only some of them
  fs::create_directories(root / "sys/class/infiniband/mlx5_2/ports/1");  // no hw_counters
  write(root / "proc/net/snmp",
        "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
        "Tcp: RtoAlgorithm RtoMin InSegs OutSegs RetransSegs InErrs\n"
        "Tcp: 1 200 10 20 42 0\n"
        "Udp: InDatagrams\nUdp: 5\n");

  const auto c = read_retransmit_counters(root.string());
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].transport, "rdma");
  EXPECT_EQ(c[0].device, "mlx5_0");
  EXPECT_EQ(c[0].port, "1");
  EXPECT_EQ(c[0].count, 12u);
  EXPECT_EQ(c[1].device, "mlx5_1");
  EXPECT_EQ(c[1].count, 7u);
  EXPECT_EQ(c[2].transport, "tcp");
  EXPECT_EQ(c[2].device, "host");
  EXPECT_EQ(c[2].count, 42u);
  fs::remove_all(root);

  EXPECT_TRUE(read_retransmit_counters((root / "nothing").string()).empty());
}

TEST(NicCounters, ThisHostHasTcpCounters) {
  const auto c = read_retransmit_counters();
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.back().transport, "tcp");
}

}  // namespace
}  // namespace prima::real
