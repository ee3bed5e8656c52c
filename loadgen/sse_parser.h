// Incremental parser for server-sent events (the text/event-stream format of the WHATWG HTML
// spec, as OpenAI and TGI stream): bytes are fed as they arrive, split anywhere (inside a
// line, inside a CRLF pair, inside a multi-byte character), and each complete event is handed
// to the callback when its terminating blank line arrives.
//
//   data: {"a":1}          one event whose data is {"a":1}
//   : keep-alive           a comment: counted, never an event
//   data: line 1           several data lines join with '\n'
//   data: line 2
//   event: x / id: 7       the event's name and id (kept; retry and unknown fields ignored)
//
// Lines end with "\n", "\r\n" or "\r". One space after the colon is dropped. An event with no
// data line is not dispatched (per the spec). A final event without its blank line is
// dispatched by finish(). "[DONE]" is plain data here; the caller gives it its meaning.
//
// Single-threaded: one parser per response; not thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace prima::loadgen {

struct SseEvent {
  std::string event;  // the "event:" field ("" = the default "message")
  std::string data;   // data lines joined with '\n'
  std::string id;
};

class SseParser {
 public:
  using OnEvent = std::function<void(const SseEvent&)>;
  explicit SseParser(OnEvent on_event) : on_event_(std::move(on_event)) {}

  // Feeds the next bytes of the stream.
  void feed(std::string_view bytes);
  // The stream ended: dispatches an event still waiting for its blank line.
  void finish();

  std::size_t events() const { return events_; }
  std::size_t comments() const { return comments_; }

 private:
  void line(std::string_view l);
  void dispatch();

  OnEvent on_event_;
  std::string partial_;    // the current line, not yet terminated
  bool after_cr_ = false;  // the last byte was '\r': a following '\n' belongs to it
  SseEvent cur_;
  bool has_data_ = false;
  std::size_t events_ = 0, comments_ = 0;
};

}  // namespace prima::loadgen
