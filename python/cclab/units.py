"""Units of the scenario schema: parse users' strings into integers, format them back.

* Rates → integer **bit/s**. Decimal SI: ``k`` = 10³, ``M`` = 10⁶, ``G`` = 10⁹.
  Accepted: ``bps``, ``kbps`` (also ``Kbps``), ``Mbps``, ``Gbps``, ``Tbps`` and the
  ``bit/s``, ``kbit/s``, ``Mbit/s``, ``Gbit/s``, ``Tbit/s`` spellings.
  Units are case-sensitive: ``MBps`` would be mega*bytes* per second and is
  rejected rather than guessed.
* Durations → integer **nanoseconds**: ``ns``, ``us`` (or ``µs``), ``ms``, ``s``,
  ``min``, ``h``.
* Sizes → integer **bytes**: ``B`` (also ``byte``, ``bytes``); decimal ``KB``
  (also ``kB``) = 1000, ``MB`` = 10⁶, ``GB`` = 10⁹; binary ``KiB`` = 1024,
  ``MiB`` = 1024², ``GiB`` = 1024³.
* Buffers: a size, or a packet count (``64pkts``, ``64packets``, ``1pkt``), or a
  multiple of the bandwidth-delay product (``1.75bdp``), see :func:`parse_buffer`.
* Probabilities: a number in [0, 1) or a percentage string (``"0.5%"``).

Arithmetic is exact (``decimal`` digits times the unit as a rational), so
``"0.1s"`` is exactly 100 000 000 ns and ``"1.0000000000000000000000000001s"``
is not a whole number of ns. A value that is not a whole number of the base
unit (``"1.5ns"``, ``"0.5B"``, ``"1.5pkts"``) is an error, never rounded;
numbers of more than 40 significant digits or 40 decimal places are refused. A bare number (``80``) is an error
too: ``80`` of what? Negative values, NaN and infinity are errors; zero is an
error wherever it makes no sense (``allow_zero=False``).

Every error is a :class:`~cclab.errors.ScenarioError` naming the field, the
value as given and the accepted units.

Parsed once: :class:`Rate`, :class:`Duration`, :class:`Size`, :class:`Buffer`
and :class:`Percent` are the strings users wrote (they compare, hash, print
and serialise as that string) carrying the exact parsed value (``.bps``,
``.ns``, ``.bytes``, ``.spec``, ``.p``). The scenario models hold these, so
resolution reads ``scenario.duration.ns`` instead of parsing the text again.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Literal

from .errors import ScenarioError, show_value

__all__ = [
    "Buffer",
    "BufferSpec",
    "Duration",
    "Percent",
    "Rate",
    "Size",
    "parse_rate",
    "parse_duration",
    "parse_size",
    "parse_buffer",
    "parse_probability",
    "format_rate",
    "format_duration",
    "format_size",
    "RATE_UNITS",
    "DURATION_UNITS",
    "SIZE_UNITS",
]

RATE_UNITS: dict[str, int] = {
    "bps": 1, "kbps": 10**3, "Kbps": 10**3, "Mbps": 10**6, "Gbps": 10**9, "Tbps": 10**12,
    "bit/s": 1, "kbit/s": 10**3, "Mbit/s": 10**6, "Gbit/s": 10**9, "Tbit/s": 10**12,
}
DURATION_UNITS: dict[str, int] = {
    "ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9,
}
SIZE_UNITS: dict[str, int] = {
    "B": 1, "byte": 1, "bytes": 1,
    "KB": 10**3, "kB": 10**3, "MB": 10**6, "GB": 10**9,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30,
}
PACKET_UNITS = ("pkt", "pkts", "packet", "packets")
BDP_UNITS = ("bdp", "BDP")

_RATE_ALLOWED = 'expected a number followed by bps, kbps, Mbps or Gbps (e.g. "80Mbps")'
_DURATION_ALLOWED = 'expected a number followed by ns, us, ms, s, min or h (e.g. "25ms")'
_SIZE_ALLOWED = 'expected a number followed by B, KB, MB, GB (×1000) or KiB, MiB, GiB (×1024) (e.g. "100KB")'
_BUFFER_ALLOWED = (
    'expected a size (e.g. "100KB", "64KiB", "1500B"), a packet count (e.g. "64pkts") '
    'or a multiple of the BDP (e.g. "1.75bdp")'
)

_NUMBER_UNIT = re.compile(r"^(?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*(?P<unit>\S*)$")


def _split(value: Any, field: str, kind: str, allowed: str) -> tuple[Decimal, str]:
    """Split ``"1.5Mbps"`` into ``(Decimal("1.5"), "Mbps")``; reject everything that is not that shape."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ScenarioError(field, value, f"{show_value(value)} is not {kind}", allowed)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ScenarioError(field, value, f"{show_value(value)} is not finite", allowed)
        raise ScenarioError(field, value, f"{show_value(value)} has no unit (a bare number is ambiguous)", allowed)
    text = value.strip()
    lowered = text.lower()
    if lowered.startswith("-"):
        raise ScenarioError(field, value, f"{show_value(value)} is negative", allowed)
    if lowered.lstrip("+").startswith(("nan", "inf")):
        raise ScenarioError(field, value, f"{show_value(value)} is not finite", allowed)
    match = _NUMBER_UNIT.match(text.lstrip("+"))
    if not match:
        raise ScenarioError(field, value, f"{show_value(value)} is not {kind}", allowed)
    try:
        number = Decimal(match["num"])
    except InvalidOperation:  # pragma: no cover - the regex only admits valid decimals
        raise ScenarioError(field, value, f"{show_value(value)} is not {kind}", allowed) from None
    if number.adjusted() > 24:  # beyond any rate, duration or size a simulation can use
        raise ScenarioError(field, value, f"{show_value(value)} is too large", allowed)
    _check_digits(number, value, field, allowed)
    if not match["unit"]:
        raise ScenarioError(field, value, f"{show_value(value)} has no unit (a bare number is ambiguous)", allowed)
    return number, match["unit"]


