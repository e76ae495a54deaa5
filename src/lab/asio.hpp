// Boost.Asio as the lab includes it. Boost 1.74's awaitable.hpp uses
// std::exchange without including <utility> (fixed in later Boost); C++20
// enables that header, so <utility> comes first.
#pragma once

#include <utility>
// clang-format off
#include <boost/asio.hpp>
// clang-format on
