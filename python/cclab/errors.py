"""The one error users see for bad scenarios: :class:`ScenarioError`.

Every problem with a scenario — a unit typo, an unknown field, a missing
trace file, a start time after the end of the run — becomes one
``ScenarioError`` whose ``str()`` is a single line::

    link.rate: '80Mpbs' is not a rate; expected a number followed by bps, kbps, Mbps or Gbps (e.g. "80Mbps")

i.e. ``<field path>: <what is wrong with the value as given>; <what is
allowed>``. The field path uses the scenario's own spelling (``flows[1].rtt``,
``measure.from``, ``link.schedule[2].at``); for file-level problems it is the
file name.

pydantic's ``ValidationError`` never reaches users: :func:`from_validation_error`
turns it into a ``ScenarioError``. When several fields are wrong, the **first**
error (in pydantic's validation order, which follows the order of the fields
in the schema) is reported — one clear line beats a wall of text, and fixing
errors one at a time is how users work through a file anyway.
"""

from __future__ import annotations

import reprlib
import unicodedata
from typing import Any

__all__ = [
    "ScenarioWarning",
    "MAX_FIELD",
    "MAX_MESSAGE",
    "ScenarioError",
    "clip",
    "format_loc",
    "from_validation_error",
    "join_field",
    "printable",
    "show_value",
]

#: Longest error message (characters) a user ever sees; longer ones are cut with "…".
MAX_MESSAGE = 500
#: Longest field path shown in a message (a user's unknown key may be megabytes long).
MAX_FIELD = 80

_REPR = reprlib.Repr()
_REPR.maxlevel = 3  # deeply nested values are shown as [[[...]]], never recursed into
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6
_REPR.maxlong = 40


