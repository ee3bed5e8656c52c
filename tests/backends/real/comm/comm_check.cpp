// prima_comm_check: exercises the communicator on every rank of an mpirun job (or alone, as
// a size-1 world) and prints one result line per rank:
//   comm_check rank=R size=N transport=T result=OK checks=K
// or result=FAIL with the first failure; exits non-zero on failure. Modes:
//   --mode=full        (default) point-to-point, ordering, messages, allreduce, broadcast,
//                      barrier, groups, error cases
//   --mode=peer-exits  2 ranks: rank 1 leaves at once; rank 0's recv from it must fail
//                      within --timeout with an error naming rank 1
//   --mode=bench       latency table (see docs/communicator.md)
// Flags: --transport=ucx|mpi, --timeout=SECONDS. Single-threaded.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "backends/real/comm/communicator.h"

namespace prima::real {
namespace {

using Clock = std::chrono::steady_clock;

struct Checker {
  Communicator& c;
  int checks = 0;
  std::string failure;

  bool ok(bool cond, const std::string& what) {
    ++checks;
    if (!cond && failure.empty()) failure = what;
    return cond;
  }
  bool ok(const Status& st, const std::string& what) {
    return ok(st.ok(), what + ": " + st.to_string());
  }
};

std::uint8_t pattern(std::size_t i, int src, int dst, std::size_t n) {
  return static_cast<std::uint8_t>(i * 31 + src * 7 + dst * 13 + n);
}

std::uint64_t fnv1a(const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void check_point_to_point(Checker& k) {
  Communicator& c = k.c;
  const std::size_t sizes[] = {0, 1, 4096, 8u << 20};
  for (int a = 0; a < c.size(); ++a)
    for (int b = a + 1; b < c.size(); ++b) {
      if (c.rank() != a && c.rank() != b) continue;
      for (std::size_t n : sizes)
        for (int dir = 0; dir < 2; ++dir) {
          const int src = dir == 0 ? a : b, dst = dir == 0 ? b : a;
          std::vector<std::uint8_t> buf(n);
          const std::string what = "p2p " + std::to_string(n) + " bytes " + std::to_string(src) +
                                   "->" + std::to_string(dst);
          if (c.rank() == src) {
            for (std::size_t i = 0; i < n; ++i) buf[i] = pattern(i, src, dst, n);
            k.ok(c.send(dst, 3, buf.data(), n), what);
          } else {
            if (!k.ok(c.recv(src, 3, buf.data(), n), what)) return;
            bool same = true;
            for (std::size_t i = 0; i < n && same; ++i) same = buf[i] == pattern(i, src, dst, n);
            k.ok(same, what + ": wrong bytes");
          }
        }
    }
}

// Same-tag messages, small (eager) and large (rendezvous) interleaved, arrive in order.
void check_ordering(Checker& k) {
  Communicator& c = k.c;
  const int count = 12;
  for (int peer = 1; peer < c.size(); ++peer) {
    if (c.rank() != 0 && c.rank() != peer) continue;
    for (int m = 0; m < count; ++m) {
      std::vector<std::uint32_t> v(m % 2 ? 65536 : 2, static_cast<std::uint32_t>(m));
      const std::string what =
          "ordering message " + std::to_string(m) + " to " + std::to_string(peer);
      if (c.rank() == 0) {
        k.ok(c.send(peer, 4, v.data(), v.size() * 4), what);
      } else {
        std::vector<std::uint32_t> got(v.size(), 99);
        if (!k.ok(c.recv(0, 4, got.data(), got.size() * 4), what)) return;
        k.ok(got == v, what + ": out of order");
      }
    }
  }
}

// A token ring of variable-size messages (one empty).
void check_messages(Checker& k) {
  Communicator& c = k.c;
  const int p = c.size(), r = c.rank();
  auto message = [](int src) {
    std::vector<std::uint8_t> m(src == 1 ? 0 : 100 * src + 3 + (src == 2 ? 200000 : 0));
    for (std::size_t i = 0; i < m.size(); ++i) m[i] = pattern(i, src, 0, m.size());
    return m;
  };
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  if (r == 0) k.ok(c.send_msg(next, 5, message(r)), "send_msg 0->" + std::to_string(next));
  auto got = c.recv_msg(prev, 5);
  if (k.ok(got.status(), "recv_msg from " + std::to_string(prev)))
    k.ok(*got == message(prev), "recv_msg content from " + std::to_string(prev));
  if (r != 0) k.ok(c.send_msg(next, 5, message(r)), "send_msg to " + std::to_string(next));
}

void check_allreduce(Checker& k, Communicator& c, const std::string& label) {
  const int p = c.size(), r = c.rank();
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{576}, std::size_t{64 * 576},
                        std::size_t{300001}}) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((r + 1) * ((i % 1000) + 1));
    const std::string what = label + " allreduce exact n=" + std::to_string(n);
    if (!k.ok(c.allreduce_sum(v.data(), n), what)) return;
    bool exact = true;
    for (std::size_t i = 0; i < n && exact; ++i)
      exact = v[i] == static_cast<float>(p * (p + 1) / 2 * ((i % 1000) + 1));
    k.ok(exact, what + ": wrong sum");
  }
  // Random floats: every rank must end with the same bits, close to the exact sum.
  for (std::size_t n : {std::size_t{576}, std::size_t{64 * 576}, std::size_t{300001}}) {
    auto draw = [n](int rank) {
      std::mt19937 gen(1234u + static_cast<unsigned>(rank));
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      std::vector<float> d(n);
      for (float& x : d) x = u(gen);
      return d;
    };
    std::vector<float> v = draw(r);
    const std::string what = label + " allreduce random n=" + std::to_string(n);
    if (!k.ok(c.allreduce_sum(v.data(), n), what)) return;
    std::uint64_t mine = fnv1a(v.data(), n * 4), root = mine;
    if (!k.ok(c.broadcast(&root, sizeof root, 0), what + " hash broadcast")) return;
    k.ok(mine == root, what + ": result differs from group rank 0's (not bit-identical)");
    std::vector<double> ref(n, 0.0);
    for (int q = 0; q < p; ++q) {
      std::vector<float> d = draw(q);
      for (std::size_t i = 0; i < n; ++i) ref[i] += d[i];
    }
    bool close = true;
    for (std::size_t i = 0; i < n && close; ++i) close = std::fabs(v[i] - ref[i]) < 1e-5 * p;
    k.ok(close, what + ": not the sum");
  }
}

