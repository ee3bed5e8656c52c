// Synthetic tokens of the sim backend (see synthetic_text.h).
#include "server/synthetic_text.h"

#include <algorithm>
#include <array>

namespace prima::server {
namespace {

constexpr std::array<const char*, 32> kWords = {
    "the",   "cluster", "serves", "tokens", "at",    "simulated", "times", "while",
    "every", "request", "waits",  "for",    "its",   "turn",      "in",    "a",
    "batch", "of",      "steps",  "on",     "GPUs",  "linked",    "by",    "fast",
    "links", "and",     "the",    "clock",  "keeps", "pace",      "with",  "you"};

}  // namespace

int tokens_for_bytes(std::size_t bytes) {
  return std::max<int>(1, static_cast<int>((bytes + 3) / 4));
}

int count_prompt_tokens(std::string_view text) {
  return tokens_for_bytes(text.size());
}

std::string token_text(int index) {
  return std::string(" ") + kWords[static_cast<std::size_t>(index) % kWords.size()];
}

}  // namespace prima::server
