#include "engine/config/json_reader.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/config/json_parse.h"

namespace prima::config {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Splits "12.5GB/s" into 12.5 and "gb/s". False when there is no leading number.
bool split_number_unit(const std::string& text, double* value, std::string* unit) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  if (s.empty()) return false;
  std::size_t pos = 0;
  try {
    *value = std::stod(s, &pos);
  } catch (...) {
    return false;
  }
  if (!std::isfinite(*value)) return false;
  *unit = lower(s.substr(pos));
  return true;
}

}  // namespace

bool parse_duration_s(const std::string& s, double* out) {
  double v;
  std::string u;
  if (!split_number_unit(s, &v, &u)) return false;
  double scale;
  if (u.empty() || u == "s" || u == "sec")
    scale = 1;
  else if (u == "ms")
    scale = 1e-3;
  else if (u == "us" || u == "µs")
    scale = 1e-6;
  else if (u == "ns")
    scale = 1e-9;
  else if (u == "min" || u == "m")
    scale = 60;
  else if (u == "h")
    scale = 3600;
  else
    return false;
  *out = v * scale;
  return true;
}

bool parse_bytes(const std::string& s, double* out) {
  double v;
  std::string u;
  if (!split_number_unit(s, &v, &u)) return false;
  static const std::pair<const char*, double> kUnits[] = {{"", 1},
                                                          {"b", 1},
                                                          {"kb", 1e3},
                                                          {"mb", 1e6},
                                                          {"gb", 1e9},
                                                          {"tb", 1e12},
                                                          {"kib", 1024.0},
                                                          {"mib", 1048576.0},
                                                          {"gib", 1073741824.0},
                                                          {"tib", 1099511627776.0}};
  for (auto& [name, scale] : kUnits)
    if (u == name) {
      *out = v * scale;
      return true;
    }
  return false;
}

bool parse_bandwidth_Bps(const std::string& s, double* out) {
  double v;
  std::string u;
  if (!split_number_unit(s, &v, &u)) return false;
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},           {"b/s", 1},        {"bps", 1},        {"kb/s", 1e3},
      {"mb/s", 1e6},     {"gb/s", 1e9},     {"tb/s", 1e12},    {"kbps", 1e3 / 8},
      {"mbps", 1e6 / 8}, {"gbps", 1e9 / 8}, {"tbps", 1e12 / 8}};
  // "Gb/s" (bits) vs "GB/s" (bytes) differ only in case: check the original text first.
  std::string raw;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) raw += c;
  for (const char* bits : {"Gb/s", "Mb/s", "Tb/s", "Kb/s", "kb/s"}) {
    const std::string b(bits);
    if (raw.size() > b.size() && raw.compare(raw.size() - b.size(), b.size(), b) == 0) {
      double scale = b[0] == 'G' ? 1e9 : b[0] == 'M' ? 1e6 : b[0] == 'T' ? 1e12 : 1e3;
      *out = v * scale / 8;
      return true;
    }
  }
  for (auto& [name, scale] : kUnits)
    if (u == name) {
      *out = v * scale;
      return true;
    }
  return false;
}

Result<Json> parse_json_text(const std::string& text, const std::string& file) {
  JsonParseError e;
  if (auto j = parse_json(text, &e)) return std::move(*j);
  return invalid_argument(file + ":" + std::to_string(e.line) + ":" + std::to_string(e.column) +
                          ": malformed JSON: " + e.message);
}

Result<Json> read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open file (does it exist and is it readable?)");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return invalid_argument(path + ": read error");
  return parse_json_text(ss.str(), path);
}

std::string describe(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  const char* type = v.is_string()    ? "string "
                     : v.is_object()  ? "object "
                     : v.is_array()   ? "array "
                     : v.is_boolean() ? "boolean "
                     : v.is_null()    ? ""
                                      : "";
  return type + s;
}

std::string brief(const Json& v) {
  if (v.is_structured()) return v.type_name();
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

JsonReader::JsonReader(const Json& j, std::string file, std::string path, Dialect dialect)
    : j_(&j),
      file_(std::move(file)),
      path_(std::move(path)),
      dialect_(dialect),
      consumed_(std::make_shared<std::set<std::string>>()) {
  if (!j.is_object()) fail_type_at(path_, "an object", j);
}

std::string JsonReader::path_of(const std::string& key) const {
  if (dialect_ == Dialect::kConfigFile) return path_ + "/" + key;
  return path_.empty() ? key : path_ + "." + key;
}
std::string JsonReader::path_of(const std::string& key, std::size_t index) const {
  const std::string i = std::to_string(index);
  return path_of(key) + (dialect_ == Dialect::kConfigFile ? "/" + i : "[" + i + "]");
}

void JsonReader::fail_at(const std::string& path, const std::string& what) const {
  if (dialect_ == Dialect::kConfigFile)
    throw ConfigError(file_ + ": " + (path.empty() ? "/" : path) + ": " + what, path);
  throw ConfigError((path.empty() ? "the request body" : "'" + path + "'") + " " + what, path);
}
void JsonReader::fail_type_at(const std::string& path, const std::string& expected,
                              const Json& got) const {
  if (dialect_ == Dialect::kConfigFile)
    fail_at(path, "expected " + expected + ", got " + describe(got));
  fail_at(path, "must be " + expected + ", got " + brief(got));
}

void JsonReader::fail(const std::string& key, const std::string& what) const {
  fail_at(key.empty() ? path_ : path_of(key), what);
}
void JsonReader::fail_here(const std::string& what) const {
  fail("", what);
}
void JsonReader::fail(const std::string& key, std::size_t index, const std::string& what) const {
  fail_at(path_of(key, index), what);
}
void JsonReader::fail_type(const std::string& key, const std::string& expected,
                           const Json& got) const {
  fail_type_at(key.empty() ? path_ : path_of(key), expected, got);
}

bool JsonReader::has(const std::string& key) const {
  return j_->contains(key) && !(*j_)[key].is_null();
}
void JsonReader::consume(const std::string& key) const {
  consumed_->insert(key);
}

const Json* JsonReader::optional(const std::string& key) const {
  consumed_->insert(key);
  auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) return nullptr;
  return &*it;
}

