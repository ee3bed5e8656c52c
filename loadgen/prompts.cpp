// Synthetic prompts and JSONL prompt datasets (see prompts.h).
#include "loadgen/prompts.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/config/json_parse.h"
#include "engine/workload/random.h"

namespace prima::loadgen {
namespace {

// Four bytes each, leading space included.
constexpr const char* kWords[] = {
    " the", " and", " for", " you", " are", " not", " but", " all", " any", " can", " had",
    " her", " was", " one", " our", " out", " day", " get", " has", " him", " his", " how",
    " man", " new", " now", " old", " see", " two", " way", " who", " boy", " did", " its",
    " let", " put", " say", " she", " too", " use", " far", " run", " sky", " sea", " big",
    " red", " sun", " cup", " map", " key", " box", " car", " dog", " cat", " pen", " top",
    " end", " air", " act", " ask", " art", " age", " arm", " bed", " bus"};
constexpr std::size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

}  // namespace

std::string synthetic_prompt(int tokens, Endpoint e, std::uint64_t seed, std::uint64_t index) {
  int words = tokens;
  if (e == Endpoint::kChat) words = tokens - 5;  // "user" + 16 bytes of markers = 5 tokens
  if (words < 1) words = 1;
  workload::SplitMix64 g(workload::splitmix64_mix(seed ^ 0x70726f6d7074ULL) + index);
  std::string s;
  s.reserve(static_cast<std::size_t>(words) * 4);
  for (int i = 0; i < words; ++i) s += kWords[g() % kNumWords];
  return s;
}

Result<std::vector<DatasetRow>> parse_dataset(std::istream& in, const std::string& name) {
  using nlohmann::json;
  std::vector<DatasetRow> rows;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", name, lineno);
    json j = config::parse_json(line, nullptr).value_or(json(json::value_t::discarded));
    if (j.is_discarded() || !j.is_object())
      return invalid_argument(where + ": expected a JSON object per line");
    DatasetRow r;
    auto p = j.find("prompt");
    if (p == j.end() || !p->is_string() || p->get_ref<const std::string&>().empty())
      return invalid_argument(where + ": \"prompt\": expected a non-empty string");
    r.prompt = p->get<std::string>();
    for (const char* k : {"output_tokens", "max_tokens", "output_len"}) {
      auto o = j.find(k);
      if (o == j.end() || o->is_null()) continue;
      if (!o->is_number_integer() || o->get<long long>() < 1 || o->get<long long>() > 1 << 24)
        return invalid_argument(
            fmt::format("{}: \"{}\": expected an integer >= 1, got {}", where, k, o->dump()));
      r.output_tokens = o->get<int>();
      break;
    }
    rows.push_back(std::move(r));
  }
  if (rows.empty()) return invalid_argument(name + ": no prompts (expected JSONL with \"prompt\")");
  return rows;
}

Result<std::vector<DatasetRow>> read_dataset(const std::string& path) {
  std::ifstream f(path);
  if (!f) return invalid_argument(path + ": cannot open the dataset file");
  return parse_dataset(f, path);
}

}  // namespace prima::loadgen
