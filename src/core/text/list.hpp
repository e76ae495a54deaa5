// Comma-separated lists in scenario keys and options ("30, 60, 120",
// "0d19:40 dead, 1d09:40 429:0.55"): one way to cut them into items.
#pragma once

#include <string_view>
#include <vector>

namespace retrystorm::text {

// The items of `text` separated by `separator`, each without the spaces and
// tabs around it. An empty item between two separators stays (a caller says
// whether one is allowed); an empty text has none, and a separator at the end
// starts none ("30,60," is two items, as std::getline has always cut the
// keys). The views point into `text`.
std::vector<std::string_view> list_items(std::string_view text, char separator = ',');

}  // namespace retrystorm::text
