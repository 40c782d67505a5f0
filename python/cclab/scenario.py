"""The user-facing scenario schema (TOML or Python), with validation and friendly errors.

The field names are a contract (README.md "A scenario"; resolved form: docs/ir.md)::

    name = "bbr-vs-cubic"            # default when loaded from a file: the file's stem
    duration = "60s"                 # required
    seed = 1                         # default 1
    sample_interval = "10ms"         # default "10ms"; must divide the duration
    mss = 1448                       # default 1448 (payload bytes; 1500 on the wire)
    measure = { from = "20s" }       # default from = "0s", to = duration
    start_offset = "1rtt"            # default: each flow starts a random offset in [0, its base RTT)
                                     # after its start (drawn from the seed); "5ms"; 0 disables
    record = { flows = "auto" }      # per-flow series: "auto" (every sample; coarser for large runs),
                                     # a multiple of sample_interval ("1s"), or "off" (summary only)

    [link]                           # the one-link form (a dumbbell); or named links:
    rate = "80Mbps"                  # exactly one of rate | trace
    # trace = "traces/Verizon-LTE-short.down"
    # schedule = [{ at = "20s", rate = "160Mbps" }]   # needs rate; not with trace
    delay = "0ms"                    # default "0ms" (one way)
    buffer = "1.75bdp"               # default "1bdp"; or "100KB", "64KiB", "64pkts"
    loss = 0.0                       # default 0; or "1%", or { model = "gilbert-elliott", p, r, h, k }
    qdisc = "droptail"               # default; or "fq_codel", { name = "codel", target = "5ms" } (docs/queues.md)
                                     # (the old `aqm = "droptail"` is read as qdisc = "droptail")
    policer = { rate = "5Mbps", burst = "30KB" }   # optional token bucket in front of the queue

    # [links.core]                   # instead of [link]: named links, each one direction of a wire
    # from = "r1"                    # required: the nodes it connects (docs/topologies.md)
    # to = "r2"
    # rate = "10Mbps"                # and every field of [link]

    [[flows]]
    cca = "bbr"                      # required; or { name = "bbr", cwnd_gain = 1.5 }
    count = 2                        # default 1
    rtt = "25ms"                     # required with [link]; with [links] default: the path's round trip
    # path = ["access1", "core"]     # the links its data crosses (required with several links)
    # ack_path = ["core-back"]       # the links its ACKs cross back (default: an uncongested return)
    # delayed_ack = false            # default true (Linux: ACK every second segment, else after 40 ms)
    # ack_every = 1                  # default 2; 1 = ACK every segment at once (= delayed_ack = false)
    # sack = false                   # default true
    start = "0s"                     # default "0s"
    stagger = "2s"                   # default "0s"
    stop = "50s"                     # optional, absolute time the application stops writing
    bytes = "100MB"                  # optional, application bytes to send
    rwnd = "4MB"                     # optional, receive-window limit
    ecn = false                      # default false; true: ECN (RFC 3168; required by cca = "dctcp")

    [host]                           # optional
    jitter = { median = "20us", p99 = "200us" }   # simulator: host timing jitter (cclab.jitter)
    pauses = { every = "300ms", durations = ["0.2ms", "0.9ms", "8ms"] }   # simulator: host pauses (cclab.jitter)
    read_delay = { median = "34us", p99 = "250us" }   # simulator: the receiving application reads late (cclab.jitter)

Each value is parsed once, here: the models keep the strings users wrote
(``rate == "80Mbps"``, printed and saved as written) as typed values that
carry their exact meaning (:class:`cclab.units.Rate` ``.bps``,
:class:`~cclab.units.Duration` ``.ns``, :class:`~cclab.units.Size` ``.bytes``,
:class:`~cclab.units.Buffer` ``.spec``, :class:`~cclab.units.Percent` ``.p``),
which :mod:`cclab.resolve` turns into the integer IR without parsing again.
Each field is checked here on its own (units, signs, names); checks that
relate fields (start before the end of the run, buffer at least one packet,
...) happen in :func:`cclab.resolve.resolve`, which every run goes through.

Every problem raises :class:`~cclab.errors.ScenarioError` (one line naming the
field, the value and what is allowed) — also when the models are built or
assigned from Python. Algorithm names and parameters are checked against the
one registry, :mod:`cclab.cca_params` (which the tests hold equal to the engine's list).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar

import tomli_w
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, PrivateAttr, ValidationError,
                      field_validator, model_validator)

from . import cca_params
from . import qdisc as qdiscs
from . import tomlio, units
from .errors import ScenarioError, from_validation_error, show_value

__all__ = [
    "DEFAULT_MSS",
    "HEADER_BYTES",
    "Scenario",
    "Measure",
    "Link",
    "NamedLink",
    "ScheduleEntry",
    "LossModel",
    "Qdisc",
    "Policer",
    "Cca",
    "FlowGroup",
    "Record",
    "Host",
    "known_algorithms",
    "load_scenario",
    "scenario_from_dict",
]

#: Default TCP maximum segment size (payload bytes): 1500-byte packets with 52 header bytes.
DEFAULT_MSS = 1448
#: IPv4 (20) + TCP with timestamps (32) header bytes per segment on the wire.
HEADER_BYTES = 52
#: Smallest MSS Linux uses (TCP_MIN_MSS in include/net/tcp.h).
MIN_MSS = 88
#: Largest MSS that fits a 9000-byte jumbo frame.
MAX_MSS = 9000 - HEADER_BYTES
#: Flows in one group: a guard against typos such as count = 100000000, checked before the
#: resolver builds every flow (~1 kB each). What a run can hold is bounded by memory
#: instead: the resource estimate (cclab.limits, ~20 kB per flow) refuses more than the
#: 8 GB limit allows (~390 000 flows) unless --allow-large; docs/performance.md "Limits".
MAX_COUNT = 1_000_000
#: Largest ``ack_every`` (segments per ACK); ns-3's DelAckCount and Linux stay far below.
MAX_ACK_EVERY = 64

#: The name of the link of the one-link form ``[link]`` (its nodes: ``left`` → ``right``).
ONE_LINK_NAME = "link"
ONE_LINK_NODES = ("left", "right")

_LOSS_MODELS = {"gilbert-elliott": "gilbert-elliott", "gilbert_elliott": "gilbert-elliott", "bernoulli": "bernoulli"}


def known_algorithms() -> dict[str, list[str]]:
    """``{algorithm name: [parameter names]}`` from the registry (:data:`cclab.cca_params.PARAMS`)."""
    return {name: list(params) for name, params in cca_params.PARAMS.items()}


def _typed(kind: type, **options: Any) -> PlainValidator:
    """Parse the user's string once into ``kind`` (a :mod:`cclab.units` typed string)."""

    def parse(value: Any) -> Any:
        return kind.parse(value, "", **options)  # type: ignore[attr-defined]

    return PlainValidator(parse, json_schema_input_type=str)


