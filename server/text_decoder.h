// TextDecoder: one request's output text, built token by token on the engine's loop. Each
// token adds its bytes; push() returns the text that may be sent now:
//  - a trailing incomplete UTF-8 sequence is held back until it completes;
//  - a trailing piece that could be the start of a stop string is held back until it is
//    known not to be one;
//  - once a stop string appears, the text before it is released (with the stop string
//    itself when include_stop), anything after it is dropped, and stopped() turns true (the
//    server then ends the request early);
//  - a push with stops_armed false (vLLM's min_tokens not reached yet) looks for no stop
//    string and holds nothing back for one: text released then is never matched later;
//  - invalid UTF-8 (a model can emit byte tokens that do not form characters) becomes
//    U+FFFD, so the text is always valid for JSON.
// flush() releases what is held back at the end of the request.
// Not thread-safe: one request, one thread at a time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace prima::server {

class TextDecoder {
 public:
  explicit TextDecoder(std::vector<std::string> stops = {}, bool include_stop = false);

  std::string push(std::string_view bytes, bool stops_armed = true);
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  // Releases pending_[0, n) (made valid UTF-8) and keeps the rest pending.
  std::string release(std::size_t n);

  std::vector<std::string> stops_;
  bool include_stop_ = false;
  std::string pending_;  // bytes not released yet
  bool stopped_ = false;
};

// `s` with every invalid or incomplete UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view s);
// Length of the longest prefix of `s` that does not end inside an incomplete (but so far
// valid) UTF-8 sequence.
std::size_t complete_utf8_prefix(std::string_view s);

}  // namespace prima::server
