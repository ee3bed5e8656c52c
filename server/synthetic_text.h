// Token counting and output text for the sim backend, which has no tokenizer and computes no
// tokens (docs/serving.md):
//  - a prompt's length in tokens is ceil(bytes / 4), at least 1 (about 4 bytes per token of
//    English text for BPE vocabularies); a prompt sent as a list of token ids counts its ids;
//  - output token i of every response is the word kWords[i % 32] with a leading space, so a
//    response of n tokens is always the same n words.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace prima::server {

int count_prompt_tokens(std::string_view text);
int tokens_for_bytes(std::size_t bytes);  // the same heuristic on a byte count
std::string token_text(int index);

}  // namespace prima::server
