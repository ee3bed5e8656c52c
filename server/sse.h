// Server-sent events: streams one request's tokens as `data: ...\n\n` events through
// cpp-httplib's chunked content provider. An API supplies a StreamFormatter (what each event
// says); this file owns the pacing: wait for new tokens (50 ms at most), write them, and
// when the client has gone (a write fails or the socket is no longer writable) cancel the
// request in the engine ("client disconnected") and stop. While no token comes (a queued
// request), an SSE comment (": keep-alive") every second finds a client that went away.
// The admission slot is held until the response is released.
// Thread-safety: the provider runs on the handler thread that owns the response.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <vector>

#include "server/server_context.h"

namespace prima::server {

class StreamFormatter {
 public:
  virtual ~StreamFormatter() = default;
  // Events sent before the first token (e.g. OpenAI's role chunk); may be empty.
  virtual std::string open() { return ""; }
  virtual std::string tokens(const std::vector<StreamToken>& toks) = 0;
  // The closing events (finish reason, usage, [DONE], or an error event).
  virtual std::string close(const StreamEnd& e) = 0;
};

// "data: <payload>\n\n"
std::string sse_data(const std::string& payload);

void stream_sse(httplib::Response& res, EngineBridge* bridge, Submitted sub,
                std::unique_ptr<StreamFormatter> fmt);

}  // namespace prima::server
