// Server-sent events for streaming responses (see sse.h).
#include "server/sse.h"

#include <chrono>

namespace prima::server {
namespace {

struct SseState {
  EngineBridge* bridge = nullptr;
  Submitted sub;
  std::unique_ptr<StreamFormatter> fmt;
  bool opened = false;
  bool ended = false;  // the engine's end was written (or taken)
  std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();
  std::vector<StreamToken> toks;
};

}  // namespace

std::string sse_data(const std::string& payload) {
  return "data: " + payload + "\n\n";
}

void stream_sse(httplib::Response& res, EngineBridge* bridge, Submitted sub,
                std::unique_ptr<StreamFormatter> fmt) {
  auto st = std::make_shared<SseState>();
  st->bridge = bridge;
  st->sub = std::move(sub);
  st->fmt = std::move(fmt);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st](std::size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& s) {
          return s.empty() || sink.write(s.data(), s.size());
        };
        if (!st->opened) {
          st->opened = true;
          if (!write(st->fmt->open())) return false;
        }
        std::optional<StreamEnd> end;
        st->toks.clear();
        if (!st->sub.stream->wait(&st->toks, &end, std::chrono::milliseconds(50))) {
          // Nothing new (e.g. queued): a comment line every second finds a client that went
          // away (the write fails) without waiting for the first token.
          const auto now = std::chrono::steady_clock::now();
          if (now - st->last_write >= std::chrono::seconds(1)) {
            st->last_write = now;
            if (!write(": keep-alive\n\n")) return false;
          }
          return !sink.is_writable || sink.is_writable();
        }
        st->last_write = std::chrono::steady_clock::now();
        if (!st->toks.empty() && !write(st->fmt->tokens(st->toks))) return false;
        if (end) {
          st->ended = true;
          if (!write(st->fmt->close(*end))) return false;
          sink.done();
        }
        return true;
      },
      [st](bool /*success*/) {
        // The response is over: written in full, or the client went away first.
        if (!st->ended) st->bridge->cancel(st->sub.id, "client disconnected");
        st->sub.slot.reset();
      });
}

}  // namespace prima::server
