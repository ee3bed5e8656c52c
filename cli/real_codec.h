// RealCodec: the server's TextCodec (server/text_codec.h) over a real model's tokenizer and
// chat template (backends/real/tokenizer.h), for `prima serve --backend real`. It joins
// server/ and backends/real/, which know nothing of each other, so it lives with the wiring
// that links both. Immutable; thread-safe as the Tokenizer is (every member is const).
// Ownership: borrows the tokenizer (the RealCluster's backend owns it).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/real/tokenizer.h"
#include "server/text_codec.h"

namespace prima::cli {

class RealCodec : public server::TextCodec {
 public:
  explicit RealCodec(const real::Tokenizer& tok) : tok_(tok) {}
  bool real() const override { return true; }
  void encode(std::string_view text, server::GenRequest* g) const override;
  std::optional<server::ApiError> encode_chat(const std::vector<server::ChatTurn>& msgs,
                                              const server::ChatOptions& opts,
                                              server::GenRequest* g) const override;
  std::string piece(int index, int id) const override;
  std::vector<int> stop_ids() const override { return tok_.eog_ids(); }
  int vocab_size() const override { return tok_.vocab_size(); }
  std::string control_text(int id) const override;
  std::optional<server::ApiError> check_ids(const std::vector<int>& ids,
                                            const std::string& path) const override;

 private:
  const real::Tokenizer& tok_;
};

}  // namespace prima::cli
