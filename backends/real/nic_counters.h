// Retransmission counters of the links the ranks use, read from the host at scrape time:
//   - RDMA ports (InfiniBand, RoCE): the hw_counters that count a sender's retransmissions
//     (local_ack_timeout_err: the ACK timer expired; packet_seq_err: a NAK for a sequence
//     error was received; implied_nak_seq_err: a NAK was implied by a later ACK), summed per
//     port, under ROOT/sys/class/infiniband/DEVICE/ports/PORT/hw_counters/;
//   - TCP (UCX over TCP, as on hosts without RDMA): the host's RetransSegs from
//     ROOT/proc/net/snmp.
// ROOT is "" on a real host; tests point it at a fake tree. Counters a kernel does not have
// are skipped. Plain functions; thread-safe (they only read files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace prima::real {

struct RetransmitCounter {
  std::string transport;  // "rdma" or "tcp"
  std::string device;     // e.g. "mlx5_0"; "host" for TCP
  std::string port;       // e.g. "1"; "" for TCP
  std::uint64_t count = 0;
};

// Sorted by transport, device, port.
std::vector<RetransmitCounter> read_retransmit_counters(const std::string& root = "");

}  // namespace prima::real
