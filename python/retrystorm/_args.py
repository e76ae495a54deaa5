"""Arguments checked as the command line checks its flags, before they reach
the C++ core: a whole number is an int (or a float or numpy number without a
fraction), a number is any real number, and neither is a bool. A fraction
where a whole number belongs, a text where numbers belong, or a value beyond
what the core's types hold is a ValueError (TypeError for the wrong type)
naming the argument, where int() truncated it silently or pybind11 answered
with its own signature. The core then checks each value's own range."""

import math
import numbers

# What the core's int and unsigned arguments hold.
INT_MAX = 2**31 - 1


def shown(value, limit=40):
    """A value's repr for a message, shortened past `limit` characters (an
    int of 10**400 would fill the screen; past Python's 4300 digits it has no
    repr at all)."""
    try:
        text = repr(value)
    except ValueError:
        if isinstance(value, numbers.Integral):
            return f"an integer of {int(value).bit_length()} bits"
        return f"a {type(value).__name__}"
    if len(text) <= limit:
        return text
    return f"{text[:limit - 12]}... ({len(text)} characters)"


def number(name, value):
    """A real number (NaN and infinity go on: the core names them)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: {shown(value)} is not a number")
    try:
        return float(value)
    except OverflowError:  # an int (or Fraction) past a double: say which argument
        raise ValueError(f"{name}: {shown(value)} is outside the range of numbers") from None


def optional_number(name, value):
    return None if value is None else number(name, value)


def whole(name, value, low=0, high=INT_MAX):
    """A whole number from low to high."""
    as_float = number(name, value)
    if not (math.isfinite(as_float) and as_float == math.floor(as_float) and
            low <= as_float <= high):
        raise ValueError(f"{name}: {shown(value)} must be a whole number from {low} to {high}")
    return int(as_float)


def optional_whole(name, value, low=0, high=INT_MAX):
    return None if value is None else whole(name, value, low, high)


def number_list(name, values):
    """Numbers: a list, tuple or array of them, or one number."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name}: give numbers, like [0.8, 1.0], not the text {values!r}")
    if isinstance(values, numbers.Real) and not isinstance(values, bool):
        return [number(name, values)]
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{name}: {values!r} is not a list of numbers") from None
    return [number(f"{name}[{i}]", v) for i, v in enumerate(items)]


def flag(name, value):
    """True or False: a bool, numpy's too, or the whole numbers 1 and 0 (any
    other value is refused, where bool("no") would have been True)."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_" and type(value).__module__ == "numpy":
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{name}: {shown(value)} is not a flag; give True or False")
