// `prima replay` end to end: a recorded simulation replays to itself (the same arrivals and
// lengths, errors ~0); --fit recovers parameters a run was made with; every bad input is exit
// 2 with one line naming the file, the line and the field; and `prima bench --save-requests`
// against `prima serve --backend sim` writes a log that `prima replay` reads.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

const std::string kScenario = source_path("tests/data/cli/replay_small.json");
// Light load, compute-bound prefill: the two fitted parameters are well identified.
const std::string kFitScenario = source_path("tests/data/cli/replay_fit.json");

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

// A CSV file as rows of column -> cell (no quoted commas in the columns read here).
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const auto head = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const auto cells = split(line);
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < head.size() && i < cells.size(); ++i) row[head[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Replay, ARecordedRunReplaysToItself) {
  const std::string dir = temp_dir("replay_self");
  auto sim = run_prima("simulate " + kScenario + " --out " + dir + "/sim -q");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  auto r = run_prima("replay --measured " + dir + "/sim/requests.csv --scenario " + kScenario +
                     " --out " + dir + "/replay -q --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j, read_json(dir + "/replay/comparison.json"));

  // The same requests: every arrival and length of requests.csv, in arrival order.
  const auto recorded = read_csv(dir + "/sim/requests.csv");
  const auto replayed = read_csv(dir + "/replay/per_request.csv");
  ASSERT_GT(recorded.size(), 20u);
  ASSERT_EQ(replayed.size(), recorded.size());
  EXPECT_EQ(j["requests"], recorded.size());
  EXPECT_EQ(j["measured_format"], "simulate_csv");
  std::map<std::string, const std::map<std::string, std::string>*> by_id;
  for (const auto& row : recorded) by_id[row.at("id")] = &row;
  double last = -1;
  for (const auto& row : replayed) {
    const auto& rec = *by_id.at(row.at("measured_id"));
    const double arrival = std::stod(rec.at("arrival_s"));
    EXPECT_EQ(std::stod(row.at("arrival_s")), arrival);
    EXPECT_EQ(std::stod(row.at("simulated_arrival_s")), arrival) << "request " << row.at("id");
    EXPECT_EQ(row.at("prompt_tokens"), rec.at("prompt_tokens"));
    EXPECT_EQ(row.at("output_tokens"), rec.at("output_tokens"));
    EXPECT_EQ(row.at("simulated_ok"), "1");
    EXPECT_GE(arrival, last);
    last = arrival;
  }

  // The same simulator: every figure agrees up to requests.csv's microsecond rounding.
  for (const char* metric : {"ttft", "tpot", "e2e", "queue"})
    for (const char* stat : {"mean", "p50", "p90", "p99"}) {
      const auto& f = j["metrics"][metric][stat];
      const double m = f["measured"].get<double>(), s = f["simulated"].get<double>();
      EXPECT_NEAR(s, m, 1e-3 * m + 2e-6) << metric << " " << stat;
    }
  for (const char* metric : {"ttft", "tpot", "e2e"})
    EXPECT_LT(std::abs(j["metrics"][metric]["p90"]["error"].get<double>()), 1e-3) << metric;
  // requests.csv has no token gaps: ITL is simulated only.
  EXPECT_TRUE(j["metrics"]["itl"]["mean"]["measured"].is_null());
  EXPECT_GT(j["metrics"]["itl"]["mean"]["simulated"].get<double>(), 0);
  EXPECT_LT(j["objective"].get<double>(), 1e-6);
  ASSERT_TRUE(j["fidelity"].contains("summary"));
  // The scenario names no calibration: its GPU's built-in profile applies.
  EXPECT_TRUE(j["fidelity"]["calibrated"].get<bool>());
  EXPECT_EQ(j["fidelity"]["profile"], "A100-SXM4-80GB");
  EXPECT_EQ(j["scenario"], kScenario);

  // The page: self-contained, the verdict (the same simulator: within the stated error on
  // every metric), a CDF per measured metric (no ITL: none was measured) and the table.
  const std::string html = read_file(dir + "/replay/comparison.html");
  std::size_t svgs = 0;
  for (auto p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1)) ++svgs;
  EXPECT_EQ(svgs, 4u);
  EXPECT_NE(html.find("<div class=\"verdict ok\""), std::string::npos);
  EXPECT_NE(html.find("within the stated error"), std::string::npos);
  EXPECT_NE(html.find("Not in the measured run, so not compared: ITL."), std::string::npos);
  EXPECT_EQ(html.find("(none)"), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_NE(html.find("<table>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  // The replayed workload is there to rerun.
  EXPECT_EQ(read_file(dir + "/replay/trace.jsonl").find("{\"arrival_s\": "), 0u);
}

TEST(Replay, FitRecoversTheParametersARunWasMadeWith) {
  const std::string dir = temp_dir("replay_fit");
  const auto t0 = std::chrono::steady_clock::now();
  // The truth: 4 ms per step and GEMMs at half of HBM bandwidth (defaults 1.5 ms, 0.85).
  auto sim = run_prima("simulate " + kFitScenario +
                       " --set 'calibration.defaults={\"gemm_memory\": 0.5}' --set "
                       "'engine={\"base\": \"generic\", \"terms\": {\"step_overhead_s\": "
                       "0.004}}' --out " +
                       dir + "/truth -q");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  // Fitted from the default shares (calibration.defaults={} pins them, whatever built-in
  // profile the GPU may have) and the uncalibrated engine's terms.
  auto r = run_prima("replay -m " + dir + "/truth/requests.csv -s " + kFitScenario +
                     " --set 'calibration.defaults={}' --set engine=generic --fit --fit-params "
                     "step_overhead_s,gemm_memory --out " +
                     dir + "/fit");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[fit] iter 1/"), std::string::npos) << r.err;  // progress per iteration
  const auto j = read_json(dir + "/fit/comparison.json");
  const auto& fit = j["fit"];
  EXPECT_EQ(fit["params"], nlohmann::json({"step_overhead_s", "gemm_memory"}));
  EXPECT_DOUBLE_EQ(fit["initial"]["step_overhead_s"].get<double>(), 1.5e-3);
  EXPECT_DOUBLE_EQ(fit["initial"]["gemm_memory"].get<double>(), 0.85);
  const double overhead = fit["fitted"]["step_overhead_s"].get<double>();
  const double memory = fit["fitted"]["gemm_memory"].get<double>();
  EXPECT_NEAR(overhead, 0.004, 0.0004) << r.out;
  EXPECT_NEAR(memory, 0.5, 0.05) << r.out;
  EXPECT_LT(fit["objective"]["fitted"].get<double>(), fit["objective"]["initial"].get<double>());
  EXPECT_LE(fit["iterations"].get<int>(), 60);  // the default cap

  // profile.json: the fitted hardware terms and their own error, as a profile a scenario
  // reads; engine.json: the fitted engine terms, as an engine a scenario names.
  const auto p = read_json(dir + "/fit/profile.json");
  EXPECT_EQ(p["profile"], "A100-SXM4-80GB");
  EXPECT_FALSE(p["efficiency"].contains("step_overhead_s"));
  EXPECT_DOUBLE_EQ(p["efficiency"]["gemm_memory"].get<double>(), memory);
  const auto e = read_json(dir + "/fit/engine.json");
  EXPECT_DOUBLE_EQ(e["gpus"]["A100-SXM4-80GB"]["step_overhead_s"].get<double>(), overhead);
  EXPECT_DOUBLE_EQ(p["efficiency"]["gemm_compute"].get<double>(), 0.75);  // not fitted: as was
  EXPECT_GT(p["fidelity"]["points"].get<int>(), 0);
  EXPECT_LT(p["fidelity"]["median_abs_error"].get<double>(), 0.05);
  auto again = run_prima("replay -m " + dir + "/truth/requests.csv -s " + kFitScenario +
                         " --set calibration=" + dir + "/fit/profile.json --set engine=" + dir +
                         "/fit/engine.json --out " + dir + "/again -q");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto a = read_json(dir + "/again/comparison.json");
  EXPECT_TRUE(a["fidelity"]["calibrated"].get<bool>());
  EXPECT_EQ(a["fidelity"]["profile"], "A100-SXM4-80GB");
  EXPECT_EQ(a["fidelity"]["points"], p["fidelity"]["points"]);
  EXPECT_NEAR(a["objective"].get<double>(), fit["objective"]["fitted"].get<double>(), 1e-12);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(wall, 60) << "the fit test should stay small";
}

TEST(Replay, BadInputIsOneLineNamingTheFileTheLineAndTheField) {
  const std::string dir = temp_dir("replay_bad");
  const std::string head = "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n";
  const std::string row = "0,100,10,0.05,0.2\n";
  struct Case {
    std::string name, text, extra;
    std::vector<std::string> expect;
  } cases[] = {
      {"missing.csv",
       "arrival_s,prompt_tokens,output_tokens,e2e_s\n0,1,1,1\n",
       "",
       {"missing.csv:1: ttft_s: missing column"}},
      {"unit.csv",
       "arrival_s,prompt_tokens,output_tokens,ttft_min,e2e_s\n" + row,
       "",
       {"unit.csv:1: ttft_min: unknown unit \"min\""}},
      {"nan.csv",
       head + row + "1,100,10,0.05,abc\n",
       "",
       {"nan.csv:3: e2e_s: expected a number, got \"abc\""}},
      {"negative.csv", head + "0,100,10,-0.05,0.2\n", "", {"negative.csv:2: ttft_s: negative"}},
      {"order.csv",
       head + "5,100,10,0.05,0.2\n" + "4,100,10,0.05,0.2\n",
       "",
       {"order.csv:3: arrival_s: 4 s is before the previous request's 5 s"}},
      {"toolong.csv",
       head + row + "1,2000,100,0.05,0.2\n",
       "",
       {"toolong.csv:3: prompt_tokens + output_tokens: 2000 + 100 = 2100 is over the scenario's "
        "max_model_len 2048"}},
      {"empty.csv", "", "", {"empty.csv: empty file"}},
      {"nan.jsonl",
       "{\"arrival_s\": 0, \"prompt_tokens\": 1, \"output_tokens\": 2, \"ttft_s\": \"x\", "
       "\"e2e_s\": 1}\n",
       "",
       {"nan.jsonl:1: ttft_s: expected a number of seconds"}},
      {"fitparams.csv",
       head + row,
       "--fit --fit-params gemm_memory,warp_factor",
       {"--fit-params: unknown parameter \"warp_factor\" (one of: ", "step_overhead_s"}},
      {"nofit.csv", head + row, "--fit-params gemm_memory", {"--fit-params", "need --fit"}},
  };
  for (const Case& c : cases) {
    const std::string path = write(dir, c.name, c.text);
    auto r =
        run_prima("replay -m " + path + " -s " + kScenario + " --out " + dir + "/out " + c.extra);
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    for (const auto& e : c.expect)
      EXPECT_NE(r.err.find(e), std::string::npos) << c.name << ": got " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.name;
  }
  auto missing = run_prima("replay -m " + dir + "/nope.jsonl -s " + kScenario);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.jsonl: cannot open"), std::string::npos) << missing.err;
  auto no_scenario = run_prima("replay -m " + write(dir, "ok.csv", head + row));
  EXPECT_EQ(no_scenario.exit_code, 2);
  EXPECT_NE(no_scenario.err.find("--scenario"), std::string::npos) << no_scenario.err;
}

// `prima serve --backend sim` on a free port, stopped (SIGTERM) when it goes out of scope.
class SimServer {
 public:
  explicit SimServer(const std::string& scenario) {
    dir_ = temp_dir("replay_serve");
    const std::string port_file = dir_ + "/port", log = dir_ + "/log";
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
      }
      ::execl(PRIMA_BINARY, PRIMA_BINARY, "serve", "--backend", "sim", "--port", "0", "--port-file",
              port_file.c_str(), "--scenario", scenario.c_str(), "--speed", "1",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(port_file);
      if (in >> port_ && port_ > 0 && connects()) return;
      port_ = 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~SimServer() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 300; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }
  std::string log() const { return read_file(dir_ + "/log"); }

 private:
  bool connects() const {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(s);
    return ok;
  }
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST(Replay, BenchSavesEveryRequestAndReplayReadsIt) {
  SimServer server(kScenario);
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string dir = temp_dir("replay_bench");
  const std::string log = dir + "/run.jsonl";
  auto b = run_prima("bench --url http://127.0.0.1:" + std::to_string(server.port()) +
                     " --request-rate 20 --num-prompts 12 --input-len 64 --output-len 8 "
                     "--ignore-eos --save-requests " +
                     log + " -q --json");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  std::ifstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const auto header = nlohmann::json::parse(line);
  EXPECT_EQ(header["format"], "prima-bench-requests");
  EXPECT_EQ(header["version"], 1);
  EXPECT_EQ(header["url"], "http://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(header["endpoint"], "completions");
  EXPECT_TRUE(header.contains("model"));
  EXPECT_EQ(header["requests"], 12);
  std::vector<nlohmann::json> recs;
  while (std::getline(in, line)) recs.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(recs.size(), 12u);
  std::set<std::uint64_t> ids;
  double last = -1;
  for (const auto& r : recs) {
    for (const char* k : {"id", "arrival_s", "prompt_tokens", "output_tokens", "ok", "http_status",
                          "ttft_s", "tpot_s", "e2e_s", "itl_s", "queue_s"})
      EXPECT_TRUE(r.contains(k)) << k << " in " << r.dump();
    EXPECT_FALSE(r.contains("error")) << r.dump();
    ids.insert(r["id"].get<std::uint64_t>());
    EXPECT_TRUE(r["ok"].get<bool>());
    EXPECT_EQ(r["http_status"], 200);
    EXPECT_EQ(r["prompt_tokens"], 64);
    EXPECT_EQ(r["output_tokens"], 8);
    const double arrival = r["arrival_s"].get<double>();
    EXPECT_GE(arrival, last);  // in send order
    last = arrival;
    const double ttft = r["ttft_s"].get<double>(), e2e = r["e2e_s"].get<double>();
    EXPECT_GT(ttft, 0);
    EXPECT_GE(e2e, ttft);
    EXPECT_NEAR(r["tpot_s"].get<double>(), (e2e - ttft) / 7, 1e-9);
    EXPECT_GE(r["itl_s"].size(), 1u);
    EXPECT_LE(r["itl_s"].size(), 7u);
    EXPECT_GE(r["queue_s"].get<double>(), 0);
  }
  EXPECT_EQ(ids.size(), 12u);
  // The first request was sent right after the run started.
  EXPECT_LT(recs.front()["arrival_s"].get<double>(), 1.0);

  auto r = run_prima("replay -m " + log + " -s " + kScenario + " --out " + dir + "/replay -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = read_json(dir + "/replay/comparison.json");
  EXPECT_EQ(j["measured_format"], "bench_jsonl");
  EXPECT_EQ(j["requests"], 12);
  EXPECT_EQ(j["completed"]["simulated"], 12);
  EXPECT_EQ(j["metrics"]["itl"]["count"]["measured"].get<int>(), static_cast<int>([&] {
              std::size_t n = 0;
              for (const auto& x : recs) n += x["itl_s"].size();
              return n;
            }()));
  for (const char* metric : {"ttft", "tpot", "itl", "e2e", "queue"})
    EXPECT_TRUE(j["metrics"][metric]["p50"]["simulated"].is_number()) << metric;
  // The simulated cluster's step times are what the emulator served with: the client's TPOT
  // is theirs plus HTTP and scheduling noise, so the replay's should not be above it by much.
  EXPECT_LT(j["metrics"]["tpot"]["p50"]["error"].get<double>(), 0.5) << r.out;
  std::printf("bench log replayed: TTFT p50 error %+.1f%%, TPOT p50 error %+.1f%%\n",
              100 * j["metrics"]["ttft"]["p50"]["error"].get<double>(),
              100 * j["metrics"]["tpot"]["p50"]["error"].get<double>());
}

}  // namespace
}  // namespace prima::testing
