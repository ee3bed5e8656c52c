// `prima validate FILE...`: loads each file as a scenario, a topology, a hardware profile, a
// GPU specs file or a price and power table (decided by its content: a topology has
// "node"/"nodes" and no "workload", a profile a "profile" name, the other two a "gpus"
// object, prices with price_per_gpu_hour) and reports the first problem of each, including whether
// the scenario's plan fits its GPUs.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "engine/capacity/price_table.h"
#include "engine/perf/calibration.h"
#include "engine/plan/parallel_plan.h"
#include "engine/plan/topology.h"
#include "engine/scenario/scenario.h"

namespace po = boost::program_options;

namespace prima::cli {

static Status validate_file(const std::string& path, std::string* what) {
  PRIMA_ASSIGN_OR_RETURN(config::Json j, config::read_json_file(path));
  if (j.is_object() && j.contains("profile") && j["profile"].is_string()) {
    *what = "hardware profile";
    PRIMA_ASSIGN_OR_RETURN(perf::Profile p, perf::load_profile_file(path));
    const std::string why = perf::check_efficiency(p.efficiency);
    if (!why.empty()) return invalid_argument(path + ": /efficiency/" + why);
    *what = "hardware profile (" + p.fidelity.summary() + ")";
    return ok_status();
  }
  if (j.is_object() && j.contains("gpus") && j["gpus"].is_object() && !j.contains("workload")) {
    bool prices = false;
    for (const auto& [name, e] : j["gpus"].items())
      prices = prices || (e.is_object() && e.contains("price_per_gpu_hour"));
    if (prices) {
      *what = "price and power table";
      return capacity::load_price_table(path).status();
    }
    *what = "GPU specs";
    return plan::parse_gpu_specs(j, path).status();
  }
  const bool is_topology = j.is_object() && !j.contains("workload") &&
                           (j.contains("node") || j.contains("nodes") || j.contains("gpu"));
  if (is_topology) {
    *what = "topology";
    plan::Topology t;
    PRIMA_RETURN_IF_ERROR(
        config::to_status([&] { t = plan::parse_topology(config::JsonReader(j, path)); }));
    return t.validate();
  }
  *what = "scenario";
  PRIMA_ASSIGN_OR_RETURN(scenario::Scenario s, scenario::load_scenario(path, {}));
  auto placed = plan::place(s.plan, s.topology);
  if (!placed.ok()) return invalid_argument(path + ": /deployment: " + placed.status().message());
  auto fit = plan::check_plan(s.model, s.quantization, s.topology, s.plan, s.memory,
                              s.scheduler.max_num_batched_tokens, s.max_model_len);
  if (!fit.ok()) return invalid_argument(path + ": /deployment: " + fit.status().message());
  if (!fit->fits) return invalid_argument(path + ": /deployment: " + fit->verdict);
  *what = "scenario (" + fit->verdict + ")";
  return ok_status();
}

int cmd_validate(const Args& args) {
  po::options_description opts("prima validate FILE... [options]");
  opts.add_options()("help,h", "show this help")("files", po::value<std::vector<std::string>>(),
                                                 "scenario or topology JSON files");
  po::positional_options_description pos;
  pos.add("files", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "prima validate: %s\n", e.what());
    return kExitBadInput;
  }
  if (vm.count("help") || !vm.count("files")) {
    std::cout << opts
              << "\nChecks each file strictly (unknown fields, types, ranges, plan fit) and "
                 "prints one line per file.\nExit code 0 when all are valid, 2 otherwise.\n"
                 "example: prima validate scenarios/*.json topologies/bitbrick_k1.json\n";
    return vm.count("help") ? kExitOk : kExitBadInput;
  }
  int bad = 0;
  for (const auto& f : vm["files"].as<std::vector<std::string>>()) {
    std::string what;
    Status st = validate_file(f, &what);
    if (st.ok()) {
      std::printf("ok     %s: %s\n", f.c_str(), what.c_str());
    } else {
      ++bad;
      std::fprintf(stderr, "error  %s\n", st.message().c_str());
    }
  }
  return bad ? kExitBadInput : kExitOk;
}

}  // namespace prima::cli
