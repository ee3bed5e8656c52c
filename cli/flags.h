// Parsing a subcommand's arguments against its flags (boost::program_options), reading them
// into the fields of an options struct (cli/*_options.h), and the exit code of a failed run.
// Plain functions; thread-safe (fail_with prints to stderr).
#pragma once

#include <boost/program_options.hpp>
#include <initializer_list>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "engine/core/status.h"

namespace prima::cli {

// Fills *vm from `args`; false, with boost's message in *error (an unknown flag, a missing or
// malformed value), when they do not parse. `positional` names the flags that take the
// arguments without a flag (null: none).
bool parse_flags(
    const Args& args, const boost::program_options::options_description& flags,
    boost::program_options::variables_map* vm, std::string* error,
    const boost::program_options::positional_options_description* positional = nullptr);

// A subcommand's command line: the flags --help shows, the hidden ones (positional arguments,
// test-only flags) and which flags take the arguments without a flag.
struct CommandLine {
  const char* command;  // "prima serve": starts every message
  boost::program_options::options_description shown;
  boost::program_options::options_description hidden;
  boost::program_options::positional_options_description positional;
  const char* help = "";  // printed after the shown flags by --help
};

// Parses `args` into *vm. nullopt: the command goes on with *vm. Otherwise the exit code of
// the two cases that end it first: flags that do not parse (kExitBadInput, after
// "COMMAND: error (see COMMAND --help)" on stderr) and --help (kExitOk, after the shown flags
// and the help text on stdout).
std::optional<int> parse_command_line(const CommandLine& cl, const Args& args,
                                      boost::program_options::variables_map* vm);

// The type a flag's value is parsed as: T for an option of type T or std::optional<T>.
template <typename T>
struct FlagType {
  using type = T;
};
template <typename T>
struct FlagType<std::optional<T>> {
  using type = T;
};

// The value of the first of `names` (a flag and its aliases) that was given, into *out; *out
// keeps its default when none was.
template <typename T>
void get_flag(const boost::program_options::variables_map& vm,
              std::initializer_list<const char*> names, T* out) {
  for (const char* n : names)
    if (vm.count(n)) {
      *out = vm[n].as<typename FlagType<T>::type>();
      return;
    }
}

// Which failures are the user's input: an invalid argument or a missing file always; with
// kAlsoPrecondition a failed precondition too (a scenario's plan that does not fit its
// topology), where that precondition is the input's and not the machine's.
enum class BadInput { kArgumentOrMissing, kAlsoPrecondition };

// The exit code of a run that failed with `st`: kExitBadInput when the input was bad (see
// BadInput), else kExitFailure.
int exit_code_of(const Status& st, BadInput bad = BadInput::kArgumentOrMissing);

// Prints "COMMAND: message" on stderr and returns exit_code_of(st, bad).
int fail_with(const char* command, const Status& st, BadInput bad = BadInput::kArgumentOrMissing);

}  // namespace prima::cli
