// The little HTTP/1.1 the lab speaks: a request or response head read from
// a Boost.Asio stream buffer (async_read_until "\r\n\r\n").
#pragma once

#include <boost/asio/streambuf.hpp>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "text/ascii.hpp"

namespace retrystorm::lab {

struct HttpHead {
  std::string first_line;
  std::map<std::string, std::string, std::less<>> headers;  // names in lower case
  // Looked up once per attempt: no copy, no key built.
  const std::string& header(std::string_view name) const {
    static const std::string none;
    auto it = headers.find(name);
    return it == headers.end() ? none : it->second;
  }
  // The status of a response head ("HTTP/1.1 503 ..." → 503), 0 if none.
  int status() const {
    auto sp = first_line.find(' ');
    return sp == std::string::npos ? 0 : std::atoi(first_line.c_str() + sp + 1);
  }
};

// Takes the head's `n` bytes out of `buffer` (what follows stays there).
inline HttpHead parse_head(boost::asio::streambuf& buffer, size_t n) {
  std::string text(boost::asio::buffers_begin(buffer.data()),
                   boost::asio::buffers_begin(buffer.data()) + static_cast<std::ptrdiff_t>(n));
  buffer.consume(n);
  HttpHead h;
  size_t pos = 0;
  bool first = true;
  while (pos < text.size()) {
    size_t eol = text.find("\r\n", pos);
    if (eol == std::string::npos || eol == pos) break;
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 2;
    if (first) {
      h.first_line = line;
      first = false;
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = text::lower_ascii(line.substr(0, colon));
    size_t v = line.find_first_not_of(" \t", colon + 1);
    h.headers[name] = v == std::string::npos ? "" : line.substr(v);
  }
  return h;
}

}  // namespace retrystorm::lab
