// Parsing a subcommand's arguments (see flags.h).
#include "cli/flags.h"

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

}  // namespace prima::cli
