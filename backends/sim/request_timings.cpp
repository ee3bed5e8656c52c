// Per-request timings of a simulation, here or in a forked child (request_timings.h).
#include "backends/sim/request_timings.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "backends/sim/simulation.h"
#include "engine/config/json_parse.h"

namespace prima::sim {
namespace {

using Json = nlohmann::json;

// The pipe's message: {"ok": true, "simulated_s", "wall_s", "requests": [[id, arrival_s,
// prompt_tokens, output_tokens, ok, ttft_s, tpot_s, e2e_s, queue_s, [gaps...]], ...]} or
// {"ok": false, "code": StatusCode, "message": "..."}. Doubles round-trip exactly.
Json to_json(const Result<RequestTimings>& r) {
  if (!r.ok())
    return {{"ok", false},
            {"code", static_cast<int>(r.status().code())},
            {"message", r.status().message()}};
  Json reqs = Json::array();
  for (const auto& q : r->requests)
    reqs.push_back({q.id, q.arrival_s, q.prompt_tokens, q.output_tokens, q.ok, q.ttft_s, q.tpot_s,
                    q.e2e_s, q.queue_s, q.itl_s});
  return {{"ok", true},
          {"simulated_s", r->simulated_s},
          {"wall_s", r->wall_s},
          {"requests", std::move(reqs)}};
}

Result<RequestTimings> from_json(const Json& j) {
  if (!j.at("ok").get<bool>())
    return Status(static_cast<StatusCode>(j.at("code").get<int>()),
                  j.at("message").get<std::string>());
  RequestTimings t;
  t.simulated_s = j.at("simulated_s").get<double>();
  t.wall_s = j.at("wall_s").get<double>();
  for (const Json& a : j.at("requests")) {
    replay::SimulatedRequest q;
    q.id = a.at(0).get<std::uint64_t>();
    q.arrival_s = a.at(1).get<double>();
    q.prompt_tokens = a.at(2).get<int>();
    q.output_tokens = a.at(3).get<int>();
    q.ok = a.at(4).get<bool>();
    q.ttft_s = a.at(5).get<double>();
    q.tpot_s = a.at(6).get<double>();
    q.e2e_s = a.at(7).get<double>();
    q.queue_s = a.at(8).get<double>();
    q.itl_s = a.at(9).get<std::vector<double>>();
    t.requests.push_back(std::move(q));
  }
  return t;
}

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

Result<RequestTimings> simulate_request_timings(const scenario::Scenario& sc, bool token_gaps) {
  struct Tokens {
    double last = -1;
    std::vector<double> gaps;
  };
  std::unordered_map<RequestId, Tokens> tokens;
  SimulationOptions so;
  if (token_gaps)
    so.on_token = [&](const Sequence& s, Time t) {
      Tokens& k = tokens[s.req.id];
      if (k.last >= 0) k.gaps.push_back(t - k.last);
      k.last = t;
    };
  PRIMA_ASSIGN_OR_RETURN(SimulationOutput out, run_simulation(sc, so));
  RequestTimings t;
  t.simulated_s = out.report.value("simulated_seconds", 0.0);
  t.wall_s = out.wall_seconds;
  for (const metrics::RequestRecord& r : out.recorder->records()) {
    replay::SimulatedRequest q;
    q.id = r.id;
    q.arrival_s = r.arrival_s;
    q.prompt_tokens = r.prompt_tokens;
    q.output_tokens = r.output_tokens;
    q.ok = r.outcome == Outcome::kCompleted;
    if (q.ok) {
      q.ttft_s = r.ttft_s();
      q.tpot_s = r.output_tokens > 1 ? r.tpot_s() : -1;
      q.e2e_s = r.e2e_s();
      q.queue_s = r.first_scheduled_s >= 0 ? r.queue_s() : -1;
      if (auto it = tokens.find(r.id); it != tokens.end()) q.itl_s = std::move(it->second.gaps);
    }
    t.requests.push_back(std::move(q));
  }
  std::sort(t.requests.begin(), t.requests.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  return t;
}

Result<RequestTimings> simulate_request_timings_in_child(const scenario::Scenario& sc,
                                                         bool token_gaps) {
  int fds[2];
  if (::pipe(fds) != 0) return internal_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return internal_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
    }
    std::string msg;
    try {
      msg = to_json(simulate_request_timings(sc, token_gaps)).dump();
    } catch (const std::exception& e) {
      msg = to_json(Result<RequestTimings>(internal_error(std::string("exception: ") + e.what())))
                .dump();
    }
    write_all(fds[1], msg);
    ::_exit(0);  // no destructors: the SimGrid engine and its threads simply end
  }
  ::close(fds[1]);
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  auto parsed = config::parse_json(out, nullptr);
  if (out.empty() || !parsed || !parsed->is_object()) {
    if (WIFSIGNALED(status))
      return internal_error("the simulation process was killed by signal " +
                            std::to_string(WTERMSIG(status)));
    return internal_error("the simulation process exited with status " +
                          std::to_string(WEXITSTATUS(status)) + " without a result");
  }
  try {
    return from_json(*parsed);
  } catch (const std::exception& e) {
    return internal_error(std::string("malformed result from the simulation process: ") + e.what());
  }
}

}  // namespace prima::sim
