// The sim backend's TextCodec (see text_codec.h).
#include "server/text_codec.h"

#include "server/synthetic_text.h"

namespace prima::server {

void SyntheticCodec::encode(std::string_view text, GenRequest* g) const {
  g->prompt_tokens = count_prompt_tokens(text);
}

std::optional<ApiError> SyntheticCodec::encode_chat(const std::vector<ChatTurn>& msgs,
                                                    GenRequest* g) const {
  std::size_t bytes = 0;
  for (const auto& m : msgs) bytes += m.role.size() + 16 + m.content.size();
  g->prompt_tokens = tokens_for_bytes(bytes);
  return std::nullopt;
}

std::string SyntheticCodec::piece(int index, int) const {
  return token_text(index);
}

const TextCodec& synthetic_codec() {
  static const SyntheticCodec codec;
  return codec;
}

}  // namespace prima::server
