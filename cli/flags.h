// Parsing a subcommand's arguments against its flags (boost::program_options), and reading
// them into the fields of an options struct (cli/*_options.h). Plain functions; thread-safe.
#pragma once

#include <boost/program_options.hpp>
#include <initializer_list>
#include <optional>
#include <string>

#include "cli/commands.h"

namespace prima::cli {

// Fills *vm from `args`; false, with boost's message in *error (an unknown flag, a missing or
// malformed value), when they do not parse. `positional` names the flags that take the
// arguments without a flag (null: none).
bool parse_flags(
    const Args& args, const boost::program_options::options_description& flags,
    boost::program_options::variables_map* vm, std::string* error,
    const boost::program_options::positional_options_description* positional = nullptr);

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

}  // namespace prima::cli
