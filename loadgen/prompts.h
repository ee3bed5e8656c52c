// Prompt text for benchmark requests: synthetic prompts of a planned token length, or the
// prompts of a JSONL dataset file.
//
// Synthetic: words of four bytes (" the", " and", ...: one token each for BPE tokenizers and
// exactly one token for prima serve's sim backend, which counts ceil(bytes / 4)), drawn from a
// generator seeded by (seed, request index), so each request's prompt differs (no accidental
// prefix-cache hits) and the same seed gives the same prompts. For chat, the sim backend adds
// the role and 16 bytes per message, so the content is 5 words shorter (prompts of 5 tokens
// or fewer get one word).
//
// Dataset (--dataset-path FILE.jsonl): one JSON object per line with "prompt" (a string) and
// optionally "output_tokens" (or "max_tokens", "output_len"): the requested output length;
// without it the workload's output length is used. Blank lines are skipped; anything else
// that is not such an object is an error naming file:line.
//
// Plain functions and an immutable Dataset (safe to read from many threads).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "loadgen/api.h"

namespace prima::loadgen {

std::string synthetic_prompt(int tokens, Endpoint e, std::uint64_t seed, std::uint64_t index);

struct DatasetRow {
  std::string prompt;
  int output_tokens = -1;  // -1 = not given
};

Result<std::vector<DatasetRow>> parse_dataset(std::istream& in, const std::string& name);
Result<std::vector<DatasetRow>> read_dataset(const std::string& path);

}  // namespace prima::loadgen