void check_broadcast(Checker& k) {
  Communicator& c = k.c;
  for (int root = 0; root < c.size(); ++root)
    for (std::size_t n : {std::size_t{1000}, std::size_t{1} << 20}) {
      std::vector<std::uint8_t> buf(n, 0);
      if (c.rank() == root)
        for (std::size_t i = 0; i < n; ++i) buf[i] = pattern(i, root, 0, n);
      const std::string what = "broadcast " + std::to_string(n) + " from " + std::to_string(root);
      if (!k.ok(c.broadcast(buf.data(), n, root), what)) return;
      bool same = true;
      for (std::size_t i = 0; i < n && same; ++i) same = buf[i] == pattern(i, root, 0, n);
      k.ok(same, what + ": wrong bytes");
    }
}

void check_barrier(Checker& k) {
  Communicator& c = k.c;
  if (c.size() == 1) return void(k.ok(c.barrier(), "barrier"));
  // Rank 0 arrives 300 ms late: nobody may leave before it arrives.
  k.ok(c.barrier(), "barrier (sync)");
  const auto start = Clock::now();
  if (c.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  k.ok(c.barrier(), "barrier");
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  k.ok(waited > 0.2,
       "barrier returned after " + std::to_string(waited) + " s, before rank 0 arrived");
}

void check_groups(Checker& k) {
  Communicator& c = k.c;
  const int p = c.size(), r = c.rank();
  // Reversed world: group rank = p-1-r.
  std::vector<int> reversed;
  for (int q = p - 1; q >= 0; --q) reversed.push_back(q);
  auto rev = c.group(reversed);
  if (!k.ok(rev.status(), "group(reversed)")) return;
  k.ok((*rev)->rank() == p - 1 - r && (*rev)->size() == p, "reversed group rank/size");
  int value = r == p - 1 ? 4242 : -1;
  k.ok((*rev)->broadcast(&value, sizeof value, 0), "reversed group broadcast");
  k.ok(value == 4242, "reversed group broadcast from world rank " + std::to_string(p - 1));
  check_allreduce(k, **rev, "reversed group");

  auto self = c.group({r});
  if (k.ok(self.status(), "group({self})")) {
    float x = 3.5f;
    k.ok((*self)->allreduce_sum(&x, 1), "self group allreduce");
    k.ok(x == 3.5f && (*self)->size() == 1, "self group allreduce leaves data");
  }
  if (p == 4) {  // {0,2} and {1,3} at the same time, each with its own tag space
    std::vector<int> members = r % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3};
    auto g = c.group(members);
    if (!k.ok(g.status(), "group({0,2}/{1,3})")) return;
    check_allreduce(k, **g, "pair group");
    std::uint64_t world_msg = 1000 + r, group_msg = 2000 + r;
    if (r < 2) {  // world tag 5 and group tag 5 from r to r+2; received in the other order
      k.ok(c.send(r + 2, 5, &world_msg, 8), "world send tag 5");
      k.ok((*g)->send(1, 5, &group_msg, 8), "group send tag 5");
    } else {
      std::uint64_t a = 0, b = 0;
      k.ok((*g)->recv(0, 5, &a, 8), "group recv tag 5");
      k.ok(c.recv(r - 2, 5, &b, 8), "world recv tag 5");
      k.ok(a == 2000u + r - 2 && b == 1000u + r - 2, "group and world messages mixed");
    }
  }
  k.ok(!c.group({r, r}).ok() && !c.group({p}).ok(), "bad group lists rejected");
}