#: Most significant digits and decimal places a number in a scenario may have.
MAX_DIGITS = 40


def _check_digits(number: Decimal, value: Any, field: str, allowed: str) -> None:
    """Refuse numbers with more than :data:`MAX_DIGITS` significant digits or decimal places
    (exact arithmetic on them could take unbounded time; no unit needs them)."""
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    while len(digits) > 1 and digits[-1] == 0:  # trailing zeros are not significant
        digits, exponent = digits[:-1], exponent + 1
    if len(digits) > MAX_DIGITS or exponent < -MAX_DIGITS:
        raise ScenarioError(field, value, f"{show_value(value)} has more digits than cclab reads "
                            f"(at most {MAX_DIGITS} significant digits and {MAX_DIGITS} decimal places)", allowed)


def _whole(value: Any, field: str, amount: Decimal | Fraction, base: str, allowed: str) -> int:
    exact = Fraction(amount)
    if exact.denominator != 1:
        raise ScenarioError(field, value, f"{show_value(value)} is not a whole number of {base}", allowed)
    return int(exact)


def _quantity(value: Any, field: str, kind: str, units: dict[str, int], base: str, allowed: str,
              allow_zero: bool) -> int:
    number, unit = _split(value, field, kind, allowed)
    if unit not in units:
        raise ScenarioError(field, value, f"{show_value(value)} is not {kind} (unknown unit {unit!r})", allowed)
    result = _whole(value, field, Fraction(number) * units[unit], base, allowed)
    if result >= 2**63:
        raise ScenarioError(field, value, f"{show_value(value)} is too large", allowed)
    if result == 0 and not allow_zero:
        raise ScenarioError(field, value, f"{show_value(value)} must be greater than zero", allowed)
    return result


def parse_rate(value: Any, field: str = "rate", *, allow_zero: bool = False) -> int:
    """``"80Mbps"`` → ``80_000_000`` (bit/s). Zero is an error unless ``allow_zero``."""
    return _quantity(value, field, "a rate", RATE_UNITS, "bit/s", _RATE_ALLOWED, allow_zero)


def parse_duration(value: Any, field: str = "duration", *, allow_zero: bool = True) -> int:
    """``"25ms"`` → ``25_000_000`` (ns). Zero is accepted unless ``allow_zero=False``."""
    return _quantity(value, field, "a duration", DURATION_UNITS, "ns", _DURATION_ALLOWED, allow_zero)


_START_OFFSET_ALLOWED = ('expected a multiple of each flow\'s base RTT (e.g. "1rtt", "0.5rtt"), a duration '
                         '(e.g. "5ms") or 0 to start every flow exactly at its start time')