const Json* JsonReader::required(const std::string& key, const char* expected) const {
  const Json* v = optional(key);
  if (v) return v;
  if (dialect_ == Dialect::kConfigFile)
    fail(key, std::string("missing required field (expected ") + expected + ")");
  throw ConfigError("missing required field '" + path_of(key) + "'", path_of(key));
}

static double as_number(const JsonReader& r, const std::string& key, const Json& v,
                        const char* expected) {
  if (!v.is_number()) r.fail_type(key, expected, v);
  return v.get<double>();
}

double JsonReader::number(const std::string& key) const {
  return as_number(*this, key, *required(key, "a number"), "a number");
}
double JsonReader::number(const std::string& key, double def) const {
  const Json* v = optional(key);
  return v ? as_number(*this, key, *v, "a number") : def;
}
std::optional<double> JsonReader::optional_number(const std::string& key) const {
  const Json* v = optional(key);
  if (!v) return std::nullopt;
  return as_number(*this, key, *v, "a number");
}
double JsonReader::positive_number(const std::string& key) const {
  double d = as_number(*this, key, *required(key, "a positive number"), "a positive number");
  if (!(d > 0)) fail_type(key, "a positive number", j_->at(key));
  return d;
}
double JsonReader::positive_number(const std::string& key, double def) const {
  return has(key) ? positive_number(key) : (consume(key), def);
}
double JsonReader::non_negative_number(const std::string& key, double def) const {
  const Json* v = optional(key);
  if (!v) return def;
  double d = as_number(*this, key, *v, "a number >= 0");
  if (d < 0) fail_type(key, "a number >= 0", *v);
  return d;
}
double JsonReader::fraction(const std::string& key, double def) const {
  const Json* v = optional(key);
  if (!v) return def;
  double d = as_number(*this, key, *v, "a number in [0, 1]");
  if (d < 0 || d > 1) fail_type(key, "a number in [0, 1]", *v);
  return d;
}

// An integer, or a number with an integral value that a double holds exactly (16.0).
static std::int64_t as_integer(const JsonReader& r, const std::string& key, const Json& v,
                               const char* expected) {
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{INT64_MAX})
    r.fail_type(key, std::string(expected) + " below 2^63", v);
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9e15) return static_cast<std::int64_t>(d);
  }
  r.fail_type(key, expected, v);
}

std::int64_t JsonReader::integer(const std::string& key) const {
  return as_integer(*this, key, *required(key, "an integer"), "an integer");
}
std::int64_t JsonReader::integer(const std::string& key, std::int64_t def) const {
  const Json* v = optional(key);
  return v ? as_integer(*this, key, *v, "an integer") : def;
}
std::optional<std::int64_t> JsonReader::optional_integer(const std::string& key) const {
  const Json* v = optional(key);
  if (!v) return std::nullopt;
  return as_integer(*this, key, *v, "an integer");
}
std::int64_t JsonReader::positive_integer(const std::string& key) const {
  const Json& v = *required(key, "a positive integer");
  std::int64_t i = as_integer(*this, key, v, "a positive integer");
  if (i <= 0) fail_type(key, "a positive integer", v);
  return i;
}
std::int64_t JsonReader::positive_integer(const std::string& key, std::int64_t def) const {
  return has(key) ? positive_integer(key) : (consume(key), def);
}
std::int64_t JsonReader::non_negative_integer(const std::string& key, std::int64_t def) const {
  const Json* v = optional(key);
  if (!v) return def;
  std::int64_t i = as_integer(*this, key, *v, "an integer >= 0");
  if (i < 0) fail_type(key, "an integer >= 0", *v);
  return i;
}

bool JsonReader::boolean(const std::string& key, bool def) const {
  const Json* v = optional(key);
  if (!v) return def;
  if (v->is_boolean()) return v->get<bool>();
  // Config files (and --set) may say 0 or 1; a request body says what its schema says.
  if (dialect_ == Dialect::kConfigFile && v->is_number_integer() &&
      (v->get<int>() == 0 || v->get<int>() == 1))
    return v->get<int>() == 1;
  fail_type(key, dialect_ == Dialect::kConfigFile ? "true or false" : "a boolean", *v);
}

