// UTF-8 decoding that never fails (invalid bytes become single "other" characters), Unicode
// categories from ICU (\p{L}, \p{N}, White_Space) and GPT-2's byte <-> code point mapping.
// Pure functions over immutable tables; thread-safe.
#include <unicode/uchar.h>

#include <array>

#include "backends/real/tokenizer_internal.h"

namespace prima::real::tok {

std::vector<Cp> utf8_chars(std::string_view s) {
  std::vector<Cp> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    std::uint32_t len = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if (c < 0x80) {
      len = 1, cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    }
    bool ok = len > 0 && i + len <= n;
    for (std::uint32_t k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) {
        ok = false;
      } else {
        cp = (cp << 6) | (p[i + k] & 0x3F);
      }
    }
    if (ok && len > 1 && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) {
      ok = false;
    }
    if (!ok) {
      out.push_back({kInvalidCp, static_cast<std::uint32_t>(i), 1});
      ++i;
    } else {
      out.push_back({cp, static_cast<std::uint32_t>(i), len});
      i += len;
    }
  }
  return out;
}

std::string utf8_encode(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

bool is_letter(char32_t cp) {
  if (cp == kInvalidCp) return false;
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  const auto t = u_charType(static_cast<UChar32>(cp));
  return t == U_UPPERCASE_LETTER || t == U_LOWERCASE_LETTER || t == U_TITLECASE_LETTER ||
         t == U_MODIFIER_LETTER || t == U_OTHER_LETTER;
}

bool is_number(char32_t cp) {
  if (cp == kInvalidCp) return false;
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const auto t = u_charType(static_cast<UChar32>(cp));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

bool is_whitespace(char32_t cp) {
  if (cp == kInvalidCp) return false;
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return u_isUWhiteSpace(static_cast<UChar32>(cp));
}

namespace {

struct ByteMap {
  std::array<char32_t, 256> to_cp{};
  std::array<int, 68> moved{};  // byte of code point 256 + i
  ByteMap() {
    // Printable bytes keep their value; the others are moved, in order, to 256, 257, ...
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      if (printable) {
        to_cp[b] = static_cast<char32_t>(b);
      } else {
        moved[next - 256] = b;
        to_cp[b] = next++;
      }
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace

char32_t byte_to_cp(std::uint8_t b) {
  return byte_map().to_cp[b];
}

int cp_to_byte(char32_t cp) {
  // Image: printable bytes map to themselves; 256..323 are the moved ones.
  if (cp < 256) {
    return byte_map().to_cp[cp] == cp ? static_cast<int>(cp) : -1;
  }
  if (cp < 256 + 68) return byte_map().moved[cp - 256];
  return -1;
}

}  // namespace prima::real::tok
