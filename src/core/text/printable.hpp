// Text from outside (a log, a path, a scenario name) made safe to show.
#pragma once

#include <string>
#include <string_view>

namespace retrystorm {

// Log text made safe for a terminal: control characters, C1 controls and
// bytes that are not UTF-8 become escapes ("\n", "\t", "\x1b"); the rest is
// kept. Every message and text report that shows text from a log or a path
// goes through this.
std::string printable(std::string_view text);

// The first n bytes of text and "..." when it is longer: a message or an
// answer that quotes a value from outside stays short whatever was sent. The
// cut falls between characters, never inside one's UTF-8 bytes.
inline std::string clip(std::string_view text, size_t n = 200) {
  if (text.size() <= n) return std::string(text);
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return std::string(text.substr(0, n)) + "...";
}

}  // namespace retrystorm