Rate = Annotated[str, _typed(units.Rate)]
Duration = Annotated[str, _typed(units.Duration)]
PositiveDuration = Annotated[str, _typed(units.Duration, allow_zero=False)]
Size = Annotated[str, _typed(units.Size)]
Buffer = Annotated[str, _typed(units.Buffer)]


def clip_name(name: Any) -> str:
    """A user's table key, printable and short, for an error's field path."""
    from .errors import printable

    text = printable(str(name))
    return text if len(text) <= MAX_NAME else text[: MAX_NAME - 1] + "…"


def _integer(value: Any, lowest: int, highest: int, example: str) -> int:
    allowed = f"expected an integer from {lowest} to {highest} (e.g. {example})"
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError("", value, f"{show_value(value)} is not an integer", allowed)
    if not lowest <= value <= highest:
        raise ScenarioError("", value, f"{value} is out of range", allowed)
    return value


def _translated(exc: ValidationError, where: str) -> ScenarioError:
    """A pydantic error as a ScenarioError placed under ``where``.

    pydantic also calls a model's ``__init__`` for nested tables (a custom
    ``__init__`` is honoured), so the error also keeps its path within this
    table (``local_field``) for an enclosing table to prefix instead.
    """
    local = from_validation_error(exc)
    error = local.within(where)
    error.local_field = local.field
    return error