void check_errors(Checker& k) {
  Communicator& c = k.c;
  const int p = c.size(), r = c.rank();
  char byte = 0;
  Status self = c.send(r, 1, &byte, 1);
  k.ok(self.code() == StatusCode::kInvalidArgument &&
           self.message().find("itself") != std::string::npos,
       "send to self must fail clearly: " + self.to_string());
  k.ok(c.recv(p, 1, &byte, 1).code() == StatusCode::kInvalidArgument, "recv from rank size");
  k.ok(c.send((r + 1) % p, -1, &byte, 1).code() == StatusCode::kInvalidArgument || p == 1,
       "negative tag");
  if (p < 2) return;
  // Wrong sizes: a short message and a long one; the communicator keeps working after.
  std::uint64_t eight = 7;
  char sixteen[16];
  std::uint32_t four = 0;
  if (r == 0) {
    k.ok(c.send(1, 6, &eight, 8), "send 8 bytes");
    k.ok(c.send(1, 6, &eight, 8), "send 8 bytes (2)");
  } else if (r == 1) {
    Status shorter = c.recv(0, 6, sixteen, 16);
    k.ok(!shorter.ok() && shorter.message().find("rank 0") != std::string::npos,
         "recv of 16 bytes got 8: " + shorter.to_string());
    Status longer = c.recv(0, 6, &four, 4);
    k.ok(!longer.ok(), "recv of 4 bytes got 8 must fail");
  }
  k.ok(c.barrier(), "barrier after size errors");
}

int run_full(Communicator& c, const std::string& transport) {
  Checker k{c, 0, {}};
  if (c.size() > 1) {
    check_point_to_point(k);
    check_ordering(k);
    check_messages(k);
  }
  check_allreduce(k, c, "world");
  check_broadcast(k);
  check_barrier(k);
  check_groups(k);
  check_errors(k);
  std::printf("comm_check rank=%d size=%d transport=%s result=%s checks=%d%s%s\n", c.rank(),
              c.size(), transport.c_str(), k.failure.empty() ? "OK" : "FAIL", k.checks,
              k.failure.empty() ? "" : " first_failure: ", k.failure.c_str());
  std::fflush(stdout);
  return k.failure.empty() ? 0 : 1;
}

int run_peer_exits(Communicator& c, const std::string& transport, double timeout_s) {
  if (c.size() != 2) {
    std::printf("comm_check rank=%d result=FAIL peer-exits needs 2 ranks\n", c.rank());
    return 2;
  }
  if (c.rank() == 1) {
    std::printf("comm_check rank=1 size=2 transport=%s result=OK leaving early\n",
                transport.c_str());
    return 0;
  }
  const auto start = Clock::now();
  char buf[8];
  Status st = c.recv(1, 9, buf, sizeof buf);
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  const bool good =
      !st.ok() && st.message().find("rank 1") != std::string::npos && waited < timeout_s + 2.0;
  std::printf("comm_check rank=0 size=2 transport=%s result=%s waited_s=%.2f error: %s\n",
              transport.c_str(), good ? "OK" : "FAIL", waited, st.to_string().c_str());
  std::fflush(stdout);
  return good ? 0 : 1;
}

