"""Reading scenario and sweep files: TOML to plain data, every problem one :class:`ScenarioError` line.

On top of ``tomllib``:

* **Nesting** deeper than :data:`MAX_DEPTH` tables/lists is refused (``tomllib``
  and everything after it would otherwise recurse until ``RecursionError``).
* **Integers** of more than 4300 digits (Python's conversion limit) are refused.
* **Floats are exact or refused**: a TOML float is read as a decimal and kept
  only if a 64-bit float holds it, i.e. the float's shortest form reads back as
  the same number (``0.1`` is fine; ``0.1000000000000000000000000001`` would be
  silently rounded to ``0.1`` and is refused, as is ``1e400``).

The error names the file, the field path and the value (cut), and says what is
allowed.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from .errors import ScenarioError, show_value

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["MAX_DEPTH", "check_depth", "exact_numbers", "loads"]

#: Deepest nesting of tables and lists a scenario or sweep file may have (real ones use 4).
MAX_DEPTH = 32

_TOML_POSITION = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)\s*$")
_TOML_ALLOWED = 'expected TOML: key = value, strings in double quotes (e.g. rate = "80Mbps")'


def loads(text: str, source: str) -> dict[str, Any]:
    """Parse ``text`` (the file ``source``) into plain data: dicts, lists, str, int, float, bool, dates."""
    try:
        data = tomllib.loads(text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_POSITION.match(message)
        if match:
            line = int(match["line"])
            lines = text.splitlines()
            source_line = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            problem = f"TOML syntax error at line {line}, column {match['col']}: {match['msg']}"
            if source_line:
                problem += f" in {show_value(source_line)}"
            value: Any = source_line
        else:  # pragma: no cover - tomllib always gives a position
            problem, value = f"TOML syntax error: {message}", None
        raise ScenarioError(source, value, problem, _TOML_ALLOWED) from None
    except RecursionError:
        raise ScenarioError(source, None, "tables or lists are nested too deeply",
                            f"expected at most {MAX_DEPTH} levels of nesting") from None
    except ValueError as exc:  # an integer beyond Python's 4300-digit conversion limit
        raise ScenarioError(source, None, f"a number cannot be read ({str(exc).split(':')[0]})",
                            "expected numbers of at most 4300 digits") from None
    try:
        check_depth(data)
        return exact_numbers(data)
    except ScenarioError as exc:
        raise (exc.in_file(source) if source else exc) from None


def check_depth(data: Any, field: str = "") -> None:
    """Refuse tables/lists nested deeper than :data:`MAX_DEPTH` (checked without recursion)."""
    stack: list[tuple[Any, str, int]] = [(data, field, 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, (dict, list, tuple)):
            if depth > MAX_DEPTH:
                raise ScenarioError(path or "(top level)", None, "tables or lists are nested too deeply",
                                    f"expected at most {MAX_DEPTH} levels of nesting")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if isinstance(child, (dict, list, tuple)):
                    child_path = f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))
                    stack.append((child, child_path[:200], depth + 1))


def exact_numbers(data: Any, field: str = "") -> Any:
    """``data`` with every :class:`~decimal.Decimal` turned into the float that holds it exactly;
    :class:`ScenarioError` for one no 64-bit float holds (it would be rounded)."""
    if isinstance(data, dict):
        return {k: exact_numbers(v, f"{field}.{k}" if field else str(k)) for k, v in data.items()}
    if isinstance(data, list):
        return [exact_numbers(v, f"{field}[{i}]") for i, v in enumerate(data)]
    if isinstance(data, Decimal):
        return _exact_float(data, field)
    return data


def _exact_float(d: Decimal, field: str) -> float:
    if not d.is_finite():
        return float(d)  # nan, inf: the schema says where they are wrong
    allowed = "expected a number a 64-bit float holds exactly (at most 17 significant digits, |x| < 1.8e308)"
    if d.adjusted() > 308:
        raise ScenarioError(field, d, f"{show_value(float(d) if d.adjusted() < 400 else str(d))} is too large", allowed)
    f = float(d)
    if not math.isfinite(f):
        raise ScenarioError(field, d, f"{show_value(str(d))} is too large", allowed)
    if d != 0 and Decimal(repr(f)) != d:
        return _refuse_rounding(d, f, field, allowed)
    return f


def _refuse_rounding(d: Decimal, f: float, field: str, allowed: str) -> float:
    raise ScenarioError(field, d, f"{show_value(str(d))} cannot be represented exactly (it would be rounded to {f!r})",
                        allowed)
