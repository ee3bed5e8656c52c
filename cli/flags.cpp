// Parsing a subcommand's arguments, and exit codes (see flags.h).
#include "cli/flags.h"

#include <cstdio>
#include <iostream>

namespace po = boost::program_options;

namespace prima::cli {

bool parse_flags(const Args& args, const po::options_description& flags, po::variables_map* vm,
                 std::string* error, const po::positional_options_description* positional) {
  try {
    po::command_line_parser parser(args);
    parser.options(flags);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), *vm);
    po::notify(*vm);
    return true;
  } catch (const po::error& e) {
    *error = e.what();
    return false;
  }
}

std::optional<int> parse_command_line(const CommandLine& cl, const Args& args,
                                      po::variables_map* vm) {
  po::options_description all;
  all.add(cl.shown).add(cl.hidden);
  std::string error;
  // No positional flags: arguments without a flag are ignored, as boost does without a
  // positional description (an empty one would refuse them).
  const bool positional = cl.positional.max_total_count() > 0;
  if (!parse_flags(args, all, vm, &error, positional ? &cl.positional : nullptr)) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", cl.command, error.c_str(), cl.command);
    return kExitBadInput;
  }
  if (vm->count("help")) {
    std::cout << cl.shown << cl.help;
    return kExitOk;
  }
  return std::nullopt;
}

int exit_code_of(const Status& st, BadInput bad) {
  const StatusCode c = st.code();
  const bool bad_input =
      c == StatusCode::kInvalidArgument || c == StatusCode::kNotFound ||
      (bad == BadInput::kAlsoPrecondition && c == StatusCode::kFailedPrecondition);
  return bad_input ? kExitBadInput : kExitFailure;
}

int fail_with(const char* command, const Status& st, BadInput bad) {
  std::fprintf(stderr, "%s: %s\n", command, st.message().c_str());
  return exit_code_of(st, bad);
}

}  // namespace prima::cli
