// `prima simulate`'s flags and their checks (see simulate_options.h).
#include "cli/simulate_options.h"

#include <cstdint>

#include "cli/flags.h"

namespace po = boost::program_options;

namespace prima::cli {

Status SimulateOptions::validate() const {
  if (html && no_files) return invalid_argument("--html needs the output files; drop --no-files");
  return ok_status();
}

po::options_description simulate_flags() {
  po::options_description opts("prima simulate [SCENARIO] [options]");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("out,o", po::value<std::string>(), "output directory (default: out/<scenario name>)")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a scenario field: PATH=VALUE (repeatable), e.g. --set seed=7")
      ("seed", po::value<std::uint64_t>(), "shortcut for --set seed=N")
      ("no-files", "print the summary only, write nothing")
      ("html", "also write DIR/report.html (self-contained; needs python3-matplotlib)")
      ("json", "print report.json to stdout instead of the summary table")
      ("quiet,q", "no progress on stderr");
  // clang-format on
  return opts;
}

po::options_description simulate_hidden_flags() {
  po::options_description hidden;
  hidden.add_options()("scenario", po::value<std::string>(), "scenario file");
  return hidden;
}

SimulateOptions simulate_options(const po::variables_map& vm) {
  SimulateOptions o;
  get_flag(vm, {"scenario"}, &o.scenario_path);
  get_flag(vm, {"out"}, &o.out_dir);
  get_flag(vm, {"set"}, &o.sets);
  if (vm.count("seed")) o.sets.push_back("seed=" + std::to_string(vm["seed"].as<std::uint64_t>()));
  o.no_files = vm.count("no-files") > 0;
  o.html = vm.count("html") > 0;
  o.json = vm.count("json") > 0;
  o.quiet = vm.count("quiet") > 0;
  return o;
}

}  // namespace prima::cli
