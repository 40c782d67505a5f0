"""Unit parsing and formatting (cclab.units): exact integers, no guessing, one-line errors."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cclab.errors import ScenarioError
from cclab.units import (BufferSpec, format_duration, format_rate, format_size, parse_buffer, parse_duration,
                         parse_probability, parse_rate, parse_size)


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("80Mbps", 80_000_000),
        ("1Gbps", 1_000_000_000),
        ("500kbps", 500_000),
        ("500Kbps", 500_000),
        ("9600bps", 9_600),
        ("1.5Gbps", 1_500_000_000),
        ("2.5 Mbps", 2_500_000),
        ("10Mbit/s", 10_000_000),
        ("1e3Mbps", 1_000_000_000),
        ("0.1Mbps", 100_000),  # exact decimal arithmetic: not 99999.99…
    ],
)
def test_parse_rate(text: str, bps: int) -> None:
    assert parse_rate(text) == bps
    assert isinstance(parse_rate(text), int)


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("25ms", 25_000_000),
        ("60s", 60_000_000_000),
        ("1.5s", 1_500_000_000),
        ("500us", 500_000),
        ("500µs", 500_000),
        ("100ns", 100),
        ("2min", 120_000_000_000),
        ("0.1s", 100_000_000),
        ("0s", 0),
    ],
)
def test_parse_duration(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("100KB", 100_000),  # KB is decimal: 1000 bytes
        ("100kB", 100_000),
        ("1.5MB", 1_500_000),
        ("10MB", 10_000_000),
        ("64KiB", 65_536),  # KiB is binary: 1024 bytes
        ("1MiB", 1_048_576),
        ("1500B", 1_500),
        ("1500bytes", 1_500),
    ],
)
def test_parse_size(text: str, nbytes: int) -> None:
    assert parse_size(text) == nbytes


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("64pkts", BufferSpec("packets", 64)),
        ("64packets", BufferSpec("packets", 64)),
        ("1pkt", BufferSpec("packets", 1)),
        ("1.75bdp", BufferSpec("bdp", Decimal("1.75"))),
        ("100KB", BufferSpec("bytes", 100_000)),
        ("64KiB", BufferSpec("bytes", 65_536)),
    ],
)
def test_parse_buffer(text: str, spec: BufferSpec) -> None:
    assert parse_buffer(text) == spec


@pytest.mark.parametrize(
    ("parse", "value", "problem"),
    [
        (parse_rate, "80", "has no unit"),
        (parse_rate, 80, "has no unit"),
        (parse_rate, 80.5, "has no unit"),
        (parse_rate, "-5Mbps", "is negative"),
        (parse_rate, "0Mbps", "must be greater than zero"),
        (parse_rate, "nan", "is not finite"),
        (parse_rate, float("inf"), "is not finite"),
        (parse_rate, "infGbps", "is not finite"),
        (parse_rate, "80Mpbs", "is not a rate"),
        (parse_rate, "80MBps", "is not a rate"),  # megabytes per second: not guessed
        (parse_rate, "1.5bps", "not a whole number of bit/s"),
        (parse_rate, "Mbps", "is not a rate"),
        (parse_rate, True, "is not a rate"),
        (parse_duration, "25", "has no unit"),
        (parse_duration, "25sec", "is not a duration"),
        (parse_duration, "-1s", "is negative"),
        (parse_duration, "1.5ns", "not a whole number of ns"),
        (parse_duration, "1e30s", "is too large"),
        (parse_size, "1500", "has no unit"),
        (parse_size, "10Mb", "is not a size"),  # megabits are not a size
        (parse_size, "0B", "must be greater than zero"),
        (parse_size, "0.5B", "not a whole number of bytes"),
        (parse_buffer, "0bdp", "must be greater than zero"),
        (parse_buffer, "0pkts", "must be greater than zero"),
        (parse_buffer, "1.5pkts", "not a whole number of packets"),
        (parse_buffer, "64", "has no unit"),
        (parse_buffer, "64pkst", "is not a buffer size"),
    ],
)
def test_bad_units_are_one_line_errors(parse, value, problem: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse(value, "link.x")
    message = str(info.value)
    assert message.startswith("link.x: ")
    assert problem in message
    assert "expected" in message  # says what is allowed
    assert "\n" not in message
    assert info.value.field == "link.x"
    assert info.value.value == value


def test_rate_error_message_is_exactly_the_documented_one() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_rate("80Mpbs", "link.rate")
    assert str(info.value) == (
        "link.rate: '80Mpbs' is not a rate (unknown unit 'Mpbs'); "
        'expected a number followed by bps, kbps, Mbps or Gbps (e.g. "80Mbps")'
    )
    assert info.value.allowed.startswith("expected a number followed by bps")


def test_zero_duration_only_where_allowed() -> None:
    assert parse_duration("0ms", "link.delay") == 0
    with pytest.raises(ScenarioError, match="greater than zero"):
        parse_duration("0ms", "flows[0].rtt", allow_zero=False)


@pytest.mark.parametrize(("value", "p"), [(0, 0.0), (0.01, 0.01), ("1%", 0.01), ("0.001%", 0.00001), ("50%", 0.5)])
def test_parse_probability(value, p: float) -> None:
    assert parse_probability(value) == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("value", [1.0, 1, -0.1, "100%", "0.5", float("nan"), True, "x%"])
def test_bad_probability(value) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_probability(value, "link.loss")
    assert str(info.value).startswith("link.loss: ")
    assert "[0, 1)" in str(info.value)


def test_formatting_for_tables() -> None:
    assert format_rate(80_000_000) == "80Mbps"
    assert format_rate(5_027_571.43) == "5.028Mbps"
    assert format_rate(1_500_000_000) == "1.5Gbps"
    assert format_rate(9_600) == "9.6kbps"
    assert format_duration(25_000_000) == "25ms"
    assert format_duration(1_500_000_000) == "1.5s"
    assert format_duration(500_000) == "500us"
    assert format_duration(0) == "0ns"
    assert format_size(437_500) == "437.5KB"
    assert format_size(1_500) == "1500B"
    assert format_size(10_000_000) == "10MB"


@pytest.mark.parametrize("text", ["80Mbps", "1.5Gbps", "9600bps"])
def test_format_rate_round_trips(text: str) -> None:
    assert parse_rate(format_rate(parse_rate(text))) == parse_rate(text)
