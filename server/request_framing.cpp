// Request framing (see request_framing.h).
#include "server/request_framing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace prima::server {
namespace {

using State = Framing::State;

State fail(Framing* f, int status, std::string message) {
  f->state = State::kError;
  f->status = status;
  f->message = std::move(message);
  return f->state;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Decimal digits only, at most 18 of them (no sign, no spaces inside, no overflow).
bool parse_decimal(std::string_view s, std::size_t* out) {
  if (s.empty() || s.size() > 18) return false;
  std::size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::size_t>(c - '0');
  }
  *out = v;
  return true;
}

// A chunk-size line: hex digits, then optionally ";extension".
bool parse_chunk_size(std::string_view line, std::size_t* out) {
  line = trim(line.substr(0, line.find(';')));
  if (line.empty() || line.size() > 15) return false;
  std::size_t v = 0;
  for (char c : line) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    v = v * 16 + static_cast<std::size_t>(d);
  }
  *out = v;
  return true;
}

// Reads the request line and headers once they are all there.
State frame_headers(std::string_view b, const FramingLimits& lim, Framing* f) {
  if (f->path.empty()) {
    const auto eol = b.find('\n');
    if (eol != std::string_view::npos) {
      const std::string_view line = b.substr(0, eol);
      const auto sp1 = line.find(' ');
      const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      if (sp2 != std::string_view::npos) {
        std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
        f->path = std::string(target.substr(0, std::min(target.find('?'), std::size_t{2048})));
      }
    }
  }
  const auto crlf = b.find("\r\n\r\n");
  const auto lf = b.find("\n\n");
  std::size_t end = std::string_view::npos;
  if (crlf != std::string_view::npos) end = crlf + 4;
  if (lf != std::string_view::npos && lf + 2 < end) end = lf + 2;
  if (end == std::string_view::npos ? b.size() > lim.max_header_bytes : end > lim.max_header_bytes)
    return fail(f, 431,
                fmt::format("the request line and headers are larger than the limit of {} bytes",
                            lim.max_header_bytes));
  if (end == std::string_view::npos) return f->state = State::kNeedHeaders;
  f->header_bytes = end;

  bool has_length = false, has_te = false;
  std::size_t pos = b.find('\n') + 1;
  while (pos < end) {
    std::size_t nl = b.find('\n', pos);
    const std::string_view line = trim(b.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // httplib refuses it later
    const std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      std::size_t n = 0;
      if (!parse_decimal(value, &n))
        return fail(f, 400,
                    fmt::format("Content-Length '{}' is not a byte count",
                                std::string(value.substr(0, 40))));
      if (has_length && n != f->content_length)
        return fail(f, 400, "the request has two Content-Length headers that disagree");
      has_length = true;
      f->content_length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
      if (!iequals(value, "chunked"))
        return fail(f, 501,
                    fmt::format("Transfer-Encoding '{}' is not supported (only 'chunked')",
                                std::string(value.substr(0, 40))));
      has_te = true;
    } else if (iequals(name, "Expect") && iequals(value, "100-continue")) {
      f->expect_continue = true;
    }
  }
  if (has_length && has_te)
    return fail(f, 400, "the request has both Content-Length and Transfer-Encoding");
  const auto too_large = [&] {
    return fail(f, 413,
                fmt::format("the request body is larger than the limit of {} bytes "
                            "(--max-body-bytes)",
                            lim.max_body_bytes));
  };
  if (has_length && f->content_length > lim.max_body_bytes) return too_large();
  f->chunked = has_te;
  f->no_length = !has_length && !has_te;
  f->chunk_pos = end;
  return f->state = State::kNeedBody;
}

}  // namespace

State frame_request(std::string_view b, const FramingLimits& lim, Framing* f) {
  if (f->state == State::kComplete || f->state == State::kError) return f->state;
  if (f->state == State::kNeedHeaders && frame_headers(b, lim, f) != State::kNeedBody)
    return f->state;
  if (!f->chunked) {
    f->request_bytes = f->header_bytes + f->content_length;
    return f->state = b.size() >= f->request_bytes ? State::kComplete : State::kNeedBody;
  }
  // Chunked: size line, data, CRLF ... "0", trailer lines, blank line.
  while (true) {
    const std::size_t pos = f->chunk_pos;
    const auto nl = b.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (b.size() - pos > 4096)
        return fail(f, 400, "a chunk-size or trailer line is longer than 4096 bytes");
      return f->state = State::kNeedBody;
    }
    const std::string_view line = b.substr(pos, nl - pos);
    if (f->in_trailers) {
      f->chunk_pos = nl + 1;
      if (trim(line).empty()) {
        f->request_bytes = nl + 1;
        return f->state = State::kComplete;
      }
      if (f->chunk_pos - f->trailer_start > lim.max_header_bytes)
        return fail(f, 431, "the chunked body's trailers are too large");
      continue;
    }
    std::size_t size = 0;
    if (!parse_chunk_size(line, &size))
      return fail(f, 400, "malformed chunk size in the chunked request body");
    if (size > lim.max_body_bytes || f->chunk_total + size > lim.max_body_bytes)
      return fail(f, 413,
                  fmt::format("the request body is larger than the limit of {} bytes "
                              "(--max-body-bytes)",
                              lim.max_body_bytes));
    if (size == 0) {
      f->in_trailers = true;
      f->chunk_pos = f->trailer_start = nl + 1;
      continue;
    }
    const std::size_t data = nl + 1;
    if (b.size() < data + size + 2) return f->state = State::kNeedBody;
    if (b[data + size] != '\r' || b[data + size + 1] != '\n')
      return fail(f, 400, "a chunk of the chunked request body is not followed by CRLF");
    f->chunk_total += size;
    f->chunk_pos = data + size + 2;
    // Framing bytes count too: a body of one-byte chunks must not carry six times the limit.
    if (f->chunk_pos - f->header_bytes > 2 * lim.max_body_bytes + 65536)
      return fail(f, 413, "the chunked request body's framing is larger than twice the body limit");
  }
}

void declare_empty_body(std::string* buf, Framing* f) {
  if (f->state != State::kComplete || !f->no_length || f->header_bytes < 2) return;
  const std::string_view b(*buf);
  bool body_method = false;
  for (std::string_view m : {"POST ", "PUT ", "PATCH "}) body_method |= b.substr(0, m.size()) == m;
  if (!body_method) return;
  const bool crlf = b.substr(f->header_bytes - 2, 2) == "\r\n" && f->header_bytes >= 4 &&
                    b.substr(f->header_bytes - 4, 2) == "\r\n";
  const std::string line = crlf ? "Content-Length: 0\r\n" : "Content-Length: 0\n";
  buf->insert(f->header_bytes - (crlf ? 2 : 1), line);
  f->header_bytes += line.size();
  f->request_bytes += line.size();
  f->no_length = false;
}

}  // namespace prima::server
