// Incremental output text with stop strings and UTF-8 hold-back (see text_decoder.h).
#include "server/text_decoder.h"

#include <algorithm>

namespace prima::server {
namespace {

// Length of the UTF-8 sequence starting with lead byte `c` (0: not a lead byte).
int seq_len(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// Whether s[i+1 .. i+k) are valid continuation bytes of the sequence led by s[i] (checks the
// overlong / surrogate / range rules of the second byte). `avail` bytes are present.
bool valid_continuation(std::string_view s, std::size_t i, int len, std::size_t avail) {
  const auto lead = static_cast<unsigned char>(s[i]);
  for (std::size_t k = 1; k < static_cast<std::size_t>(len) && k < avail; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return false;
    if (k == 1) {
      if (lead == 0xE0 && c < 0xA0) return false;  // overlong
      if (lead == 0xED && c > 0x9F) return false;  // surrogates
      if (lead == 0xF0 && c < 0x90) return false;  // overlong
      if (lead == 0xF4 && c > 0x8F) return false;  // > U+10FFFF
    }
  }
  return true;
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const int len = seq_len(static_cast<unsigned char>(s[i]));
    if (len > 0 && i + len <= s.size() && valid_continuation(s, i, len, len)) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::size_t complete_utf8_prefix(std::string_view s) {
  // Only the last 3 bytes can start an incomplete sequence.
  const std::size_t from = s.size() > 3 ? s.size() - 3 : 0;
  for (std::size_t i = s.size(); i-- > from;) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const int len = seq_len(c);
    const std::size_t avail = s.size() - i;
    if (len > 1 && avail < static_cast<std::size_t>(len) && valid_continuation(s, i, len, avail))
      return i;  // a valid start, cut short: hold it back
    return s.size();
  }
  return s.size();
}

TextDecoder::TextDecoder(std::vector<std::string> stops, bool include_stop)
    : stops_(std::move(stops)), include_stop_(include_stop) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

std::string TextDecoder::release(std::size_t n) {
  std::string out = valid_utf8(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string TextDecoder::push(std::string_view bytes, bool stops_armed) {
  if (stopped_) return "";
  pending_.append(bytes);
  if (!stops_armed) return release(complete_utf8_prefix(pending_));
  // The earliest stop string wins (the longest of those starting there).
  std::size_t hit = std::string::npos, len = 0;
  for (const auto& s : stops_) {
    const std::size_t at = pending_.find(s);
    if (at < hit || (at == hit && at != std::string::npos && s.size() > len)) {
      hit = at;
      len = s.size();
    }
  }
  if (hit != std::string::npos) {
    stopped_ = true;
    std::string out = release(include_stop_ ? hit + len : hit);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of a stop string.
  std::size_t keep = 0;
  for (const auto& s : stops_)
    for (std::size_t k = std::min(s.size() - 1, pending_.size()); k > keep; --k)
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
  std::size_t n = pending_.size() - keep;
  n = complete_utf8_prefix(std::string_view(pending_).substr(0, n));
  return release(n);
}

std::string TextDecoder::flush() {
  if (stopped_) return "";
  return release(pending_.size());
}

}  // namespace prima::server
