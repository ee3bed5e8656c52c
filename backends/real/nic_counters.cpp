// Retransmission counters of the host's links (see nic_counters.h).
#include "backends/real/nic_counters.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

namespace prima::real {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRdmaRetransmitCounters[] = {"local_ack_timeout_err", "packet_seq_err",
                                                   "implied_nak_seq_err"};

bool read_number(const fs::path& p, std::uint64_t* out) {
  std::ifstream f(p);
  return static_cast<bool>(f >> *out);
}

// RetransSegs of the "Tcp:" header and value lines of /proc/net/snmp.
bool tcp_retransmits(const fs::path& snmp, std::uint64_t* out) {
  std::ifstream f(snmp);
  std::string header, values;
  while (std::getline(f, header)) {
    if (header.rfind("Tcp:", 0) != 0) continue;
    if (!std::getline(f, values) || values.rfind("Tcp:", 0) != 0) return false;
    std::istringstream h(header), v(values);
    std::string name, value;
    while (h >> name && v >> value)
      if (name == "RetransSegs") {
        try {
          *out = std::stoull(value);
          return true;
        } catch (...) {
          return false;
        }
      }
    return false;
  }
  return false;
}

}  // namespace

std::vector<RetransmitCounter> read_retransmit_counters(const std::string& root) {
  std::vector<RetransmitCounter> out;
  std::error_code ec;
  const fs::path ib = fs::path(root + "/sys/class/infiniband");
  for (const auto& dev : fs::directory_iterator(ib, ec)) {
    std::error_code pec;
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", pec)) {
      RetransmitCounter c{"rdma", dev.path().filename().string(), port.path().filename().string(),
                          0};
      bool any = false;
      for (const char* name : kRdmaRetransmitCounters) {
        std::uint64_t v = 0;
        if (read_number(port.path() / "hw_counters" / name, &v)) {
          c.count += v;
          any = true;
        }
      }
      if (any) out.push_back(std::move(c));
    }
  }
  std::uint64_t tcp = 0;
  if (tcp_retransmits(fs::path(root + "/proc/net/snmp"), &tcp))
    out.push_back({"tcp", "host", "", tcp});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.transport, a.device, a.port) < std::tie(b.transport, b.device, b.port);
  });
  return out;
}

}  // namespace prima::real
