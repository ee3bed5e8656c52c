// Incremental server-sent-events parser (see sse_parser.h).
#include "loadgen/sse_parser.h"

namespace prima::loadgen {

void SseParser::feed(std::string_view bytes) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') {  // the LF of a CRLF split across (or within) feeds
        start = i + 1;
        continue;
      }
    }
    if (c != '\n' && c != '\r') continue;
    if (partial_.empty()) {
      line(bytes.substr(start, i - start));
    } else {
      partial_.append(bytes.substr(start, i - start));
      line(partial_);
      partial_.clear();
    }
    after_cr_ = c == '\r';
    start = i + 1;
  }
  if (start < bytes.size()) partial_.append(bytes.substr(start));
}

void SseParser::finish() {
  if (!partial_.empty()) {
    std::string l = std::move(partial_);
    partial_.clear();
    line(l);
  }
  dispatch();
}

void SseParser::line(std::string_view l) {
  if (l.empty()) {
    dispatch();
    return;
  }
  if (l.front() == ':') {
    ++comments_;
    return;
  }
  std::string_view field = l, value;
  if (auto colon = l.find(':'); colon != std::string_view::npos) {
    field = l.substr(0, colon);
    value = l.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) cur_.data.push_back('\n');
    cur_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    cur_.event.assign(value);
  } else if (field == "id") {
    cur_.id.assign(value);
  }
}

void SseParser::dispatch() {
  if (has_data_) {
    ++events_;
    on_event_(cur_);
  }
  cur_ = SseEvent{};
  has_data_ = false;
}

}  // namespace prima::loadgen
