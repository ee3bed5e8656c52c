#include "backends/sim/probe_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "backends/sim/simulation.h"
#include "engine/config/json_parse.h"
#include "engine/scenario/scenario.h"

namespace prima::sim {

capacity::ProbeMetrics run_probe(const ProbeJob& job) {
  capacity::ProbeMetrics m;
  auto sc = scenario::parse_scenario(job.scenario, job.file, job.base_dir);
  if (!sc.ok()) {
    m.error = sc.status().message();
    return m;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto res = run_simulation(*sc);
  if (!res.ok()) {
    m.error = res.status().message();
    return m;
  }
  try {
    m = capacity::ProbeMetrics::from_report(res->report);
  } catch (const std::exception& e) {
    m.ok = false;
    m.error = std::string("report without the expected keys: ") + e.what();
  }
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

ProbePool::ProbePool(int jobs) : jobs_(jobs < 1 ? 1 : jobs) {}

ProbePool::~ProbePool() {
  kill_all();
}

void ProbePool::kill_all() {
  for (auto& c : children_) {
    ::kill(c.pid, SIGKILL);
    ::waitpid(c.pid, nullptr, 0);
    ::close(c.fd);
  }
  children_.clear();
}

Status ProbePool::start(const ProbeJob& job) {
  int fds[2];
  if (::pipe(fds) != 0) return unavailable(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return unavailable(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    for (const auto& c : children_) ::close(c.fd);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
    }
    std::string line;
    try {
      line = run_probe(job).to_json().dump() + "\n";
    } catch (const std::exception& e) {
      capacity::ProbeMetrics m;
      m.error = std::string("exception: ") + e.what();
      line = m.to_json().dump() + "\n";
    }
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);  // no destructors: the SimGrid engine and its threads simply end
  }
  ::close(fds[1]);
  Child c;
  c.pid = pid;
  c.fd = fds[0];
  c.tag = job.tag;
  children_.push_back(std::move(c));
  return ok_status();
}

std::vector<ProbeDone> ProbePool::wait() {
  std::vector<ProbeDone> done;
  while (done.empty() && !children_.empty()) {
    std::vector<pollfd> pfds;
    for (const auto& c : children_) pfds.push_back({c.fd, POLLIN, 0});
    const int n = ::poll(pfds.data(), pfds.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < children_.size(); ++i) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t r = ::read(children_[i].fd, buf, sizeof buf);
      if (r > 0)
        children_[i].out.append(buf, static_cast<std::size_t>(r));
      else if (r == 0 || errno != EINTR)
        children_[i].eof = true;
    }
    for (auto it = children_.begin(); it != children_.end();) {
      if (!it->eof) {
        ++it;
        continue;
      }
      int status = 0;
      ::waitpid(it->pid, &status, 0);
      ::close(it->fd);
      ProbeDone d;
      d.tag = it->tag;
      try {
        if (it->out.empty()) throw std::runtime_error("no result");
        auto parsed = config::parse_json(it->out, nullptr);
        if (!parsed) throw std::runtime_error("malformed result");
        d.metrics = capacity::ProbeMetrics::from_json(*parsed);
      } catch (const std::exception&) {
        d.metrics.ok = false;
        d.metrics.error =
            WIFSIGNALED(status)
                ? "the simulation process was killed by signal " + std::to_string(WTERMSIG(status))
                : "the simulation process exited with status " +
                      std::to_string(WEXITSTATUS(status)) + " without a result";
      }
      done.push_back(std::move(d));
      it = children_.erase(it);
    }
  }
  return done;
}

}  // namespace prima::sim