struct Timing {
  double median_s = 0, min_s = 0;
};

// Per-call times of fn over iters calls (after warm-up); the median and minimum, each the
// worst over ranks. The median resists the preemptions of a loaded machine.
template <typename Fn>
Timing time_it(int iters, Fn fn) {
  for (int i = 0; i < 10; ++i) fn();
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<double> t(static_cast<std::size_t>(iters));
  for (double& x : t) {
    const auto start = Clock::now();
    fn();
    x = std::chrono::duration<double>(Clock::now() - start).count();
  }
  std::sort(t.begin(), t.end());
  double mine[2] = {t[t.size() / 2], t[0]}, worst[2] = {0, 0};
  MPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return {worst[0], worst[1]};
}

int run_bench(Communicator& c, const std::string& transport) {
  if (c.size() < 2) return std::printf("bench needs mpirun -np 2 or more\n"), 2;
  const int r = c.rank(), peer = r == 0 ? 1 : 0;
  auto report = [&](const char* what, Timing t, double scale = 1.0) {
    if (r == 0)
      std::printf("%-40s median %9.2f us   min %9.2f us\n", what, t.median_s * scale * 1e6,
                  t.min_s * scale * 1e6);
  };
  if (r == 0) std::printf("# %d ranks, communicator transport=%s\n", c.size(), transport.c_str());
  for (std::size_t n : {std::size_t{576}, std::size_t{64 * 576}}) {
    std::vector<float> v(n, 1.f), w(n);
    const std::string label = std::to_string(n) + " floats";
    report(("prima allreduce_sum " + label).c_str(),
           time_it(1000, [&] { (void)c.allreduce_sum(v.data(), n); }));
    report(("MPI_Allreduce " + label).c_str(), time_it(1000, [&] {
             MPI_Allreduce(v.data(), w.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                           MPI_COMM_WORLD);
           }));
  }
  if (r <= 1) {
    std::vector<char> buf(1 << 20);
    // Ping-pong between ranks 0 and 1: one-way time = round trip / 2.
    auto ping = [&] {
      if (r == 0) {
        (void)c.send(peer, 1, buf.data(), buf.size());
        (void)c.recv(peer, 1, buf.data(), buf.size());
      } else {
        (void)c.recv(peer, 1, buf.data(), buf.size());
        (void)c.send(peer, 1, buf.data(), buf.size());
      }
    };
    auto mpi_ping = [&] {
      const int n = static_cast<int>(buf.size());
      if (r == 0) {
        MPI_Send(buf.data(), n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf.data(), n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      }
    };
    if (c.size() == 2) {
      report("prima send/recv 1 MiB (one way)", time_it(200, ping), 0.5);
      report("MPI_Send/MPI_Recv 1 MiB (one way)", time_it(200, mpi_ping), 0.5);
    }
  }
  return 0;
}

int main_impl(int argc, char** argv) {
  std::string mode = "full", transport = "ucx";
  double timeout_s = 60;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--mode=", 0) == 0)
      mode = a.substr(7);
    else if (a.rfind("--transport=", 0) == 0)
      transport = a.substr(12);
    else if (a.rfind("--timeout=", 0) == 0)
      timeout_s = std::stod(a.substr(10));
    else
      return std::fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
  }
  CommOptions opts;
  opts.transport = transport;
  opts.timeout_s = timeout_s;
  auto world = make_world_communicator(opts);
  if (!world.ok()) {
    std::printf("comm_check result=FAIL make_world_communicator: %s\n",
                world.status().to_string().c_str());
    return 1;
  }
  const char* env_size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const int expected_size = !launched_by_mpi() ? 1
                            : env_size         ? std::atoi(env_size)
                                               : (*world)->size();
  if ((*world)->size() != expected_size) {
    std::printf("comm_check result=FAIL world size %d, expected %d\n", (*world)->size(),
                expected_size);
    return 1;
  }
  if (mode == "full") return run_full(**world, transport);
  if (mode == "peer-exits") return run_peer_exits(**world, transport, timeout_s);
  if (mode == "bench") return run_bench(**world, transport);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}

}  // namespace
}  // namespace prima::real

int main(int argc, char** argv) {
  return prima::real::main_impl(argc, argv);
}
