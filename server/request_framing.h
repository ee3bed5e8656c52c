// Request framing: where one HTTP/1.1 request ends in the bytes a connection has received, so
// that a request reaches a worker thread only once it is whole (a slow client holds a socket,
// never a thread), and the limits hold before anything is parsed or tokenized: the size of
// the request line and headers (431), the body's declared or chunked size (413, whichever
// framing carries it), and framing a server must refuse (400: a Content-Length that is not a
// number or disagrees with another, Content-Length beside Transfer-Encoding, a
// Transfer-Encoding other than chunked, a malformed chunk).
//
// frame_request() resumes: call it again with the same Framing when more bytes arrived (the
// headers are parsed once, a chunked body is scanned from where the last call stopped, so a
// body that trickles in costs linear time). It does not validate what httplib parses later
// (method, header syntax); it finds the end and checks the sizes.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace prima::server {

struct FramingLimits {
  std::size_t max_header_bytes = 32 * 1024;  // request line + headers
  std::size_t max_body_bytes = 1 << 20;      // decoded body (chunked: the sum of the chunks)
};

struct Framing {
  enum class State { kNeedHeaders, kNeedBody, kComplete, kError };
  State state = State::kNeedHeaders;
  std::size_t header_bytes = 0;   // where the headers end (after the blank line), once known
  std::size_t request_bytes = 0;  // kComplete: the whole request's length
  bool expect_continue = false;   // "Expect: 100-continue" (the client waits for a 100)
  int status = 0;                 // kError: 400, 413, 431, 501
  std::string message;            // kError: what is wrong, for the error body
  std::string path;               // the request target's path, once the request line is read
  bool no_length = false;         // neither Content-Length nor Transfer-Encoding: no body

  // Resume state (kNeedBody).
  bool chunked = false;
  std::size_t content_length = 0;
  std::size_t chunk_pos = 0;      // next chunk-size line (or trailer line)
  std::size_t chunk_total = 0;    // decoded body bytes so far
  bool in_trailers = false;       // the last chunk was read; trailer lines until a blank one
  std::size_t trailer_start = 0;  // where the trailer lines begin
};

// Frames the request at the start of `bytes`, resuming from *f (a default Framing for a new
// request; `bytes` must extend the bytes of the previous call). Returns f->state.
Framing::State frame_request(std::string_view bytes, const FramingLimits& lim, Framing* f);

// A whole request (kComplete) that declares no body length has none (RFC 9112, 6.3); cpp-httplib
// would instead wait for a POST's body until the connection closes or its read timeout. For a
// POST, PUT or PATCH this writes "Content-Length: 0" into its headers in `buf` (which starts
// with the request) and moves f's offsets past it.
void declare_empty_body(std::string* buf, Framing* f);

}  // namespace prima::server
