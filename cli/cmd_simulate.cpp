// `prima simulate [SCENARIO] [--out DIR] [--set PATH=VALUE]...`: runs a scenario on the
// simulated cluster (sim::run_simulation), writes DIR/report.json, DIR/requests.csv,
// DIR/timeline.csv and prints a summary table. Progress goes to stderr once a second of wall
// time. With --html, also DIR/report.html (cli/html_report.h); a failure to render is a
// warning, not an error. The flags are cli/simulate_options.h.
#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "backends/sim/simulation.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/html_report.h"
#include "cli/simulate_options.h"
#include "engine/metrics/report.h"
#include "engine/scenario/scenario.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace prima::cli {
namespace {

// "1.68 s" / "337 ms": a duration as people read it.
std::string seconds_text(double s) {
  return s >= 1 ? fmt::format("{:.3g} s", s) : fmt::format("{:.3g} ms", s * 1e3);
}

// The verdict, as report.html leads with it: SLO attainment against slo.target, and each bound
// whose p99 is over it.
void print_verdict(const nlohmann::ordered_json& r) {
  const auto& slo = r["slo"];
  if (!slo.contains("bounds") || slo["bounds"].empty()) {
    std::printf("  verdict    no SLO set\n");
    return;
  }
  const double att = slo["attainment"].get<double>();
  const double target = slo.value("target", 0.99);
  std::string over;
  for (const char* k : {"ttft", "tpot", "e2e"}) {
    const std::string key = std::string(k) + "_s";
    if (!slo["bounds"].contains(key)) continue;
    const double bound = slo["bounds"][key].get<double>();
    const double p99 = r["latency_s"][k]["p99"].get<double>();
    if (p99 > bound) {
      std::string name = k;
      for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      over += fmt::format("{}{} p99 {} > {}", over.empty() ? "; " : ", ", name, seconds_text(p99),
                          seconds_text(bound));
    }
  }
  std::printf("  verdict    SLO %s: %.1f%% of requests within every bound (target %.1f%%)%s\n",
              att >= target ? "met" : "missed", 100 * att, 100 * target, over.c_str());
}

void print_summary(const nlohmann::ordered_json& r, const std::string& out_dir, bool html) {
  auto lat = [&](const char* k) {
    const auto& s = r["latency_s"][k];
    return fmt::format("{:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}", s["mean"].get<double>() * 1e3,
                       s["p50"].get<double>() * 1e3, s["p90"].get<double>() * 1e3,
                       s["p99"].get<double>() * 1e3);
  };
  const auto& q = r["requests"];
  std::printf("scenario %s (seed %llu): %.1f simulated s\n",
              r["scenario"].get<std::string>().c_str(),
              static_cast<unsigned long long>(r["seed"].get<std::uint64_t>()),
              r["simulated_seconds"].get<double>());
  const auto& dep = r["deployment"];
  std::string layout = "TP" + std::to_string(dep["tensor_parallel"].get<int>());
  if (dep.contains("data_parallel"))
    layout += " x DP" + std::to_string(dep["data_parallel"].get<int>());
  layout += " x PP" + std::to_string(dep["pipeline_parallel"].get<int>());
  if (dep.contains("context_parallel"))
    layout += " (CP" + std::to_string(dep["context_parallel"].get<int>()) + ")";
  if (dep.contains("expert_parallel")) {
    const int etp = dep.value("expert_tensor_parallel", 1);
    layout += " (EP" + std::to_string(dep["expert_parallel"].get<int>()) +
              (etp > 1 ? " x expert TP" + std::to_string(etp) : std::string()) + ")";
  }
  std::string replicas = " x " + std::to_string(dep["replicas"].get<int>()) + " replica(s)";
  if (dep.contains("pools")) {  // disaggregated pools of their own shape
    layout.clear();
    replicas.clear();
    for (const auto& p : dep["pools"])
      layout += (layout.empty() ? "" : ", ") + p["role"].get<std::string>() + " " +
                std::to_string(p["replicas"].get<int>()) + " x TP" +
                std::to_string(p["tensor_parallel"].get<int>()) + " x PP" +
                std::to_string(p["pipeline_parallel"].get<int>());
  }
  std::printf("  %s %s on %d GPUs (%s), %s%s\n", r["model"]["name"].get<std::string>().c_str(),
              r["model"]["quantization"].get<std::string>().c_str(), r["gpus"]["count"].get<int>(),
              r["topology"]["gpu"].get<std::string>().c_str(), layout.c_str(), replicas.c_str());
  // How far to trust the figures below: the cost model's calibration and its measured error.
  if (r.contains("fidelity"))
    std::printf("  fidelity   %s\n", r["fidelity"]["summary"].get<std::string>().c_str());
  print_verdict(r);
  std::printf("  requests   submitted %lld  completed %lld  rejected %lld  failed %lld\n",
              q["submitted"].get<long long>(), q["completed"].get<long long>(),
              q["rejected"].get<long long>(), q["failed"].get<long long>());
  std::printf("  latency ms      mean       p50       p90       p99\n");
  std::printf("    ttft     %s\n    tpot     %s\n    e2e      %s\n    queue    %s\n",
              lat("ttft").c_str(), lat("tpot").c_str(), lat("e2e").c_str(), lat("queue").c_str());
  std::printf(
      "  throughput %.2f req/s, %.0f output tok/s; SLO attainment %.1f%%, goodput %.2f req/s\n",
      r["throughput"]["requests_per_s"].get<double>(),
      r["throughput"]["output_tokens_per_s"].get<double>(),
      100 * r["slo"]["attainment"].get<double>(), r["slo"]["goodput_rps"].get<double>());
  std::printf(
      "  GPUs       utilization %.1f%%, %.1f TFLOP/s each, memory peak %.1f%%; KV peak %.1f%%, "
      "preemptions %lld\n",
      100 * r["gpus"]["utilization_mean"].get<double>(), r["gpus"]["tflops_mean"].get<double>(),
      100 * r["gpus"]["memory_used_fraction_max"].get<double>(),
      100 * r["kv_cache"]["peak_usage"].get<double>(), r["preemptions"].get<long long>());
  // Incident replay: each fault window, and what the engine did about failures.
  if (r.contains("incidents"))
    for (const auto& i : r["incidents"])
      std::printf(
          "  incident   %s (%s, %s) %.0f-%.0f s%s: E2E p99 %.2f s in flight vs %.2f s "
          "outside; %lld requests in flight, %lld failed\n",
          i["fault"].get<std::string>().c_str(), i["type"].get<std::string>().c_str(),
          i["target"].get<std::string>().c_str(), i["start_s"].get<double>(),
          i["end_s"].get<double>(), i["ongoing"].get<bool>() ? " (ongoing)" : "",
          i["e2e_p99_inside_s"].get<double>(), i["e2e_p99_outside_s"].get<double>(),
          i["requests_inside"].get<long long>(), i["failed_inside"].get<long long>());
  if (r.contains("failover") && r["failover"]["step_failures"].get<long long>() +
                                        r["failover"]["migrations"].get<long long>() >
                                    0) {
    const auto& f = r["failover"];
    std::printf(
        "  failover   %lld failed steps, %lld replicas out / %lld back, %lld requests "
        "re-routed, %lld out of retries, %lld migrated\n",
        f["step_failures"].get<long long>(), f["replica_failures"].get<long long>(),
        f["replica_recoveries"].get<long long>(), f["reroutes"].get<long long>(),
        f["retries_exhausted"].get<long long>(), f["migrations"].get<long long>());
  }
  if (r.contains("load_errors"))
    for (const auto& e : r["load_errors"])
      std::printf("  load error %s\n", e.get<std::string>().c_str());
  std::printf("  run        %.2f wall s, %.0fx real time\n", r["run"]["wall_seconds"].get<double>(),
              r["run"]["sim_speedup"].get<double>());
  if (!out_dir.empty())
    std::printf("  wrote      %s/{report.json,requests.csv,timeline.csv%s}\n", out_dir.c_str(),
                html ? ",report.html" : "");
}

constexpr const char* kHelp = R"(
SCENARIO is a scenario JSON file, or the name of a built-in one; without it, the built-in
default runs (Llama-2-70B W8A8 on two Bitbrick_K1 nodes, TP4 x PP2, Poisson load).

examples:
  prima simulate
  prima simulate scenarios/default.json --out out/default
  prima simulate --set workload.arrival.rate_rps=2 --set deployment.replicas=1
  prima simulate my.json --seed 3 --json > report.json
  prima simulate scenarios/incidents/thermal_clock_drift.json --out out/th --html

Exit codes: 0 ok, 1 the run failed, 2 bad input (the message names the file and JSON path).
)";

