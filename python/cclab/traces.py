"""Mahimahi capacity traces: find them, parse them, and compute their mean rate.

Format (Mahimahi's ``mm-link``): one integer per line, a timestamp in
milliseconds from the start of the trace, non-decreasing. Each line is one
opportunity to deliver one 1500-byte packet; several lines may share a
millisecond (several packets in that ms). The trace repeats with a period
equal to its last timestamp, which must therefore be > 0.

Where a trace named in a scenario (``link.trace``) is looked for, in order:

1. an absolute path: that file only;
2. relative to the scenario file's directory (when the scenario came from a file);
3. relative to the current working directory;
4. the traces bundled with cclab (``cclab/data/traces/``), by file name
   (``"Verizon-LTE-short.down"``) or as ``"traces/NAME"``.

Everything wrong with a trace is a :class:`~cclab.errors.ScenarioError` on the
field ``link.trace`` naming the file, the line and the problem. A trace must be
a regular file of at most 64 MiB and 4 000 000 lines, every line a
non-negative integer (at most 9 007 199 254 ms, so that nanoseconds stay
exact), non-decreasing. Since a scenario may name any file, an error never
quotes the file's contents: only an offending token that looks like a
number (``'-1'``, ``'1.5'``), cut to 16 characters; anything else is
described, not shown.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat as _stat
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from .errors import ScenarioError, show_value

__all__ = [
    "BYTES_PER_OPPORTUNITY",
    "BUNDLED_TRACE_DIR",
    "Trace",
    "bundled_traces",
    "find_trace",
    "parse_trace",
    "load_trace",
]

#: Bytes that may leave the queue at one delivery opportunity (Mahimahi's MTU-sized packet).
BYTES_PER_OPPORTUNITY = 1500

#: Directory of the traces shipped with cclab.
BUNDLED_TRACE_DIR = Path(__file__).resolve().parent / "data" / "traces"

_FORMAT = "expected one integer millisecond timestamp per line, non-decreasing, last one > 0 (Mahimahi format)"

#: Largest trace file read (bytes) and most lines (delivery opportunities per period).
MAX_TRACE_BYTES = 64 << 20
MAX_TRACE_LINES = 4_000_000
#: Largest timestamp (ms): its nanoseconds stay below 2^53, exact everywhere.
MAX_TRACE_MS = 2**53 // 1_000_000
_NUMBERISH = re.compile(r"^[0-9+\-.eE_,]{1,16}$")


@dataclass(frozen=True, eq=False)
class Trace:
    """A parsed Mahimahi trace.

    Attributes:
        path: the file it was read from.
        opportunities_ms: delivery-opportunity timestamps (ms) within one period.
    """

    path: Path
    opportunities_ms: tuple[int, ...]

    @property
    def period_ms(self) -> int:
        """The repeat period: the last timestamp (as Mahimahi does)."""
        return self.opportunities_ms[-1]

    @property
    def period_ns(self) -> int:
        return self.period_ms * 1_000_000

    @property
    def opportunities_ns(self) -> list[int]:
        return [ms * 1_000_000 for ms in self.opportunities_ms]

    @property
    def bytes_per_period(self) -> int:
        return len(self.opportunities_ms) * BYTES_PER_OPPORTUNITY

    @property
    def mean_rate(self) -> Fraction:
        """Mean capacity in bit/s, exact: opportunities × 1500 B × 8 / period."""
        return Fraction(self.bytes_per_period * 8 * 1000, self.period_ms)

    @property
    def mean_rate_bps(self) -> float:
        """Mean capacity in bit/s (e.g. ≈ 5.03 Mbit/s for Verizon-LTE-short.down)."""
        return float(self.mean_rate)


def bundled_traces() -> list[str]:
    """Names of the traces shipped with cclab (usable as ``trace = "NAME"`` or ``"traces/NAME"``)."""
    if not BUNDLED_TRACE_DIR.is_dir():  # pragma: no cover - broken install
        return []
    return sorted(p.name for p in BUNDLED_TRACE_DIR.iterdir() if p.is_file() and not p.name.startswith("."))


def _bundled_allowed() -> str:
    names = bundled_traces()
    listing = ", ".join(names) if names else "(none installed)"
    return f"expected a path to a Mahimahi trace file, or a bundled trace: {listing}"


def find_trace(spec: str | os.PathLike[str], base_dir: Path | None = None, field: str = "link.trace") -> Path:
    """Locate the trace file ``spec`` (see the module docstring for the search order)."""
    if not isinstance(spec, (str, os.PathLike)) or not str(spec).strip():
        raise ScenarioError(field, spec, f"{show_value(spec)} is not a trace file name", _bundled_allowed())
    raw = Path(os.path.expanduser(str(spec)))
    candidates: list[Path] = []
    if raw.is_absolute():
        candidates.append(raw)
    else:
        if base_dir is not None:
            candidates.append(Path(base_dir) / raw)
        candidates.append(Path.cwd() / raw)
        parts = raw.parts
        if len(parts) == 1 or (len(parts) == 2 and parts[0] == "traces"):
            candidates.append(BUNDLED_TRACE_DIR / parts[-1])
    for candidate in candidates:
        try:
            st = candidate.stat()
        except (OSError, ValueError) as exc:  # missing, a name too long, a NUL byte in it, …
            if isinstance(exc, OSError) and exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                raise ScenarioError(field, spec, f"{show_value(str(spec))} cannot be opened ({exc.strerror})",
                                    _bundled_allowed()) from None
            continue
        if _stat.S_ISDIR(st.st_mode):
            raise ScenarioError(field, spec, f"{show_value(str(spec))} is a directory ({show_value(str(candidate), 120)})",
                                _bundled_allowed())
        if not _stat.S_ISREG(st.st_mode):
            raise ScenarioError(field, spec, f"{show_value(str(spec))} is not a regular file (a device, pipe or socket)",
                                _bundled_allowed())
        return candidate.resolve()
    places = ", ".join(show_value(str(c.parent), 80) for c in candidates)
    raise ScenarioError(field, spec, f"trace file {show_value(str(spec))} not found (looked in {places})",
                        _bundled_allowed())


def parse_trace(text: str, source: str | os.PathLike[str] = "<trace>", field: str = "link.trace",
                spec: object = None) -> Trace:
    """Parse the text of a Mahimahi trace. ``source`` names it in errors; ``spec`` is the value the user gave."""
    value = str(source) if spec is None else spec
    name = str(source)

    def bad(problem: str) -> ScenarioError:
        return ScenarioError(field, value, f"{show_value(name, 120)[1:-1]}: {problem}", _FORMAT)

    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise bad("the file is empty")
    if len(lines) > MAX_TRACE_LINES:
        raise bad(f"{len(lines)} lines, more than the {MAX_TRACE_LINES} a trace may have")
    stamps: list[int] = []
    previous = 0
    for number, line in enumerate(lines, start=1):
        entry = line.strip()
        if not (entry.isascii() and entry.isdigit()):
            if not entry:
                raise bad(f"line {number} is empty")
            token = entry.split()[0] if entry.split() else entry
            if len(entry.split()) > 1 and token.isascii() and token.isdigit():
                raise bad(f"line {number} holds {len(entry.split())} values; a Mahimahi trace line is one "
                          "non-negative integer number of ms (no comments, no columns)")
            if _NUMBERISH.match(token):  # a number gone wrong ('-1', '1.5'): safe and useful to show
                raise bad(f"line {number}: {show_value(token, 20)} is not a non-negative integer number of ms")
            # anything else is not shown: a scenario may name any file, and its contents are not ours to print
            raise bad(f"line {number} is not a non-negative integer number of ms "
                      f"(it holds {'non-ASCII characters' if not entry.isascii() else 'characters other than digits'}; "
                      "is this a Mahimahi trace?)")
        if len(entry) > 16 or int(entry) > MAX_TRACE_MS:
            raise bad(f"line {number}: a timestamp of {len(entry.lstrip('0')) or 1} digits is too large "
                      f"(at most {MAX_TRACE_MS} ms)")
        stamp = int(entry)
        if stamp < previous:
            raise bad(f"line {number}: {stamp} is smaller than the previous timestamp {previous} "
                      "(timestamps must not decrease)")
        stamps.append(stamp)
        previous = stamp
    if stamps[-1] == 0:
        raise bad("the last timestamp is 0, so the trace has no duration (it repeats every last-timestamp ms)")
    return Trace(Path(source), tuple(stamps))


@functools.lru_cache(maxsize=8)
def _load_cached(path: str, mtime_ns: int, size: int, field: str, spec: object) -> Trace:
    del mtime_ns  # a cache key only: a changed file is read again
    shown = show_value(path, 120)[1:-1]
    if size > MAX_TRACE_BYTES:
        raise ScenarioError(field, spec, f"{shown}: {size} bytes, larger than a trace may be ({MAX_TRACE_BYTES} bytes)",
                            _FORMAT)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TRACE_BYTES + 1)
        text = data.decode("ascii")
    except UnicodeDecodeError as exc:
        raise ScenarioError(field, spec, f"{shown}: not a text file (byte {exc.start} is not ASCII)", _FORMAT) from None
    except OSError as exc:
        raise ScenarioError(field, spec, f"{shown}: cannot be read ({exc.strerror})", _FORMAT) from None
    if len(data) > MAX_TRACE_BYTES:
        raise ScenarioError(field, spec, f"{shown}: larger than a trace may be ({MAX_TRACE_BYTES} bytes)", _FORMAT)
    if "\x00" in text:
        raise ScenarioError(field, spec, f"{shown}: not a text file (it holds NUL bytes)", _FORMAT)
    return parse_trace(text, path, field, spec)


def load_trace(spec: str | os.PathLike[str], base_dir: Path | None = None, field: str = "link.trace") -> Trace:
    """Find (:func:`find_trace`) and parse (:func:`parse_trace`) a trace; results are cached per file version."""
    path = find_trace(spec, base_dir, field)
    stat = path.stat()
    return _load_cached(str(path), stat.st_mtime_ns, stat.st_size, field, str(spec))
