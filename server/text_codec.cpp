// The sim backend's TextCodec (see text_codec.h).
#include "server/text_codec.h"

#include <algorithm>

#include "server/request_parse.h"
#include "server/synthetic_text.h"

namespace prima::server {

void SyntheticCodec::encode(std::string_view text, GenRequest* g) const {
  g->prompt_tokens = count_prompt_tokens(text);
}

std::optional<ApiError> SyntheticCodec::encode_chat(const std::vector<ChatTurn>& msgs,
                                                    const ChatOptions& opts, GenRequest* g) const {
  std::size_t bytes = 0;
  for (const auto& m : msgs) bytes += m.role.size() + 16 + m.content.size();
  // The assistant's opening header, or the final message's end-of-turn marker, counted as
  // the real templates write them (about 4 tokens).
  if (!opts.add_generation_prompt && bytes >= 16) bytes -= 16;
  g->prompt_tokens = tokens_for_bytes(bytes);
  return std::nullopt;
}

std::string SyntheticCodec::piece(int index, int) const {
  return token_text(index);
}

std::string SyntheticCodec::id_text(int id) const {
  return token_text(id);
}

std::vector<int> SyntheticCodec::prompt_ids(const GenRequest& g) const {
  if (!g.prompt_ids.empty()) return g.prompt_ids;  // sent as ids
  std::vector<int> ids(static_cast<std::size_t>(std::max(g.prompt_tokens, 0)));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
  return ids;
}

const TextCodec& codec_of(const ModelInfo& m) {
  return m.codec ? *m.codec : synthetic_codec();
}

const TextCodec& synthetic_codec() {
  static const SyntheticCodec codec;
  return codec;
}

}  // namespace prima::server
