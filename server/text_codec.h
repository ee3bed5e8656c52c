// TextCodec: what the served model does with text, for the request parsers and the engine
// bridge. The sim backend has no tokenizer (SyntheticCodec: lengths estimated from bytes,
// output words from synthetic_text.h); the real backend tokenizes with the model's own
// tokenizer and chat template (cli/real_codec.h implements this interface, so server/ stays
// free of backends/).
//  - encode(): a prompt's token count and, with a tokenizer, its ids;
//  - encode_chat(): chat messages rendered with the model's template, then encoded;
//  - piece(): the bytes of output token `index` (its position) with id `id` ("" for control
//    tokens such as <|im_end|>);
//  - stop_ids(): the ids that end generation (unless the request says ignore_eos);
//  - vocab_size(): how many token ids there are (logit_bias is checked against it);
//  - check_ids(): token ids sent by a client are in the vocabulary;
//  - id_text(), prompt_ids(): vLLM's /detokenize and /tokenize (tokenize_api.cpp).
// Immutable; every member is thread-safe (called from HTTP threads and the engine's loop).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/engine_bridge.h"

namespace prima::server {

struct ChatTurn {
  std::string role;
  std::string content;
};

// How chat messages are rendered (vLLM's chat fields): add_generation_prompt opens the
// assistant's turn after the messages; continue_final_message leaves the final message open
// (its end-of-turn marker cut off) so that the model continues it. Not both.
struct ChatOptions {
  bool add_generation_prompt = true;
  bool continue_final_message = false;
};

class TextCodec {
 public:
  virtual ~TextCodec() = default;
  // Whether output tokens are a real model's (sampling parameters matter).
  virtual bool real() const = 0;
  virtual void encode(std::string_view text, GenRequest* g) const = 0;
  virtual std::optional<ApiError> encode_chat(const std::vector<ChatTurn>& msgs,
                                              const ChatOptions& opts, GenRequest* g) const = 0;
  virtual std::string piece(int index, int id) const = 0;
  virtual std::vector<int> stop_ids() const { return {}; }
  // Token ids are 0 .. vocab_size() - 1 (0: no vocabulary, any id >= 0 is accepted).
  virtual int vocab_size() const { return 0; }
  // `path` names the field in errors ("prompt").
  virtual std::optional<ApiError> check_ids(const std::vector<int>& ids,
                                            const std::string& path) const {
    (void)ids;
    (void)path;
    return std::nullopt;
  }
  // The bytes of token `id` on its own ("" for control tokens).
  virtual std::string id_text(int id) const { return piece(0, id); }
  // A control token's literal text ("<|im_end|>"): what skip_special_tokens false shows.
  virtual std::string control_text(int id) const {
    (void)id;
    return "";
  }
  // The ids of the prompt that encode() or encode_chat() put in `g`.
  virtual std::vector<int> prompt_ids(const GenRequest& g) const { return g.prompt_ids; }
};

// The sim backend's codec: prompt tokens = ceil(bytes / 4); a chat counts each message's
// role plus 16 bytes of template and its content; output token i is token_text(i). It has
// no vocabulary: its ids are synthetic, id k the word token_text(k) (TGI's output token i
// has id i mod 32), and a prompt of n tokens reads as ids 0, 1, ..., n-1 (its positions).
class SyntheticCodec : public TextCodec {
 public:
  bool real() const override { return false; }
  void encode(std::string_view text, GenRequest* g) const override;
  std::optional<ApiError> encode_chat(const std::vector<ChatTurn>& msgs, const ChatOptions& opts,
                                      GenRequest* g) const override;
  std::string piece(int index, int id) const override;
  std::string id_text(int id) const override;
  std::vector<int> prompt_ids(const GenRequest& g) const override;
};

// The codec used when a ServerContext / EngineBridge has none set.
const TextCodec& synthetic_codec();

struct ModelInfo;
// The served model's codec: its own, else synthetic_codec().
const TextCodec& codec_of(const ModelInfo& m);

}  // namespace prima::server