// The progress line, rewritten in place on stderr.
void print_progress(const sim::Progress& p) {
  std::fprintf(stderr,
               "\r[prima] sim %.0f/%.0f s  requests %lld (done %lld, in flight %lld)  wall "
               "%.1f s  %.0fx ",
               p.sim_s, p.duration_s, static_cast<long long>(p.submitted),
               static_cast<long long>(p.ended), static_cast<long long>(p.in_system), p.wall_s,
               p.wall_s > 0 ? p.sim_s / p.wall_s : 0.0);
  std::fflush(stderr);
}

// report.json, requests.csv and timeline.csv into out_dir.
Status write_outputs(const sim::SimulationOutput& res, const std::string& out_dir) {
  for (Status st : {metrics::write_report_json(res.report, out_dir + "/report.json"),
                    metrics::write_requests_csv(*res.recorder, out_dir + "/requests.csv"),
                    metrics::write_timeline_csv(*res.recorder, out_dir + "/timeline.csv")})
    if (!st.ok()) return st;
  return ok_status();
}

// Loads the scenario, runs it, writes and prints what it measured; the exit code.
int run_simulate(const SimulateOptions& o) {
  auto sc = scenario::load_scenario(o.scenario_path, o.sets);
  if (!sc.ok()) {
    std::fprintf(stderr, "prima simulate: %s\n", sc.status().message().c_str());
    return kExitBadInput;
  }
  std::string out_dir;
  if (!o.no_files) {
    out_dir = o.out_dir.empty() ? "out/" + sc->name : o.out_dir;
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec) {
      std::fprintf(stderr, "prima simulate: --out %s: cannot create directory: %s\n",
                   out_dir.c_str(), ec.message().c_str());
      return kExitBadInput;
    }
  }
  sim::SimulationOptions so;
  if (!o.quiet) so.progress = print_progress;
  auto res = sim::run_simulation(*sc, so);
  if (so.progress) std::fprintf(stderr, "\n");
  if (!res.ok()) return fail_with("prima simulate", res.status(), BadInput::kAlsoPrecondition);
  if (!out_dir.empty())
    if (Status st = write_outputs(*res, out_dir); !st.ok()) {
      std::fprintf(stderr, "prima simulate: %s\n", st.message().c_str());
      return kExitFailure;
    }
  bool html = false;
  if (o.html) {
    Status st = render_html_report("simulate", out_dir);
    if (st.ok())
      html = true;
    else
      std::fprintf(stderr, "prima simulate: warning: no report.html: %s\n", st.message().c_str());
  }
  if (o.json)
    std::cout << res->report.dump(2) << "\n";
  else
    print_summary(res->report, out_dir, html);
  return kExitOk;
}

}  // namespace

int cmd_simulate(const Args& args) {
  CommandLine cl{"prima simulate", simulate_flags(), simulate_hidden_flags(), {}, kHelp};
  cl.positional.add("scenario", 1);
  po::variables_map vm;
  if (auto done = parse_command_line(cl, args, &vm)) return *done;
  const SimulateOptions o = simulate_options(vm);
  if (Status st = o.validate(); !st.ok()) return fail_with("prima simulate", st);
  return run_simulate(o);
}

}  // namespace prima::cli