def parse_start_offset(value: Any, field: str = "start_offset") -> tuple[Literal["rtt", "ns"], Fraction]:
    """The window flows' random start offsets are drawn from (``start_offset``):
    ``"1rtt"`` → ``("rtt", 1)`` (a multiple of each flow's base RTT), ``"5ms"`` →
    ``("ns", 5_000_000)``, ``0`` / ``"0"`` / ``"0s"`` → ``("ns", 0)`` (no offset)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return "ns", Fraction(0)
    if isinstance(value, str) and value.strip() == "0":
        return "ns", Fraction(0)
    number, unit = _split(value, field, "a start-offset window", _START_OFFSET_ALLOWED)
    if unit.lower() == "rtt":
        if Fraction(number) > 1000:
            raise ScenarioError(field, value, f"{show_value(value)} is too large", "expected at most 1000rtt")
        return "rtt", Fraction(number)
    if unit not in DURATION_UNITS:
        raise ScenarioError(field, value, f"{show_value(value)} is not a start-offset window (unknown unit {unit!r})",
                            _START_OFFSET_ALLOWED)
    return "ns", Fraction(_quantity(value, field, "a duration", DURATION_UNITS, "ns", _START_OFFSET_ALLOWED, True))


def parse_size(value: Any, field: str = "size", *, allow_zero: bool = False) -> int:
    """``"1.5MB"`` → ``1_500_000``, ``"64KiB"`` → ``65_536`` (bytes). Zero is an error unless ``allow_zero``."""
    return _quantity(value, field, "a size", SIZE_UNITS, "bytes", _SIZE_ALLOWED, allow_zero)


@dataclass(frozen=True)
class BufferSpec:
    """A parsed buffer: ``kind`` ``"bytes"`` or ``"packets"`` (``amount`` an int) or
    ``"bdp"`` (``amount`` a :class:`~decimal.Decimal` multiple of the bandwidth-delay product)."""

    kind: Literal["bytes", "packets", "bdp"]
    amount: int | Decimal


def parse_buffer(value: Any, field: str = "buffer") -> BufferSpec:
    """``"100KB"`` → bytes, ``"64pkts"`` → packets, ``"1.75bdp"`` → BDP multiple. Zero is an error."""
    number, unit = _split(value, field, "a buffer size", _BUFFER_ALLOWED)
    if number == 0:
        raise ScenarioError(field, value, f"{show_value(value)} must be greater than zero", _BUFFER_ALLOWED)
    if unit in BDP_UNITS:
        return BufferSpec("bdp", number)
    if unit in PACKET_UNITS:
        return BufferSpec("packets", _whole(value, field, number, "packets", _BUFFER_ALLOWED))
    if unit in SIZE_UNITS:
        return BufferSpec("bytes", _whole(value, field, Fraction(number) * SIZE_UNITS[unit], "bytes", _BUFFER_ALLOWED))
    raise ScenarioError(field, value, f"{show_value(value)} is not a buffer size (unknown unit {unit!r})",
                        _BUFFER_ALLOWED)


class Rate(str):
    """A rate as written (``"80Mbps"``) with its exact value ``bps`` (bit/s)."""

    bps: int

    @classmethod
    def parse(cls, value: Any, field: str = "rate", *, allow_zero: bool = False) -> Rate:
        if type(value) is cls and (allow_zero or value.bps):
            return value
        return _typed(cls, value, "bps", parse_rate(value, field, allow_zero=allow_zero))


class Duration(str):
    """A duration as written (``"25ms"``) with its exact value ``ns`` (nanoseconds)."""

    ns: int

    @classmethod
    def parse(cls, value: Any, field: str = "duration", *, allow_zero: bool = True) -> Duration:
        if type(value) is cls and (allow_zero or value.ns):
            return value
        return _typed(cls, value, "ns", parse_duration(value, field, allow_zero=allow_zero))


class Size(str):
    """A size as written (``"100KB"``) with its exact value ``bytes``."""

    bytes: int

    @classmethod
    def parse(cls, value: Any, field: str = "size", *, allow_zero: bool = False) -> Size:
        if type(value) is cls and (allow_zero or value.bytes):
            return value
        return _typed(cls, value, "bytes", parse_size(value, field, allow_zero=allow_zero))


class Buffer(str):
    """A buffer as written (``"1.75bdp"``, ``"64pkts"``, ``"100KB"``) with its :class:`BufferSpec` ``spec``."""

    spec: BufferSpec

    @classmethod
    def parse(cls, value: Any, field: str = "buffer") -> Buffer:
        if type(value) is cls:
            return value
        return _typed(cls, value, "spec", parse_buffer(value, field))


class Percent(str):
    """A probability written as a percentage (``"1%"``) with its value ``p`` (a float in [0, 1])."""

    p: float

    @classmethod
    def parse(cls, value: str, field: str = "p", **options: Any) -> Percent:
        if type(value) is cls and not options:
            return value
        return _typed(cls, value, "p", parse_probability(value, field, **options))


def _typed(cls: type, text: str, attribute: str, value: Any) -> Any:
    out = cls(text)
    setattr(out, attribute, value)
    return out


def parse_probability(value: Any, field: str = "p", *, upper: float = 1.0, upper_inclusive: bool = False,
                      lower_inclusive: bool = True) -> float:
    """A probability: a number (``0.01``) or a percentage string (``"1%"``), checked against its range.

    The default range is [0, 1); ``upper_inclusive``/``lower_inclusive`` change the ends.
    """
    interval = f"{'[' if lower_inclusive else '('}0, {upper:g}{']' if upper_inclusive else ')'}"
    allowed = f'expected a number in {interval} (e.g. 0.01) or a percentage (e.g. "1%")'
    if isinstance(value, bool):
        raise ScenarioError(field, value, f"{show_value(value)} is not a probability", allowed)
    if isinstance(value, str):
        text = value.strip()
        if not text.endswith("%"):
            raise ScenarioError(field, value, f"{show_value(value)} is not a probability", allowed)
        try:
            percent = Decimal(text[:-1].strip())
        except InvalidOperation:
            raise ScenarioError(field, value, f"{show_value(value)} is not a probability", allowed) from None
        if not percent.is_finite():
            raise ScenarioError(field, value, f"{show_value(value)} is not finite", allowed)
        _check_digits(percent, value, field, allowed)
        exact = percent.scaleb(-2)
        number = float(exact)
        if exact != 0 and Decimal(repr(number)) != exact:
            raise ScenarioError(field, value, f"{show_value(value)} cannot be represented exactly "
                                f"(it would be rounded to {number!r})", allowed)
    elif isinstance(value, int) and abs(value) > 2**53:
        raise ScenarioError(field, value, f"{show_value(value)} is out of range", allowed)
    elif isinstance(value, (int, float)):
        number = float(value)
    else:
        raise ScenarioError(field, value, f"{show_value(value)} is not a probability", allowed)
    if not math.isfinite(number):
        raise ScenarioError(field, value, f"{show_value(value)} is not finite", allowed)
    too_low = number < 0 or (number == 0 and not lower_inclusive)
    too_high = number > upper or (number == upper and not upper_inclusive)
    if too_low or too_high:
        raise ScenarioError(field, value, f"{show_value(value)} is out of range", allowed)
    return number


# --- formatting (for tables, figures and logs) -------------------------------------------------

def _trim(number: float) -> str:
    text = f"{number:.4g}"
    if "e" in text:  # only for values outside the unit ladder; keep them readable
        text = f"{number:.0f}"
    return text


def _format(value: float, ladder: list[tuple[float, str]]) -> str:
    if value == 0:
        return f"0{ladder[-1][1]}"
    for factor, unit in ladder:
        if abs(value) >= factor:
            return f"{_trim(value / factor)}{unit}"
    factor, unit = ladder[-1]
    return f"{_trim(value / factor)}{unit}"


def format_rate(bps: float) -> str:
    """``80_000_000`` → ``"80Mbps"``; ``5_030_000`` → ``"5.03Mbps"`` (4 significant digits)."""
    return _format(bps, [(1e12, "Tbps"), (1e9, "Gbps"), (1e6, "Mbps"), (1e3, "kbps"), (1, "bps")])


def format_duration(ns: float) -> str:
    """``25_000_000`` → ``"25ms"``; ``1_500_000_000`` → ``"1.5s"`` (seconds are the largest unit)."""
    return _format(ns, [(1e9, "s"), (1e6, "ms"), (1e3, "us"), (1, "ns")])


def format_size(nbytes: float) -> str:
    """``437_500`` → ``"437.5KB"``; ``1500`` → ``"1500B"`` (decimal units, bytes below 10 kB)."""
    if abs(nbytes) < 1e4:
        return f"{_trim(nbytes)}B"
    return _format(nbytes, [(1e9, "GB"), (1e6, "MB"), (1e3, "KB")])
