// Numbers as text, both ways: the one reader of decimal numbers in text
// input, and the writers, by {fmt}.
#pragma once

#include <string>
#include <string_view>

namespace retrystorm {

// The one way numbers are written in messages: the shortest text that reads
// back as the same double ("2.143", not "2.1430000000000007"; "1000000", not
// "1e+06"), by {fmt}'s shortest round-trip form.
std::string number_text(double v);

// A decimal number as people write it ("12", "-0.5", "1e-3", "+2"): no hex,
// no "inf" or "nan", no spaces. The one number reader of text input.
enum class NumberText { ok, not_a_number, out_of_range };
NumberText parse_decimal(std::string_view text, double& out);

}  // namespace retrystorm

namespace retrystorm::text {

// "3.142" for (3.14159, 3): `digits` decimals, as printf's "%.*f" writes them.
std::string fixed_text(double v, int digits);

// "0.12" for (0.125, 2), "2.5" for (2.5, 3), "0" for (-0.0001, 3): "%.*f"
// (halves to even, as the double is exact), then trailing zeros and point
// dropped; never "-0". The form report figures are written in.
std::string trimmed_text(double v, int digits);

// "1.23e+06" for (1234567, 3), "0.1" for (0.1, 6): `digits` significant
// digits, as printf's "%.*g" writes them.
std::string general_text(double v, int digits);

// "0.13" for (0.125, 2), "2.5" for (2.5, 3), "0" for (-0.0001, 3): rounded to
// `digits` decimals, halves away from zero, then trailing zeros and point
// dropped; never "-0". The form scenario values are written in.
std::string decimal_text(double v, int digits);

// "8,730" for 8730.4, "-1,234,567" for -1234567: rounded to a whole number,
// thousands grouped by commas, as counts are written in English prose.
std::string grouped_text(double v);

}  // namespace retrystorm::text
