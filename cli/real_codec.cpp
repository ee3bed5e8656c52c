// The real model's text codec (see real_codec.h).
#include "cli/real_codec.h"

#include <fmt/format.h>

namespace prima::cli {

void RealCodec::encode(std::string_view text, server::GenRequest* g) const {
  g->prompt_ids = tok_.encode(text, /*add_special=*/true, /*parse_special=*/true);
  g->prompt_tokens = static_cast<int>(g->prompt_ids.size());
}

std::optional<server::ApiError> RealCodec::encode_chat(const std::vector<server::ChatTurn>& msgs,
                                                       const server::ChatOptions& opts,
                                                       server::GenRequest* g) const {
  std::vector<real::ChatMessage> m;
  m.reserve(msgs.size());
  for (const auto& t : msgs) m.push_back({t.role, t.content});
  auto text = tok_.apply_chat_template(m, opts.add_generation_prompt);
  if (!text.ok())
    return server::bad_field("messages", "cannot render the chat: " + text.status().message());
  if (opts.continue_final_message) {
    // Cut the rendering right after the final message's content (as transformers and vLLM
    // do), so that its end-of-turn marker is not there and the model continues it.
    const std::string& last = msgs.back().content;
    const std::size_t at = last.empty() ? std::string::npos : text->rfind(last);
    if (at == std::string::npos)
      return server::bad_field("continue_final_message",
                               "needs a final message with content to continue");
    text->resize(at + last.size());
  }
  // The template writes the special tokens as text: parse them back.
  encode(*text, g);
  return std::nullopt;
}

std::string RealCodec::control_text(int id) const {
  if (id < 0 || id >= tok_.vocab_size() || !tok_.is_special(id)) return "";
  return tok_.piece(id);
}

std::string RealCodec::piece(int, int id) const {
  if (id < 0 || id >= tok_.vocab_size() || tok_.is_special(id)) return "";
  return tok_.piece(id);
}

std::optional<server::ApiError> RealCodec::check_ids(const std::vector<int>& ids,
                                                     const std::string& path) const {
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= tok_.vocab_size())
      return server::bad_field(path, fmt::format("'{}[{}]' = {} is not a token id of this model "
                                                 "(0..{})",
                                                 path, i, ids[i], tok_.vocab_size() - 1));
  return std::nullopt;
}

}  // namespace prima::cli