def printable(text: str) -> str:
    """``text`` with every control or format character escaped (``\\x1b``, ``\\u202e``).

    Terminal escape sequences, carriage returns and bidirectional overrides in
    a user's scenario name or path can rewrite what a terminal shows; printed
    through this they are inert. Ordinary letters (also non-ASCII) are kept.
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif unicodedata.category(ch) == "Zs":  # other spaces (no-break, …): show as a space
            out.append(" ")
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to at most ``limit`` characters (ending in "…" when cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show_value(value: Any, limit: int = 60) -> str:
    """``repr`` of a user-given value: one line, control characters escaped, at most ``limit`` characters.

    Safe on anything a TOML file or a Python caller can produce: deeply nested
    lists are abbreviated (never recursed into), huge numbers and strings cut.
    """
    try:
        if isinstance(value, str):
            text = repr(value[: limit + 1])
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
            text = f"an integer of {len(str(abs(value))) if abs(value) < 10**4000 else 'over 4000'} digits"
        else:
            text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 — a user's object with a broken __repr__
        text = f"<{type(value).__name__}>"
    return clip(printable(text), limit)


def join_field(prefix: str, field: str) -> str:
    """Join two field paths: ``join_field("link", "rate") == "link.rate"``,
    ``join_field("flows", "[1].rtt") == "flows[1].rtt"``."""
    if not prefix:
        return field
    if not field:
        return prefix
    if field.startswith("["):
        return prefix + field
    return f"{prefix}.{field}"


# Python attribute names that differ from the scenario's (TOML) spelling.
_ALIASES = {"from_": "from"}


def format_loc(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a scenario field path: ``('flows', 1, 'rtt')`` → ``flows[1].rtt``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = join_field(out, _ALIASES.get(str(part), str(part)))
    return out


class ScenarioWarning(UserWarning):
    """Something in a scenario that runs but is probably not meant (a link no flow crosses);
    ``str()`` is one line in the same ``field: problem`` form as :class:`ScenarioError`.
    ``cclab`` commands print it as ``warning: …``."""


class ScenarioError(ValueError):
    """A scenario problem, reported as one line naming field, value and what is allowed.

    Attributes:
        field: the field path (``link.rate``, ``flows[1].rtt``) or, for
            file-level problems, the file name.
        value: the value as the user gave it.
        problem: what is wrong, e.g. ``"'80Mpbs' is not a rate"``.
        allowed: what would be accepted, e.g.
            ``'expected a number followed by bps, kbps, Mbps or Gbps (e.g. "80Mbps")'``.
        source: the scenario file the error was found in, if any (prefixed to
            the message).
    """

    def __init__(self, field: str, value: Any, problem: str, allowed: str = "", source: str | None = None):
        self.field = field
        self.value = value
        self.problem = problem
        self.allowed = allowed
        self.source = source
        #: Internal: the path within a nested table whose constructor raised this error.
        self.local_field: str | None = None
        super().__init__(self.message)

    @property
    def message(self) -> str:
        field = clip(self.field, MAX_FIELD) if self.field else ""
        text = f"{field}: {self.problem}" if field else self.problem
        if self.allowed:
            text += f"; {self.allowed}"
        if self.source:
            text = f"{clip(self.source, 2 * MAX_FIELD)}: {text}"
        return clip(printable(" ".join(text.splitlines())))

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # picklable (Dask workers send errors back)
        return (ScenarioError, (self.field, self.value, self.problem, self.allowed, self.source))

    def within(self, prefix: str) -> ScenarioError:
        """The same error with its field path placed under ``prefix``."""
        return ScenarioError(join_field(prefix, self.field), self.value, self.problem, self.allowed, self.source)

    def in_file(self, source: str) -> ScenarioError:
        """The same error, attributed to the scenario file ``source``."""
        return ScenarioError(self.field, self.value, self.problem, self.allowed, source)


# Hints for fields pydantic reports as missing (keyed by the last path element).
_REQUIRED_HINTS = {
    "name": 'expected a string, e.g. name = "cubic-vs-reno"',
    "duration": 'expected a duration, e.g. duration = "60s"',
    "link": 'expected a [link] table with rate = "…" or trace = "…"',
    "flows": 'expected at least one [[flows]] table with cca and rtt',
    "cca": 'expected an algorithm name, e.g. cca = "cubic"',
    "rtt": 'expected a duration, e.g. rtt = "25ms"',
    "at": 'expected a duration, e.g. at = "20s"',
    "p": "expected a probability in [0, 1]",
    "r": "expected a probability in (0, 1]",
    "from": 'expected the name of the node the link leaves, e.g. from = "left"',
    "to": 'expected the name of the node the link reaches, e.g. to = "right"',
    "model": 'expected model = "bernoulli" (with p) or model = "gilbert-elliott" (with p and r)',
}

_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}


def from_validation_error(exc: Any, prefix: str = "") -> ScenarioError:
    """Translate a pydantic ``ValidationError`` into one :class:`ScenarioError` (its first error)."""
    errors = exc.errors()
    if not errors:  # pragma: no cover - pydantic never raises an empty one
        return ScenarioError(prefix, None, "invalid value")
    err = errors[0]
    field = join_field(prefix, format_loc(tuple(err.get("loc", ()))))
    original = (err.get("ctx") or {}).get("error")
    if isinstance(original, ScenarioError):
        # An error from a nested table's own constructor carries its path within that table.
        local = getattr(original, "local_field", None)
        inner = ScenarioError(original.field if local is None else local, original.value, original.problem,
                              original.allowed, original.source)
        return inner.within(field)
    kind = err.get("type", "")
    value = err.get("input")
    if kind == "missing":
        last = field.rsplit(".", 1)[-1]
        return ScenarioError(field, None, "required field missing", _REQUIRED_HINTS.get(last, ""))
    if kind == "extra_forbidden":
        return ScenarioError(field, value, "unknown field", "")
    if kind in _TYPE_NAMES:
        return ScenarioError(field, value, f"{show_value(value)} has the wrong type", f"expected {_TYPE_NAMES[kind]}")
    message = str(err.get("msg", "invalid value"))
    for head in ("Value error, ", "Assertion failed, "):
        if message.startswith(head):
            message = message[len(head):]
    return ScenarioError(field, value, f"{show_value(value)} is not valid", message)
