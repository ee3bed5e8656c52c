// Strict JSON reading for config files (scenarios, topologies, calibration tables, workloads)
// and for API request bodies (server/).
//
// A JsonReader views one JSON object and remembers which keys were read; finish() rejects
// any key nobody asked for, so a misspelt field is an error, never a silent default. Every
// error is a ConfigError whose message names where the field is and what would be valid, in
// one of two dialects:
//   kConfigFile (files): the file and the JSON pointer, the value quoted:
//     scenarios/x.json: /deployment/parallel_strategy/tensor_parallel: expected a positive
//     integer, got string "four"
//   kRequestBody (HTTP bodies): the field as clients write it, the value briefly (scalars,
//     cut to 40 characters; a container by its type), booleans strictly true or false:
//     'parameters.top_k' must be an integer, got "ten"
// ConfigError is an exception used inside parsing only; loaders catch it at their border (see
// to_status; the server turns it into a 400 naming ConfigError::field()). Not thread-safe;
// readers are cheap to copy and share the set of consumed keys with their copies.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/status.h"

namespace prima::config {

using Json = nlohmann::json;

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message, std::string field = {})
      : std::runtime_error(message), field_(std::move(field)) {}
  // The field the error is about, in the reader's dialect ("" when not known).
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

enum class Dialect { kConfigFile, kRequestBody };

// Parses text as JSON; on failure the message names the file, line and column.
Result<Json> parse_json_text(const std::string& text, const std::string& file);
// Reads and parses a file.
Result<Json> read_json_file(const std::string& path);

// Short rendering of a JSON value for messages (strings quoted, long values cut).
std::string describe(const Json& v);
// Briefer, for values a client sent: a scalar as JSON (at most 40 characters), or the type of
// a container ("array", "object"), so a message never serializes client nesting.
std::string brief(const Json& v);

class JsonReader {
 public:
  // `file` names the source in messages; `path` is where `j` is ("" for the root): a JSON
  // pointer for kConfigFile, a dotted path ("parameters", "messages[0]") for kRequestBody.
  JsonReader(const Json& j, std::string file, std::string path = "",
             Dialect dialect = Dialect::kConfigFile);
  // A reader of an API request body (kRequestBody, no file).
  static JsonReader request_body(const Json& j, std::string path = "") {
    return JsonReader(j, "", std::move(path), Dialect::kRequestBody);
  }

  const Json& json() const { return *j_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  // Where a key of this object is ("/a/key" or "a.key"), and an element of its array value
  // ("/a/key/0" or "a.key[0]").
  std::string path_of(const std::string& key) const;
  std::string path_of(const std::string& key, std::size_t index) const;

  bool has(const std::string& key) const;
  // Marks a key as read without reading it (for keys handled elsewhere).
  void consume(const std::string& key) const;

  // Required and optional scalars. Type and range errors throw ConfigError.
  double number(const std::string& key) const;
  double number(const std::string& key, double def) const;
  std::optional<double> optional_number(const std::string& key) const;  // nullopt when absent
  double positive_number(const std::string& key) const;
  double positive_number(const std::string& key, double def) const;
  double non_negative_number(const std::string& key, double def) const;
  double fraction(const std::string& key, double def) const;  // in [0, 1]
  std::int64_t integer(const std::string& key) const;
  std::int64_t integer(const std::string& key, std::int64_t def) const;
  std::optional<std::int64_t> optional_integer(const std::string& key) const;
  std::int64_t positive_integer(const std::string& key) const;
  std::int64_t positive_integer(const std::string& key, std::int64_t def) const;
  std::int64_t non_negative_integer(const std::string& key, std::int64_t def) const;
  bool boolean(const std::string& key, bool def) const;
  std::string string(const std::string& key) const;
  std::string string(const std::string& key, const std::string& def) const;
  // One of `choices`; the message lists them.
  std::string one_of(const std::string& key, const std::vector<std::string>& choices,
                     const std::string& def) const;
  std::string one_of(const std::string& key, const std::vector<std::string>& choices) const;

  // Quantities with units. A bare number is in base units (seconds, bytes, bytes/s).
  //   duration: 0.2, "200ms", "1.5s", "250us", "2min", "1h"
  //   bytes:    8e10, "80GB", "80GiB", "512MiB"
  //   bandwidth: 2.5e10, "25GB/s", "200Gbps", "200Gb/s", "600GB/s"
  double duration_s(const std::string& key) const;
  double duration_s(const std::string& key, double def) const;
  double bytes(const std::string& key) const;
  double bytes(const std::string& key, double def) const;
  double bandwidth_Bps(const std::string& key) const;
  double bandwidth_Bps(const std::string& key, double def) const;

  // Nested values.
  JsonReader object(const std::string& key) const;  // required object
  std::optional<JsonReader> optional_object(const std::string& key) const;
  std::vector<JsonReader> objects(const std::string& key) const;   // required array of objects
  std::vector<double> numbers(const std::string& key) const;       // required array of numbers
  std::vector<std::string> strings(const std::string& key) const;  // required array of strings
  const Json& value(const std::string& key) const;                 // any required value

  // Throws if a key was never read; names it and lists the keys that were read.
  void finish() const;

  // Throw a ConfigError about `key` ("" for this object). kConfigFile: "FILE: PATH: what";
  // kRequestBody: "'PATH' what" (so `what` reads on from the field: "must be ...").
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  [[noreturn]] void fail_here(const std::string& what) const;
  // The same about the element `index` of key's array value.
  [[noreturn]] void fail(const std::string& key, std::size_t index, const std::string& what) const;
  // A value of the wrong type or out of range: "expected X, got V" / "'PATH' must be X, got V".
  [[noreturn]] void fail_type(const std::string& key, const std::string& expected,
                              const Json& got) const;

 private:
  const Json* required(const std::string& key, const char* expected) const;
  const Json* optional(const std::string& key) const;
  [[noreturn]] void fail_at(const std::string& path, const std::string& what) const;
  [[noreturn]] void fail_type_at(const std::string& path, const std::string& expected,
                                 const Json& got) const;

  const Json* j_;
  std::string file_;
  std::string path_;
  Dialect dialect_;
  std::shared_ptr<std::set<std::string>> consumed_;
};

// Free parsers for unit strings (also used for CLI flags and HTTP fields); false if malformed.
bool parse_duration_s(const std::string& s, double* out);
bool parse_bytes(const std::string& s, double* out);
bool parse_bandwidth_Bps(const std::string& s, double* out);

// Converts a ConfigError (or any std::exception) thrown by `fn` into an invalid-argument Status.
template <typename Fn>
Status to_status(Fn&& fn) {
  try {
    fn();
    return ok_status();
  } catch (const ConfigError& e) {
    return invalid_argument(e.what());
  } catch (const std::exception& e) {
    return invalid_argument(e.what());
  }
}

}  // namespace prima::config
