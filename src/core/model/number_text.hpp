// The one way numbers are written in messages: the shortest text that reads
// back as the same double ("2.143", not "2.1430000000000007"; "1000000", not
// "1e+06"), by {fmt}'s shortest round-trip form.
#pragma once

#include <string>

namespace retrystorm {

std::string number_text(double v);

}  // namespace retrystorm
