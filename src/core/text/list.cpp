#include "text/list.hpp"

namespace retrystorm::text {

std::vector<std::string_view> list_items(std::string_view text, char separator) {
  std::vector<std::string_view> items;
  if (text.empty()) return items;
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  for (size_t at = 0;;) {
    size_t end = text.find(separator, at);
    std::string_view item = text.substr(at, end == std::string_view::npos ? end : end - at);
    while (!item.empty() && blank(item.front())) item.remove_prefix(1);
    while (!item.empty() && blank(item.back())) item.remove_suffix(1);
    items.push_back(item);
    if (end == std::string_view::npos || end + 1 == text.size()) return items;
    at = end + 1;
  }
}

}  // namespace retrystorm::text