class _Model(BaseModel):
    """Common behaviour: unknown fields rejected, errors as one-line ScenarioErrors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True, validate_default=True)
    #: Field path of this table inside a scenario, used for errors when built on its own.
    _where: ClassVar[str] = ""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _translated(exc, self._where) from None

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            raise from_validation_error(exc, self._where) from None

    @classmethod
    def model_validate(cls, obj: Any, **options: Any):  # type: ignore[override]
        try:
            return super().model_validate(obj, **options)
        except ValidationError as exc:
            raise _translated(exc, cls._where) from None

    @classmethod
    def field_names(cls) -> list[str]:
        """The fields of this table, spelled as in TOML."""
        return [info.alias or name for name, info in cls.model_fields.items()]

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:
        return cls._check_known_fields(data)

    @classmethod
    def _check_known_fields(cls, data: Any) -> Any:
        if isinstance(data, BaseModel):
            return data
        if not isinstance(data, dict):
            raise ScenarioError("", data, f"{show_value(data)} is not a table",
                                f"expected a table with fields {', '.join(cls.field_names())}")
        known = set(cls.field_names()) | set(cls.model_fields)
        for key in data:
            if key not in known:
                raise ScenarioError(str(key), key, "unknown field", f"allowed: {', '.join(cls.field_names())}")
        return data


class LossModel(_Model):
    """A loss process as a table: ``{ model = "gilbert-elliott", p = 0.01, r = 0.5, h = 0, k = 1 }``.

    Gilbert–Elliott: P(good→bad) = ``p``, P(bad→good) = ``r``; a packet is lost
    with probability 1−``k`` in the good state and 1−``h`` in the bad state
    (defaults ``k = 1``, ``h = 0``: the simple Gilbert model, no loss when good,
    all lost when bad). ``{ model = "bernoulli", p = 0.01 }`` is the same as ``loss = 0.01``.
    """

    _where: ClassVar[str] = "link.loss"

    model: str
    p: float
    r: float | None = None
    h: float | None = None
    k: float | None = None

    @field_validator("model", mode="before")
    @classmethod
    def _model_name(cls, value: Any) -> str:
        if not isinstance(value, str) or value not in _LOSS_MODELS:
            raise ScenarioError("", value, f"{show_value(value)} is not a loss model",
                                "allowed: gilbert-elliott, bernoulli")
        return _LOSS_MODELS[value]

    @field_validator("p", "h", "k", mode="before")
    @classmethod
    def _probability(cls, value: Any) -> float | None:
        return None if value is None else units.parse_probability(value, "", upper_inclusive=True)

    @field_validator("r", mode="before")
    @classmethod
    def _recovery(cls, value: Any) -> float | None:
        if value is None:
            return None
        return units.parse_probability(value, "", upper_inclusive=True, lower_inclusive=False)

    @model_validator(mode="after")
    def _fields_of_model(self) -> LossModel:
        if self.model == "bernoulli":
            for extra in ("r", "h", "k"):
                value = getattr(self, extra)
                if value is not None:
                    raise ScenarioError(extra, value, f"{extra} = {value} is not a parameter of the bernoulli model",
                                        "allowed: p")
            if self.p >= 1:
                raise ScenarioError("p", self.p, f"{self.p} is out of range",
                                    "expected a number in [0, 1) (e.g. 0.01)")
        elif self.r is None:
            raise ScenarioError("r", None, "required field missing",
                                "expected P(bad→good), a probability in (0, 1], e.g. r = 0.5")
        return self


def _loss(value: Any) -> Any:
    if isinstance(value, LossModel):
        return value
    if isinstance(value, dict):
        return LossModel.model_validate(value)
    if isinstance(value, str):
        return units.Percent.parse(value, "")
    return units.parse_probability(value, "")


#: ``loss``: a probability in [0, 1) as a number (``0.01``) or percentage (``"1%"``, a
#: :class:`cclab.units.Percent`), or a :class:`LossModel`.
Loss = Annotated[Any, PlainValidator(_loss, json_schema_input_type=float | str | dict)]



def _flatten_named_table(data: Any, example: str, name_allowed: str, params_allowed: str) -> Any:
    """``{name, params = {…}, key = value …}`` → ``{name, params}``: parameters may sit beside the name
    in TOML (``{ name = "codel", target = "5ms" }``) or in a ``params`` table; shared by ``cca`` and
    ``qdisc``. A parameter given both ways is an error naming both spellings (which one should win
    is not for cclab to guess)."""
    if not isinstance(data, dict):
        raise ScenarioError("", data, f"{show_value(data)} is not a table", example)
    if "name" not in data:
        raise ScenarioError("name", None, "required field missing", name_allowed)
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise ScenarioError("params", params, f"{show_value(params)} is not a table", params_allowed)
    params = dict(params)
    for key, value in data.items():
        if key in ("name", "params"):
            continue
        if key in params:  # never let one spelling silently win over the other
            shown = clip_name(key)
            raise ScenarioError(shown, value,
                                f"given twice: {shown} = {show_value(value, 30)} beside the name and "
                                f"params.{shown} = {show_value(params[key], 30)}",
                                f"give it once, either as {shown} = … or in params = {{ {shown} = … }}")
        params[key] = value
    return {"name": data["name"], "params": params}


class Qdisc(_Model):
    """A queue discipline with parameters (docs/queues.md).

    TOML: ``qdisc = { name = "fq_codel", target = "5ms" }`` (or just
    ``qdisc = "fq_codel"`` for the defaults). Python:
    ``Qdisc(name="codel", params={"target": "5ms"})`` or
    ``Qdisc(name="codel", target="5ms")``. Each parameter is checked on its
    own here (units, ranges); the defaults and the checks that need the link
    (RED's thresholds against the buffer) come in :func:`cclab.resolve.resolve`.
    """

    _where: ClassVar[str] = "link.qdisc"

    name: str
    params: dict[str, Any] = {}

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:  # parameters sit beside the name in TOML
        if isinstance(data, BaseModel):
            return data
        data = _flatten_named_table(data, 'expected a name or a table, e.g. qdisc = { name = "codel", target = "5ms" }',
                                    f"expected a queue discipline; {qdiscs.allowed_names()}",
                                    "expected parameter names with values")  # fmt: skip
        return {"name": data["name"], "params": {str(key): value for key, value in data["params"].items()}}

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> Any:
        return qdiscs.check_name(value)

    @model_validator(mode="after")
    def _params(self) -> Qdisc:
        typed = {key: qdiscs.check_param(self.name, key, value) for key, value in self.params.items()}
        self.params.update(typed)  # parsed once: durations, sizes and rates as cclab.units typed values
        return self


def _qdisc(value: Any) -> Any:
    if isinstance(value, Qdisc):
        return value
    if isinstance(value, dict):
        return Qdisc.model_validate(value)
    return qdiscs.check_name(value)


#: ``qdisc``: a discipline's name (its defaults) or a :class:`Qdisc` with parameters.
QdiscField = Annotated[str | Qdisc, BeforeValidator(_qdisc)]


class Policer(_Model):
    """A token-bucket policer in front of the queue: ``policer = { rate = "5Mbps", burst = "30KB" }``.

    Tokens accrue at ``rate`` (bit/s of wire bytes) into a bucket of ``burst``
    bytes, which starts full; a packet that finds fewer tokens than its size
    is dropped (``drops_policer``), the others go on to the queue — Linux's
    ``police`` action (docs/queues.md).
    """

    _where: ClassVar[str] = "link.policer"

    rate: Rate
    burst: Size

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:
        data = cls._check_known_fields(data)
        if isinstance(data, dict):
            for key, example in (("rate", 'rate = "5Mbps" (the token rate)'),
                                 ("burst", 'burst = "30KB" (the bucket size, at least one packet)')):
                if key not in data:
                    raise ScenarioError(key, None, "required field missing",
                                        f'expected e.g. policer = {{ rate = "5Mbps", burst = "30KB" }}: {example}')
        return data


class ScheduleEntry(_Model):
    """One timed change of the link: ``{ at = "20s", rate = "160Mbps" }`` (at least one of rate, delay, loss)."""

    _where: ClassVar[str] = "link.schedule[?]"

    at: Duration
    rate: Rate | None = None
    delay: Duration | None = None
    loss: Loss | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> ScheduleEntry:
        if self.rate is None and self.delay is None and self.loss is None:
            raise ScenarioError("", {"at": self.at}, f"the entry at {self.at!r} changes nothing",
                                "give at least one of rate, delay, loss")
        return self


class Link(_Model):
    """The bottleneck (data direction)."""

    _where: ClassVar[str] = "link"

    rate: Rate | None = None
    trace: str | None = None
    schedule: list[ScheduleEntry] = []
    delay: Duration = "0ms"
    buffer: Buffer = "1bdp"
    loss: Loss = 0.0
    qdisc: QdiscField = "droptail"
    policer: Policer | None = None

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:
        # ``aqm`` was a free string that only ever allowed "droptail": it is
        # read as ``qdisc`` (never ignored); both at once is an error.
        if isinstance(data, dict) and "aqm" in data:
            data = dict(data)
            aqm = data.pop("aqm")
            if "qdisc" in data:
                raise ScenarioError("aqm", aqm, "link.aqm is the old name of link.qdisc and both are given",
                                    "give only qdisc (e.g. qdisc = \"fq_codel\")")
            if not isinstance(aqm, str) or aqm not in qdiscs.NAMES:
                raise ScenarioError("aqm", aqm, f"{show_value(aqm)} is not a queue discipline "
                                    "(link.aqm is the old name of link.qdisc)", qdiscs.allowed_names())
            data["qdisc"] = aqm
        return cls._check_known_fields(data)

    @property
    def qdisc_name(self) -> str:
        return self.qdisc if isinstance(self.qdisc, str) else self.qdisc.name

    @property
    def qdisc_params(self) -> dict[str, Any]:
        return {} if isinstance(self.qdisc, str) else dict(self.qdisc.params)

    @field_validator("trace", mode="before")
    @classmethod
    def _trace_name(cls, value: Any) -> Any:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ScenarioError("", value, f"{show_value(value)} is not a trace file name",
                                'expected a path or a bundled trace name (e.g. "traces/Verizon-LTE-short.down")')
        return value

    @field_validator("schedule", mode="before")
    @classmethod
    def _schedule_list(cls, value: Any) -> Any:
        if value is None:
            return []
        if not isinstance(value, (list, tuple)):
            raise ScenarioError("", value, f"{show_value(value)} is not a list",
                                'expected a list of tables, e.g. schedule = [{ at = "20s", rate = "160Mbps" }]')
        return value

    @model_validator(mode="after")
    def _one_capacity(self) -> Link:
        capacity = 'exactly one of rate (e.g. "80Mbps") or trace (e.g. "traces/Verizon-LTE-short.down")'
        if self.rate is None and self.trace is None and self.schedule:
            raise ScenarioError("rate", None, "required field missing: a schedule changes the link's rate, "
                                "it needs the rate at 0s", 'expected e.g. rate = "10Mbps" beside schedule')
        if self.rate is None and self.trace is None:
            raise ScenarioError("", None, "no capacity given", f"expected {capacity}")
        if self.rate is not None and self.trace is not None:
            raise ScenarioError("", {"rate": self.rate, "trace": self.trace}, "both rate and trace are given",
                                f"expected {capacity}")
        if self.schedule and self.trace is not None:
            raise ScenarioError("schedule", self.trace, "a schedule cannot be combined with a trace",
                                "use rate = … as the initial capacity with a schedule, or a trace alone")
        previous = 0
        for index, entry in enumerate(self.schedule):
            at = entry.at.ns
            if index == 0 and at == 0:
                raise ScenarioError("schedule[0].at", entry.at, f"{entry.at!r} is not after 0s",
                                    "rate, delay and loss of the link give the values at 0s; "
                                    "schedule entries change them later")
            if index > 0 and at <= previous:
                raise ScenarioError(f"schedule[{index}].at", entry.at,
                                    f"{entry.at!r} is not after the previous entry's {self.schedule[index - 1].at!r}",
                                    "entries must be in strictly increasing order of at")
            previous = at
        return self


#: Longest file name (bytes) of a path component on the usual file systems (ext4, APFS, NTFS: 255).
FILE_NAME_BYTES = 255


def run_dir_slug(name: str) -> str:
    """The scenario name as the run directory spells it (``cclab.api.default_run_dir``: every run of
    other characters becomes ``-``; ASCII, so one byte per character)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "run"


def _max_scenario_name() -> int:
    """The longest :func:`run_dir_slug` whose directories fit :data:`FILE_NAME_BYTES`: the run directory
    ``<slug>-<8 hex of the IR hash>[-<backend>]`` (``cclab.api.default_run_dir``) and the record's
    sibling temporary directory ``<that>.tmp-old-XXXXXXXX`` (``cclab.record``, mkdtemp's 8 characters)."""
    from .backends import BACKENDS

    backend = max(len(f"-{b}") for b in BACKENDS if b != "sim")
    return FILE_NAME_BYTES - len("-") - 8 - backend - len(".tmp-old-") - 8


#: Longest scenario name (in its run-directory form, :func:`run_dir_slug`): 222 characters.
MAX_SCENARIO_NAME = _max_scenario_name()

#: Link and node names: letters, digits, ``_`` and ``-`` (a name appears in sweep axis paths such as
#: ``links.core.rate`` and in record columns), at most this long.
MAX_NAME = 64


def check_name(value: Any, what: str, example: str) -> str:
    """A link or node name, or a one-line :class:`ScenarioError`."""
    allowed = f"expected 1 to {MAX_NAME} letters, digits, '_' or '-' (e.g. {example})"
    if not isinstance(value, str):
        raise ScenarioError("", value, f"{show_value(value)} is not a {what} name", allowed)
    if not value or len(value) > MAX_NAME or not all(c.isascii() and (c.isalnum() or c in "_-") for c in value):
        raise ScenarioError("", value, f"{show_value(value)} is not a usable {what} name", allowed)
    return value


class NamedLink(Link):
    """One link of a topology (``[links.NAME]``): one direction of a wire from node ``from`` to
    node ``to`` — one queue, one rate, one delay — with every field of ``[link]``."""

    _where: ClassVar[str] = "links.?"

    from_: str = Field(alias="from")
    to: str

    @field_validator("from_", "to", mode="before")
    @classmethod
    def _node(cls, value: Any) -> str:
        return check_name(value, "node", '"r1"')

    @model_validator(mode="after")
    def _two_nodes(self) -> NamedLink:
        if self.from_ == self.to:
            raise ScenarioError("to", self.to, f"{self.to!r} is also the link's from node",
                                "expected a link between two different nodes")
        return self


class Cca(_Model):
    """A congestion control algorithm with parameters.

    TOML: ``cca = { name = "bbr", cwnd_gain = 1.5 }``. Python:
    ``Cca(name="bbr", params={"cwnd_gain": 1.5})`` or ``Cca(name="bbr", cwnd_gain=1.5)``.
    Parameters are numbers (the IR carries them as floats); ``true``/``false``
    are accepted for switches and stored as 1.0/0.0. Names are checked against
    the engine's list for the algorithm.
    """

    _where: ClassVar[str] = "flows[?].cca"

    name: str
    params: dict[str, float] = {}

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:  # parameters sit beside the name in TOML
        if isinstance(data, BaseModel):
            return data
        data = _flatten_named_table(data, 'expected e.g. { name = "bbr", cwnd_gain = 1.5 }',
                                    f"expected an algorithm name; allowed: {', '.join(cca_params.algorithm_names())}",
                                    "expected parameter names with numbers")  # fmt: skip
        params = data["params"]
        for key, number in params.items():
            if isinstance(number, int) and abs(number) > 2**53:
                raise ScenarioError(str(key), number, f"{show_value(number)} is too large to be represented exactly",
                                    "algorithm parameters are numbers within their range (see cclab.cca_params)")
            if not isinstance(number, (int, float)) or not math.isfinite(number):
                raise ScenarioError(str(key), number, f"{show_value(number)} is not a number",
                                    "algorithm parameters are finite numbers or true/false (e.g. cwnd_gain = 1.5)")
        if isinstance(data["name"], str) and data["name"] in cca_params.PARAMS:
            # checked as given, before true/false become 1.0/0.0: only a switch takes true or false
            cca_params.check_params(data["name"], params)
        return {"name": data["name"], "params": {str(key): float(number) for key, number in params.items()}}

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> Any:
        return cca_params.check_algorithm(value)

    @model_validator(mode="after")
    def _params(self) -> Cca:
        # names, each value in its range, and the rules between them (cclab.cca_params)
        cca_params.check_params(self.name, self.params)
        return self


class FlowGroup(_Model):
    """A ``[[flows]]`` table: ``count`` flows of one algorithm and RTT, started ``stagger`` apart."""

    _where: ClassVar[str] = "flows[?]"

    cca: str | Cca
    count: int = 1
    rtt: PositiveDuration | None = None
    start: Duration = "0s"
    stagger: Duration = "0s"
    stop: PositiveDuration | None = None
    bytes: Size | None = None
    rwnd: Size | None = None
    ecn: bool = False
    path: list[str] | None = None
    ack_path: list[str] | None = None
    delayed_ack: bool = True
    ack_every: int | None = None
    sack: bool = True

    @field_validator("ecn", "delayed_ack", "sack", mode="before")
    @classmethod
    def _switch(cls, value: Any, info: Any) -> Any:
        if not isinstance(value, bool):
            meaning = {"ecn": "ECN-capable packets", "delayed_ack": "Linux's delayed ACKs",
                       "sack": "selective acknowledgments"}[info.field_name]
            raise ScenarioError("", value, f"{show_value(value)} is not true or false",
                                f"expected {info.field_name} = true ({meaning}) or false")
        return value

    @field_validator("path", "ack_path", mode="before")
    @classmethod
    def _links(cls, value: Any, info: Any) -> Any:
        example = '["access1", "core"]' if info.field_name == "path" else '["core-back", "access1-back"]'
        if value is None:
            return None
        if not isinstance(value, (list, tuple)):
            raise ScenarioError("", value, f"{show_value(value)} is not a list of link names",
                                f"expected e.g. {info.field_name} = {example}")
        for index, name in enumerate(value):
            try:
                check_name(name, "link", '"core"')
            except ScenarioError as exc:
                raise exc.within(f"[{index}]") from None
        return list(value)

    @field_validator("ack_every", mode="before")
    @classmethod
    def _ack_every(cls, value: Any) -> Any:
        return None if value is None else _integer(value, 1, MAX_ACK_EVERY, "ack_every = 1")

    @model_validator(mode="after")
    def _ack_options(self) -> FlowGroup:
        if self.ack_every is not None and not self.delayed_ack and self.ack_every != 1:
            raise ScenarioError("ack_every", self.ack_every,
                                f"ack_every = {self.ack_every} contradicts delayed_ack = false (an ACK for every segment)",
                                "give one of them: delayed_ack = false is ack_every = 1")
        return self

    @property
    def ack_every_segments(self) -> int:
        """Full segments the receiver lets arrive before it ACKs at once (2: Linux; 1: no delayed ACK)."""
        if self.ack_every is not None:
            return self.ack_every
        return 2 if self.delayed_ack else 1

    @field_validator("cca", mode="before")
    @classmethod
    def _cca(cls, value: Any) -> Any:
        if isinstance(value, (Cca, dict)):
            return value if isinstance(value, Cca) else Cca.model_validate(value)
        return cca_params.check_algorithm(value)

    @field_validator("count", mode="before")
    @classmethod
    def _count(cls, value: Any) -> int:
        return _integer(value, 1, MAX_COUNT, "count = 2")

    @model_validator(mode="after")
    def _dctcp_needs_ecn(self) -> FlowGroup:
        # RFC 8257 §3: DCTCP's reaction is the fraction of ECN-marked data; without
        # ECN Linux silently falls back to Reno (dctcp_init). cclab refuses instead.
        if self.cca_name == "dctcp" and not self.ecn:
            raise ScenarioError("ecn", self.ecn, "cca 'dctcp' requires ECN-capable packets (RFC 8257)",
                                "add ecn = true to this [[flows]] table")
        # BBRv3's ECN response needs ECN negotiated as well as ecn_low (bbr_can_use_ecn); without it
        # the switch and its parameters would do nothing
        if self.cca_name == "bbr3" and not self.ecn and isinstance(self.cca, Cca) and self.cca.params.get("ecn_low"):
            raise ScenarioError("cca.ecn_low", True, "has no effect without ECN: bbr3 uses its ECN response only "
                                "on a connection that negotiated ECN (bbr_can_use_ecn)",
                                "add ecn = true to this [[flows]] table, or leave ecn_low out")
        return self

    @property
    def cca_name(self) -> str:
        return self.cca if isinstance(self.cca, str) else self.cca.name

    @property
    def cca_params(self) -> dict[str, float]:
        return {} if isinstance(self.cca, str) else dict(self.cca.params)


def _start_offset(value: Any) -> Any:
    units.parse_start_offset(value, "")
    return value


#: ``start_offset``: the window of each flow's random start offset (``"1rtt"``, ``"5ms"``, ``0``).
StartOffset = Annotated[str | int | float, BeforeValidator(_start_offset)]

#: Default of ``start_offset`` (docs/ir.md "Flows"): one base RTT of each flow.
DEFAULT_START_OFFSET = "1rtt"
#: Values of ``record.flows`` besides a duration.
RECORD_FLOWS_WORDS = ("auto", "off")


class Record(_Model):
    """What the run record keeps: ``record = { flows = "1s" }``.

    ``flows``: the per-flow time series' sample interval — ``"auto"`` (the
    default: every sample, coarser for runs with very many flow samples,
    docs/record.md), a duration that is a multiple of ``sample_interval``, or
    ``"off"`` (no per-flow rows in ``flows.parquet``; the summary still has
    every per-flow metric). The link is recorded at every sample.
    """

    _where: ClassVar[str] = "record"

    flows: str = "auto"

    @field_validator("flows", mode="before")
    @classmethod
    def _flows(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip() in ("summary-only", "none"):
            return "off"
        if isinstance(value, str) and value.strip() in RECORD_FLOWS_WORDS:
            return value.strip()
        allowed = 'expected "auto", "off" or a duration that is a multiple of sample_interval (e.g. "1s")'
        if not isinstance(value, str):
            raise ScenarioError("", value, f"{show_value(value)} is not a per-flow record interval", allowed)
        try:
            units.parse_duration(value, "", allow_zero=False)
        except ScenarioError as exc:
            raise ScenarioError("", value, exc.problem, allowed) from None
        return value


class Measure(_Model):
    """The steady-state window summaries average over: ``[from, to)``; ``to`` defaults to the duration."""

    _where: ClassVar[str] = "measure"

    from_: Duration = Field("0s", alias="from")
    to: PositiveDuration | None = None


class Host(_Model):
    """The end hosts: ``jitter``, ``pauses`` and ``read_delay`` (simulator only; :mod:`cclab.jitter`),
    kept as written and as the engine's quantile tables (:attr:`jitter_table`, :attr:`pauses_ir`,
    :attr:`read_delay_table`)."""

    _where: ClassVar[str] = "host"

    jitter: Any = None  # checked by jitter_table (one line with the allowed forms)
    pauses: Any = None  # checked by pauses_ir
    read_delay: Any = None  # checked by jitter_table, as jitter
    _jitter_table: tuple[list[int], list[int]] = PrivateAttr(default=([], []))
    _pauses_ir: dict[str, list[int]] | None = PrivateAttr(default=None)
    _read_delay_table: tuple[list[int], list[int]] = PrivateAttr(default=([], []))

    @model_validator(mode="after")
    def _table(self) -> Host:
        from .jitter import READ_DELAY_POINTS, jitter_table, pauses_ir

        self._jitter_table = jitter_table(self.jitter, "jitter")  # every check, one line each
        self._pauses_ir = pauses_ir(self.pauses, "pauses")
        self._read_delay_table = jitter_table(self.read_delay, "read_delay", READ_DELAY_POINTS)
        return self

    @property
    def read_delay_table(self) -> tuple[list[int], list[int]]:
        """``host.read_delay_ns`` and ``host.read_delay_p`` of the IR (``[]``: the applications read
        at once; ``_p`` ``[]``: the values are evenly spaced in probability)."""
        return self._read_delay_table

    @property
    def pauses_ir(self) -> dict[str, list[int]] | None:
        """``host.pauses`` of the IR (None: no pauses)."""
        return self._pauses_ir

    @property
    def jitter_table(self) -> tuple[list[int], list[int]]:
        """``host.jitter_ns`` and ``host.jitter_p`` of the IR (``[]``: no jitter; ``_p`` ``[]``: the
        values are evenly spaced in probability)."""
        return self._jitter_table


class Scenario(_Model):
    """One experiment: a bottleneck link (``link``) or named links (``links``), and the flows crossing them.

    Built from TOML (:func:`load_scenario`), from a dict (:func:`scenario_from_dict`)
    or directly: ``Scenario(name="x", duration="30s", link=Link(rate="80Mbps"),
    flows=[FlowGroup(cca="cubic", rtt="25ms")])``, or with
    ``links={"core": NamedLink(**{"from": "r1", "to": "r2", "rate": "10Mbps"})}``. Equality compares the fields
    only (not the directory the scenario was loaded from).
    """

    name: str
    duration: PositiveDuration
    seed: int = 1
    sample_interval: PositiveDuration = "10ms"
    mss: int = DEFAULT_MSS
    measure: Measure = Field(default_factory=Measure)
    start_offset: StartOffset | None = None
    record: Record | None = None
    link: Link | None = None
    links: dict[str, NamedLink] | None = None
    flows: list[FlowGroup]
    host: Host = Field(default_factory=Host)

    _base_dir: Path | None = PrivateAttr(default=None)

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value:
            raise ScenarioError("", value, f"{show_value(value)} is not a scenario name",
                                'expected a non-empty one-line string (e.g. name = "cubic-vs-reno")')
        length = len(run_dir_slug(value))
        if length > MAX_SCENARIO_NAME:
            form = "" if length == len(value) else f" in its run-directory form (of {len(value)} as written)"
            raise ScenarioError("", value, f"{show_value(value, 40)} is {length} characters long{form}",
                                f"expected at most {MAX_SCENARIO_NAME} characters: the run directory "
                                f"runs/<name>-<IR hash> is one file name, at most {FILE_NAME_BYTES} bytes")
        return value

    @field_validator("seed", mode="before")
    @classmethod
    def _seed(cls, value: Any) -> int:
        return _integer(value, 0, 2**64 - 1, "seed = 1")

    @field_validator("mss", mode="before")
    @classmethod
    def _mss(cls, value: Any) -> int:
        return _integer(value, MIN_MSS, MAX_MSS, f"mss = {DEFAULT_MSS}")

    @field_validator("links", mode="before")
    @classmethod
    def _links(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict) or not value:
            raise ScenarioError("", value, f"{show_value(value)} is not a table of named links",
                                'expected [links.NAME] tables, e.g. [links.core] from = "r1", to = "r2", rate = "10Mbps"')
        for name in value:
            try:
                check_name(name, "link", '[links.core]')
            except ScenarioError as exc:
                raise ScenarioError(clip_name(name), name, exc.problem, exc.allowed) from None
        return value

    @model_validator(mode="after")
    def _one_topology(self) -> Scenario:
        if self.link is None and self.links is None:
            raise ScenarioError("link", None, "required field missing",
                                'expected a [link] table (e.g. rate = "80Mbps"), or named [links.NAME] tables')
        if self.link is not None and self.links is not None:
            raise ScenarioError("links", sorted(self.links), "both [link] and [links.NAME] are given",
                                "give either the one-link form [link] or named links [links.NAME], not both")
        if self.link is not None:
            for index, group in enumerate(self.flows):
                if group.rtt is None:
                    raise ScenarioError(f"flows[{index}].rtt", None, "required field missing",
                                        'expected a duration, e.g. rtt = "25ms" (with [link] every flow group gives its RTT)')
        return self

    @property
    def topology(self) -> dict[str, Link]:
        """The links by name: ``{"link": link}`` for the one-link form, else ``links``."""
        if self.links is not None:
            return dict(self.links)
        assert self.link is not None
        return {ONE_LINK_NAME: self.link}

    @field_validator("flows", mode="before")
    @classmethod
    def _flows(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)) or not value:
            raise ScenarioError("", value, f"{show_value(value)} is not a non-empty list of flow groups",
                                'expected at least one [[flows]] table, e.g. cca = "cubic", rtt = "25ms"')
        return value

    @property
    def base_dir(self) -> Path | None:
        """Directory relative trace paths are looked up in (the scenario file's); not a TOML field."""
        return self._base_dir

    @base_dir.setter
    def base_dir(self, value: Path | str | None) -> None:
        self._base_dir = None if value is None else Path(value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Scenario):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def to_dict(self) -> dict[str, Any]:
        """The scenario as the TOML-shaped dict (TOML spellings, unset optional fields left out)."""
        data = self.model_dump(by_alias=True, exclude_none=True)
        tables = [data["link"]] if "link" in data else list(data["links"].values())
        for table in tables:
            if not table["schedule"]:
                del table["schedule"]
            q = table.get("qdisc")
            if isinstance(q, dict):
                table["qdisc"] = {"name": q["name"], **q["params"]} if q["params"] else q["name"]
        if not data.get("host"):
            data.pop("host", None)
        for group in data["flows"]:
            if isinstance(group["cca"], dict):
                group["cca"] = {"name": group["cca"]["name"], **group["cca"]["params"]}
            for switch, default in (("ecn", False), ("delayed_ack", True), ("sack", True)):
                if group.get(switch) == default:
                    group.pop(switch, None)
        return data

    def to_toml(self) -> str:
        """The scenario as TOML text; :func:`load_scenario` of it gives an equal scenario."""
        return tomli_w.dumps(self.to_dict())


def scenario_from_dict(data: dict[str, Any], base_dir: Path | str | None = None) -> Scenario:
    """Validate a TOML-shaped dict into a :class:`Scenario`.

    ``base_dir`` is where relative trace paths are looked up first. A trace is
    located and parsed here already, so a missing or malformed trace is
    reported at load time (:func:`cclab.resolve.resolve` checks again).
    """
    from .tomlio import check_depth

    check_depth(data)
    try:
        scenario = Scenario.model_validate(data)
    except RecursionError:  # pragma: no cover - check_depth bounds the nesting first
        raise ScenarioError("", None, "tables or lists are nested too deeply", "expected a scenario table") from None
    scenario.base_dir = base_dir
    for link in scenario.topology.values():
        if link.trace is not None:
            from .traces import load_trace

            load_trace(link.trace, scenario.base_dir)
    return scenario


#: Largest scenario or sweep file read (bytes); real ones are a few kB.
MAX_FILE_BYTES = 16 << 20


def read_text_file(path: Path, kind: str = "scenario") -> str:
    """The UTF-8 text of a scenario (or sweep) file; :class:`ScenarioError` naming the file otherwise."""
    allowed = f"expected a path to a {kind} .toml file"
    try:
        exists, is_dir = path.exists(), path.is_dir()
        if exists and not is_dir:
            with open(path, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(str(path), str(path), f"cannot be read ({exc.strerror})", allowed) from None
    except ValueError:  # a NUL byte in the path
        raise ScenarioError(repr(str(path)), str(path), "is not a usable file name (it holds a NUL byte)",
                            allowed) from None
    if not exists:
        raise ScenarioError(str(path), str(path), f"no such {kind} file", allowed)
    if is_dir:
        raise ScenarioError(str(path), str(path), f"is a directory, not a {kind} file", allowed)
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(str(path), str(path), f"is larger than {MAX_FILE_BYTES >> 20} MiB", allowed)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScenarioError(str(path), str(path), f"not UTF-8 text (byte {exc.start})", allowed) from None


def load_scenario(path: Path | str) -> Scenario:
    """Read a scenario TOML file. A missing ``name`` defaults to the file's stem.

    Errors (missing file, TOML syntax, any invalid field) are :class:`ScenarioError`
    attributed to the file.
    """
    path = Path(path)
    text = read_text_file(path, "scenario")
    data = tomlio.loads(text, str(path))
    data.setdefault("name", path.stem)
    try:
        return scenario_from_dict(data, path.resolve().parent)
    except ScenarioError as exc:
        raise exc.in_file(str(path)) from None
