// Error messages that any sink can take.
#pragma once

#include <string>
#include <string_view>

namespace vkd {

// `text` with every byte that is not printable ASCII written as \xNN. Our error
// messages quote bytes from outside (a blob's op names, environment values); a
// log sink or a Python str must be able to take any message, whatever those bytes are.
inline std::string printable_ascii(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
}

}  // namespace vkd
