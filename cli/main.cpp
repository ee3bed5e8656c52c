// prima: one binary, a table of subcommands. `prima --help` lists them; `prima CMD --help`
// explains one.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"

namespace prima::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"simulate", "run a scenario on the simulated cluster and write its report", cmd_simulate},
      {"validate", "check scenario/topology files without running them", cmd_validate},
      {"plan", "search configurations for the highest rate that meets an SLO", cmd_plan},
      {"generate", "run a prompt through a GGUF model on the real backend (CPU, TP/PP ranks)",
       cmd_generate},
      {"profile", "measure the real CPU backend and write the simulator's calibration",
       cmd_profile},
      {"report", "render a run's output directory as a self-contained HTML report", cmd_report},
      {"serve", "serve OpenAI, TGI and KServe v2 APIs over HTTP (--backend sim: emulator)",
       cmd_serve},
      {"bench", "load-test an HTTP server (OpenAI/TGI): TTFT, TPOT, ITL, E2E, goodput", cmd_bench},
      {"calibrate", "check or fit a hardware profile against published measurements",
       cmd_calibrate},
      {"replay", "replay a measured run on the simulator and compare (--fit: calibrate)",
       cmd_replay},
  };
  return kCommands;
}

static void usage(std::FILE* out) {
  std::fprintf(out,
               "prima - a simulation-first distributed LLM inference engine\n\n"
               "usage: prima COMMAND [ARGS...]\n\ncommands:\n");
  for (const auto& c : commands()) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(
      out,
      "\nexamples:\n"
      "  prima simulate                          # the built-in default scenario\n"
      "  prima simulate scenarios/x.json --out out/x --set seed=7\n"
      "  prima simulate scenarios/x.json --out out/x --html  # + out/x/report.html\n"
      "  prima validate scenarios/*.json topologies/*.json\n"
      "  prima plan scenarios/plans/llama2_70b_bitbrick.json --out out/plan\n"
      "  prima generate --model models/SmolLM2-135M-Instruct.Q4_1.gguf --prompt Hi --chat\n"
      "  mpirun -np 3 prima generate --model M.gguf --prompt Hi --tp 3\n"
      "  prima profile --model models/SmolLM2-135M-Instruct.Q4_1.gguf --out cal.json\n"
      "  prima serve --backend sim --port 8000   # the emulator over HTTP\n"
      "  prima bench --url http://127.0.0.1:8000 --request-rate 20 --num-prompts 200\n"
      "  prima replay --measured run.jsonl --scenario my_server.json --fit\n\n"
      "Run 'prima COMMAND --help' for a command's options.\n");
}

}  // namespace prima::cli

int main(int argc, char** argv) {
  using namespace prima::cli;
  if (argc < 2) {
    usage(stderr);
    return kExitBadInput;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return kExitOk;
  }
  if (cmd == "--version") {
    std::printf("prima 0.1.0\n");
    return kExitOk;
  }
  for (const auto& c : commands()) {
    if (cmd == c.name) {
      Args args(argv + 2, argv + argc);
      return c.run(args);
    }
  }
  std::fprintf(stderr, "prima: unknown command '%s'\n\n", cmd.c_str());
  usage(stderr);
  return kExitBadInput;
}