std::string JsonReader::string(const std::string& key) const {
  const Json& v = *required(key, "a string");
  if (!v.is_string()) fail_type(key, "a string", v);
  return v.get<std::string>();
}
std::string JsonReader::string(const std::string& key, const std::string& def) const {
  return has(key) ? string(key) : (consume(key), def);
}

static std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string JsonReader::one_of(const std::string& key, const std::vector<std::string>& choices,
                               const std::string& def) const {
  if (!has(key)) {
    consume(key);
    return def;
  }
  return one_of(key, choices);
}
std::string JsonReader::one_of(const std::string& key,
                               const std::vector<std::string>& choices) const {
  const Json& v = *required(key, ("one of " + join(choices)).c_str());
  if (v.is_string())
    for (const auto& c : choices)
      if (v.get<std::string>() == c) return c;
  fail_type(key, "one of " + join(choices), v);
}

using UnitParser = bool (*)(const std::string&, double*);
static double as_quantity(const JsonReader& r, const std::string& key, const Json& v,
                          UnitParser parse, const char* expected) {
  double d = 0;
  if (v.is_number())
    d = v.get<double>();
  else if (!v.is_string() || !parse(v.get<std::string>(), &d))
    r.fail_type(key, expected, v);
  if (!(d >= 0) || !std::isfinite(d)) r.fail_type(key, std::string(expected) + " >= 0", v);
  return d;
}

static const char* kDur = "a duration (seconds, or a string such as \"200ms\", \"1.5s\")";
static const char* kBytes = "a size (bytes, or a string such as \"80GB\", \"512MiB\")";
static const char* kBw = "a bandwidth (bytes/s, or a string such as \"25GB/s\", \"200Gbps\")";

double JsonReader::duration_s(const std::string& key) const {
  return as_quantity(*this, key, *required(key, kDur), parse_duration_s, kDur);
}
double JsonReader::duration_s(const std::string& key, double def) const {
  const Json* v = optional(key);
  return v ? as_quantity(*this, key, *v, parse_duration_s, kDur) : def;
}
double JsonReader::bytes(const std::string& key) const {
  return as_quantity(*this, key, *required(key, kBytes), parse_bytes, kBytes);
}
double JsonReader::bytes(const std::string& key, double def) const {
  const Json* v = optional(key);
  return v ? as_quantity(*this, key, *v, parse_bytes, kBytes) : def;
}
double JsonReader::bandwidth_Bps(const std::string& key) const {
  return as_quantity(*this, key, *required(key, kBw), parse_bandwidth_Bps, kBw);
}
double JsonReader::bandwidth_Bps(const std::string& key, double def) const {
  const Json* v = optional(key);
  return v ? as_quantity(*this, key, *v, parse_bandwidth_Bps, kBw) : def;
}

JsonReader JsonReader::object(const std::string& key) const {
  const Json& v = *required(key, "an object");
  if (!v.is_object()) fail_type(key, "an object", v);
  return JsonReader(v, file_, path_of(key), dialect_);
}
std::optional<JsonReader> JsonReader::optional_object(const std::string& key) const {
  if (!has(key)) {
    consume(key);
    return std::nullopt;
  }
  return object(key);
}
std::vector<JsonReader> JsonReader::objects(const std::string& key) const {
  const Json& v = *required(key, "an array of objects");
  if (!v.is_array()) fail_type(key, "an array of objects", v);
  std::vector<JsonReader> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_object()) fail_type_at(path_of(key, i), "an object", v[i]);
    out.emplace_back(v[i], file_, path_of(key, i), dialect_);
  }
  return out;
}
std::vector<double> JsonReader::numbers(const std::string& key) const {
  const Json& v = *required(key, "an array of numbers");
  if (!v.is_array()) fail_type(key, "an array of numbers", v);
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number()) fail_type_at(path_of(key, i), "a number", v[i]);
    out.push_back(v[i].get<double>());
  }
  return out;
}
std::vector<std::string> JsonReader::strings(const std::string& key) const {
  const Json& v = *required(key, "an array of strings");
  if (!v.is_array()) fail_type(key, "an array of strings", v);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) fail_type_at(path_of(key, i), "a string", v[i]);
    out.push_back(v[i].get<std::string>());
  }
  return out;
}
const Json& JsonReader::value(const std::string& key) const {
  return *required(key, "a value");
}

void JsonReader::finish() const {
  std::vector<std::string> unknown;
  for (auto it = j_->begin(); it != j_->end(); ++it)
    if (!consumed_->count(it.key())) unknown.push_back(it.key());
  if (unknown.empty()) return;
  std::vector<std::string> known(consumed_->begin(), consumed_->end());
  fail(unknown.front(),
       "unknown field \"" + unknown.front() + "\"; valid fields here: " + join(known));
}

}  // namespace prima::config
