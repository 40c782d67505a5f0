"""Sweep files: a base scenario, axes over any scenario field, and trials.

A sweep file (TOML; the contract is docs/sweeps.md):

```toml
base = "scenario.toml"          # or an inline [base] table
trials = 5                      # trial i runs with seed = base seed + i
[axes]                          # crossed: the full grid, in file order
"link.buffer" = ["0.25bdp", "1bdp", "8bdp"]
"flows[0].cca" = ["bbr", "cubic"]
[zip]                           # optional: axes that vary together
"link.rate" = ["40Mbps", "80Mbps"]
"flows[0].rtt" = ["10ms", "50ms"]
```

Optional extras: `name`, `description`, `[[figures]]` (figure specs that
`cclab plot`/`cclab report` draw, see `cclab.figures`) and a `[quick]` table
(`trials`, `[quick.axes]`, `[quick.zip]`, `[quick.base]` with dotted paths)
that `--quick` applies on top of the file (used by the presets), and
`[[published]]` (a preset's published values, read by `cclab.presets.published`;
running a sweep ignores it).

Axes are applied to the *raw* scenario dict before validation, so a bad
value gets the schema's own error, prefixed with the axis that produced it.
A parameter of a `cca` or `qdisc` table may be written beside the name
(`flows[0].cca.beta`) or in its `params` table (`flows[0].cca.params.beta`):
an axis in either spelling replaces the base's value in both, so the axis's
value is the one that runs (a scenario giving both spellings is an error).
Paths: dotted keys with list indices, e.g. `link.buffer`, `flows[1].count`,
`link.schedule[0].rate`, `measure.from`. Axes are applied shallowest first,
so an axis over a whole table (`link`) can be refined by a deeper one
(`link.loss`).

Seeds: trial i of a point runs with `seed = s + i`, where `s` is the point's
`seed` field (the base scenario's, or an axis over `seed`), or 1 — the
schema's default — when absent. Trial 0 therefore is exactly the base
scenario, and seeds never depend on the order or set of other points.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: seed used when neither the base scenario nor an axis sets one (the
#: scenario schema's default).
DEFAULT_SEED = 1

_ALLOWED_KEYS = {"base", "trials", "axes", "zip", "name", "description", "figures", "quick", "published"}
_QUICK_KEYS = {"trials", "axes", "zip", "base"}
_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")


#: Most trials per point, and most runs (points × trials) a sweep file may expand to.
MAX_TRIALS = 10_000
MAX_POINTS = 1_000_000


class SweepError(ValueError):
    """A sweep file is malformed; the message (one line, at most 500 characters, control
    characters escaped) names the file and the field."""

    def __init__(self, message: str):
        from cclab.errors import clip, printable

        super().__init__(clip(printable(" ".join(str(message).split()))))


def _show(value: Any, limit: int = 60) -> str:
    from cclab.errors import show_value

    return show_value(value, limit)


def _axis(name: Any) -> str:
    """An axis path for a message: in double quotes as in the sweep file, cut, control characters escaped."""
    from cclab.errors import clip, printable

    return f'"{clip(printable(str(name)), 60)}"'


@dataclass(frozen=True)
class Point:
    """One run of a sweep: the axis values, the trial and the scenario dict."""

    index: int  # position in the expansion (grid order, trials innermost)
    params: dict[str, Any]  # axis path -> value, in axis order
    trial: int
    seed: int
    scenario: dict[str, Any]  # raw scenario dict, axes and seed applied


@dataclass
class Sweep:
    base: dict[str, Any]
    base_dir: Path  # relative paths in the base scenario resolve from here
    trials: int = 1
    axes: dict[str, list[Any]] = field(default_factory=dict)
    zip: dict[str, list[Any]] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    figures: list[dict[str, Any]] = field(default_factory=list)
    quick: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None  # the sweep file, when loaded from one
    text: str | None = None  # its text, copied into the sweep dir

    @property
    def axis_names(self) -> list[str]:
        return [*self.axes, *self.zip]

    @property
    def n_points(self) -> int:
        n = 1
        for values in self.axes.values():
            n *= len(values)
        if self.zip:
            n *= len(next(iter(self.zip.values())))
        return n * self.trials

    def quick_variant(self) -> "Sweep":
        """The sweep with its `[quick]` overrides applied (itself if none)."""
        if not self.quick:
            return self
        q = self.quick
        base = copy.deepcopy(self.base)
        for path, value in q.get("base", {}).items():
            set_path(base, path, copy.deepcopy(value), what=f"quick.base \"{path}\"")
        if q.get("base"):
            _check_quick_base(self, base)
        axes = dict(self.axes)
        axes.update(q.get("axes", {}))
        zipped = dict(q.get("zip", self.zip))
        out = Sweep(
            base=base,
            base_dir=self.base_dir,
            trials=q.get("trials", self.trials),
            axes=axes,
            zip=zipped,
            name=self.name,
            description=self.description,
            figures=self.figures,
            quick={},
            source=self.source,
        )
        _check_shape(out, self.source)
        out.text = f"# the [quick] variant of {self.source or 'a sweep'}\n" + out.to_toml()
        return out

    def to_toml(self) -> str:
        """The sweep as a sweep file (inline base); loading it gives the same points."""
        import tomli_w

        doc: dict[str, Any] = {k: v for k, v in (("name", self.name), ("description", self.description)) if v}
        doc["trials"] = self.trials
        doc["base"] = _drop_none(self.base)
        if self.axes:
            doc["axes"] = self.axes
        if self.zip:
            doc["zip"] = self.zip
        if self.figures:
            doc["figures"] = self.figures
        if self.quick:
            doc["quick"] = self.quick
        return tomli_w.dumps(doc)


def _drop_none(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _drop_none(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_none(x) for x in v]
    return v


# ---------------------------------------------------------------- paths


def parse_path(path: str) -> list[str | int]:
    """`flows[0].cca` -> ["flows", 0, "cca"]."""
    if not isinstance(path, str) or not path:
        raise SweepError(f"axis path must be a non-empty string, got {_show(path)}")
    out: list[str | int] = []
    for seg in path.split("."):
        m = _SEGMENT.match(seg)
        if not m:
            raise SweepError(
                f"axis {_axis(path)}: bad path segment {_show(seg, 40)} "
                "(expected names and [index], e.g. link.buffer or flows[0].cca)"
            )
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return out


def set_path(d: dict[str, Any], path: str, value: Any, what: str | None = None) -> None:
    """Set `value` at `path` inside the raw scenario dict `d` (in place).

    Missing tables on the way are created; list indices must exist.
    """
    what = what or f"axis {_axis(path)}"
    keys = parse_path(path)
    cur: Any = d
    parents: list[Any] = []  # the containers above `cur`, outermost first
    for i, key in enumerate(keys):
        last = i == len(keys) - 1
        if isinstance(key, int):
            if not isinstance(cur, list):
                raise SweepError(f"{what}: {_fmt(keys[:i])} is not a list")
            if key >= len(cur):
                raise SweepError(
                    f"{what}: index {key} out of range, the base scenario has "
                    f"{len(cur)} entr{'y' if len(cur) == 1 else 'ies'} in {_fmt(keys[:i])}"
                )
            if last:
                cur[key] = value
            else:
                parents.append(cur)
                cur = cur[key]
        else:
            if not isinstance(cur, dict):
                raise SweepError(f"{what}: {_fmt(keys[:i])} is not a table")
            if last:
                _drop_other_spelling(cur, keys, i, value, parents)
                cur[key] = value
            else:
                if key not in cur:
                    cur[key] = [] if isinstance(keys[i + 1], int) else {}
                parents.append(cur)
                cur = cur[key]


#: Tables whose parameters sit beside the name or in a ``params`` table (``cca``, ``qdisc``;
#: ``cclab.scenario._flatten_named_table``): a parameter given both ways is a scenario error.
_NAMED_TABLES = ("cca", "qdisc")


def _drop_other_spelling(cur: dict[str, Any], keys: list[str | int], i: int, value: Any, parents: list[Any]) -> None:
    """Before a path sets a parameter of a ``cca``/``qdisc`` table, remove the base's other spelling of it.

    ``flows[0].cca.params.beta`` over a base with ``cca = { name = "cubic", beta = 0.7 }`` replaces
    the base's ``beta`` (the axis's value runs), and ``flows[0].cca.beta`` over a base with
    ``params = { beta = 0.7 }`` replaces ``params.beta``; an axis setting a whole ``params`` table
    replaces the base's parameters beside the name that it names. Two axes giving one parameter
    both ways are refused when the sweep is loaded (:func:`_check_shape`).
    """
    key = keys[i]
    if i >= 1 and keys[i - 1] in _NAMED_TABLES and key not in ("name", "params"):
        params = cur.get("params")
        if isinstance(params, dict) and key in params:  # table.K over a base with table.params.K
            cur["params"] = {k: v for k, v in params.items() if k != key}
    elif i >= 1 and keys[i - 1] in _NAMED_TABLES and key == "params" and isinstance(value, dict):
        for name in value:  # a whole table.params over a base with table.K
            if name not in ("name", "params"):
                cur.pop(name, None)
    elif i >= 2 and keys[i - 1] == "params" and keys[i - 2] in _NAMED_TABLES and key not in ("name", "params"):
        table = parents[-1]  # table.params.K over a base with table.K
        if isinstance(table, dict):
            table.pop(key, None)


def _spelling(path: str) -> str:
    """An axis path with a ``cca``/``qdisc`` parameter in one spelling: ``….cca.params.beta`` → ``….cca.beta``."""
    keys = parse_path(path)
    if len(keys) >= 3 and keys[-2] == "params" and keys[-3] in _NAMED_TABLES and keys[-1] not in ("name", "params"):
        return _fmt([*keys[:-2], keys[-1]])
    return _fmt(keys)


def _fmt(keys: list[str | int]) -> str:
    s = ""
    for k in keys:
        s += f"[{k}]" if isinstance(k, int) else (f".{k}" if s else k)
    return s or "the scenario"


# ---------------------------------------------------------------- loading


def _read_toml(path: Path, kind: str) -> tuple[str, dict[str, Any]]:
    """The text and data of a TOML file; a :class:`SweepError` (one line) for any problem."""
    from cclab import tomlio
    from cclab.errors import ScenarioError
    from cclab.scenario import read_text_file

    try:
        text = read_text_file(path, kind)
        return text, tomlio.loads(text, str(path))
    except ScenarioError as e:
        raise SweepError(str(e)) from None


def load_sweep(path: str | Path) -> Sweep:
    path = Path(path)
    text, data = _read_toml(path, "sweep")
    sweep = sweep_from_dict(data, path.parent, source=path)
    sweep.text = text
    return sweep


def sweep_from_dict(data: dict[str, Any], base_dir: str | Path, source: Path | None = None) -> Sweep:
    from cclab.errors import ScenarioError
    from cclab.tomlio import check_depth

    where = f"{source}: " if source else ""
    base_dir = Path(base_dir)
    if not isinstance(data, dict):
        raise SweepError(f"{where}a sweep file is a table, got {_show(data)}")
    try:
        check_depth(data)
    except ScenarioError as e:
        raise SweepError(f"{where}{e}") from None
    unknown = sorted(str(k) for k in set(data) - _ALLOWED_KEYS)
    if unknown:
        raise SweepError(
            f"{where}unknown key(s) {', '.join(_show(k, 40) for k in unknown[:5])}; "
            f"a sweep file has {', '.join(sorted(_ALLOWED_KEYS))}"
        )
    if "base" not in data:
        raise SweepError(f"{where}missing `base` (a scenario file path or an inline [base] table)")
    base = data["base"]
    if isinstance(base, str):
        try:
            base_path = (base_dir / base).resolve()
        except (OSError, ValueError, RuntimeError):
            raise SweepError(f"{where}base = {_show(base)}: not a usable file name; "
                             "expected a path to a scenario .toml file") from None
        _text, base = _read_toml(base_path, "scenario")
        base_dir = base_path.parent
    elif not isinstance(base, dict):
        raise SweepError(f"{where}base = {_show(base)}: expected a path to a scenario file or an inline [base] table")
    quick = data.get("quick", {})
    if not isinstance(quick, dict) or set(quick) - _QUICK_KEYS:
        raise SweepError(f"{where}[quick] may only set {', '.join(sorted(_QUICK_KEYS))}")
    for key in ("axes", "zip", "base"):
        if not isinstance(quick.get(key, {}), dict):
            raise SweepError(f"{where}quick.{key} = {_show(quick[key])}: expected a table")
    for key in ("axes", "zip"):
        if not isinstance(data.get(key, {}), dict):
            raise SweepError(f"{where}{key} = {_show(data[key])}: expected a table of axis path = [values]")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise SweepError(f"{where}{key} = {_show(data[key])}: expected a string")
    figures = data.get("figures", [])
    if not isinstance(figures, list) or not all(isinstance(f, dict) and "kind" in f for f in figures):
        raise SweepError(f"{where}[[figures]] entries must be tables with a `kind`")
    if any("name" in f for f in figures):
        from cclab.figures import _name_error, check_spec_name

        for f in figures:
            if "name" in f and check_spec_name(f["name"]) is not None:
                raise SweepError(str(_name_error(f["name"], where)))
    if figures:  # each entry's kind and parameters now, not when `cclab plot` draws it after the runs
        from cclab.figures import FigureError, check_spec

        for i, f in enumerate(figures):
            try:
                check_spec(f)
            except FigureError as e:
                raise SweepError(f"{where}[[figures]] entry {i + 1}: {e}") from None
    sweep = Sweep(
        base=base,
        base_dir=base_dir,
        trials=data.get("trials", 1),
        axes=dict(data.get("axes", {})),
        zip=dict(data.get("zip", {})),
        name=data.get("name"),
        description=data.get("description"),
        figures=figures,
        quick=quick,
        source=source,
    )
    _check_shape(sweep, source)
    if quick:
        sweep.quick_variant()  # validates the overrides' shape now
    return sweep


def _check_quick_base(sweep: Sweep, quick_base: dict[str, Any]) -> None:
    """A ``[quick.base]`` that breaks a base scenario which is valid on its own is reported as such (not
    as an error of whichever axis is tried first)."""
    from cclab.errors import ScenarioError
    from cclab.scenario import scenario_from_dict

    try:
        scenario_from_dict(copy.deepcopy(sweep.base), sweep.base_dir)
    except ScenarioError:
        return  # the base needs its axes: the points' validation says what is wrong
    try:
        scenario_from_dict(copy.deepcopy(quick_base), sweep.base_dir)
    except ScenarioError as e:
        where = f"{sweep.source}: " if sweep.source else ""
        raise SweepError(f"{where}[quick.base]: {e}") from None


def validate_quick(sweep: Sweep) -> None:
    """Validate the ``[quick]`` variant's points too (``cclab sweep`` without ``--quick``): a file is
    checked whole before anything runs, not only the part this run uses."""
    if sweep.quick:
        try:
            validate(sweep.quick_variant())
        except SweepError as e:
            where = f"{sweep.source}: " if sweep.source else ""
            msg = str(e).removeprefix(where)
            raise SweepError(f"{where}[quick] {msg}") from None


def _check_shape(sweep: Sweep, source: Path | None) -> None:
    where = f"{source}: " if source else ""
    t = sweep.trials
    if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= MAX_TRIALS:
        raise SweepError(f"{where}trials = {_show(t)}: expected an integer from 1 to {MAX_TRIALS}")
    for table in ("axes", "zip"):
        for name, values in getattr(sweep, table).items():
            try:
                parse_path(name)
            except SweepError as e:
                raise SweepError(f"{where}{table}: {e}") from None
            if not isinstance(values, list) or not values:
                raise SweepError(f"{where}{table} {_axis(name)}: must be a non-empty list of values, "
                                 f"got {_show(values)}")
    both = set(sweep.axes) & set(sweep.zip)
    if both:
        raise SweepError(f"{where}axis {_axis(sorted(both)[0])} is both in [axes] and [zip]")
    seen: dict[str, str] = {}
    for name in [*sweep.axes, *sweep.zip]:
        other = seen.setdefault(_spelling(name), name)
        if other != name:
            raise SweepError(f"{where}axes {_axis(other)} and {_axis(name)} set the same parameter, "
                             "beside the name and in params; give one of them")
    lengths = {name: len(v) for name, v in sweep.zip.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{_axis(k)} has {n}" for k, n in list(lengths.items())[:4])
        raise SweepError(f"{where}[zip] axes vary together and need equal lengths: {detail}")
    runs = t
    for values in sweep.axes.values():
        runs *= len(values)
    runs *= max(lengths.values(), default=1)
    if runs > MAX_POINTS:
        raise SweepError(f"{where}the axes and trials expand to {runs:.3g} runs, more than {MAX_POINTS} "
                         "(a limit of the sweep planner); split the study into several sweep files")


# ---------------------------------------------------------------- expansion


def trial_seed(base_seed: int, trial: int) -> int:
    """The seed of trial `trial` of a point whose own seed is `base_seed`."""
    return int(base_seed) + int(trial)


def expand(sweep: Sweep) -> list[Point]:
    """All points × trials, in grid order (first axis slowest, trials innermost).

    Raises SweepError when an axis path does not fit the base scenario.
    """
    grid_axes = list(sweep.axes.items())
    zip_len = len(next(iter(sweep.zip.values()))) if sweep.zip else 1
    combos = itertools.product(*(values for _, values in grid_axes), range(zip_len))
    points: list[Point] = []
    for combo in combos:
        params = {name: value for (name, _), value in zip(grid_axes, combo[:-1])}
        for name, values in sweep.zip.items():
            params[name] = values[combo[-1]]
        scenario = apply_params(sweep.base, params)
        base_seed = scenario.get("seed", DEFAULT_SEED)
        if isinstance(base_seed, bool) or not isinstance(base_seed, int):
            raise SweepError(f"point {describe(params)}: seed = {_show(base_seed)} is not an integer; expected an "
                             "integer from 0 to 2^64 − 1 (trial i runs with seed + i)")
        for trial in range(sweep.trials):
            s = copy.deepcopy(scenario) if trial < sweep.trials - 1 else scenario
            seed = trial_seed(base_seed, trial)
            s["seed"] = seed
            points.append(Point(len(points), dict(params), trial, seed, s))
    return points


def apply_params(base: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `base` with every axis value set (shallowest path first)."""
    out = copy.deepcopy(base)
    for name in sorted(params, key=lambda p: len(parse_path(p))):
        set_path(out, name, copy.deepcopy(params[name]))
    return out


def validate(sweep: Sweep) -> list[tuple[Point, Any, dict[str, Any]]]:
    """Check every axis value, then every point; return (point, Scenario, resolved IR) triples.

    Each axis value is first tried alone on the base scenario so that a bad
    value is reported with the axis that produced it; then every point is
    validated and resolved (some values are only wrong together, e.g. an RTT
    below twice the link delay), and an error names the point. This is the
    only time a point is resolved: the runner sends the IR to the workers.
    """
    from cclab.errors import ScenarioError
    from cclab.resolve import resolve
    from cclab.scenario import scenario_from_dict

    where = f"{sweep.source}: " if sweep.source else ""
    try:
        points = expand(sweep)
    except SweepError as e:
        raise SweepError(f"{where}{e}") from None
    for name, values in [*sweep.axes.items(), *sweep.zip.items()]:
        for value in values:
            try:
                scenario_from_dict(apply_params(sweep.base, {name: value}), sweep.base_dir)
            except ScenarioError as e:
                if len(sweep.zip) > 1 and name in sweep.zip:
                    break  # zipped values may only be valid together: checked below
                raise SweepError(f"{where}axis {_axis(name)} = {_show(value, 40)}: {e}") from None
    out = []
    for p in points:
        try:
            scenario = scenario_from_dict(p.scenario, sweep.base_dir)
            out.append((p, scenario, resolve(scenario)))
        except ScenarioError as e:
            raise SweepError(f"{where}point {describe(p.params)}: {e}") from None
    return out


def describe(params: dict[str, Any]) -> str:
    from cclab.errors import clip, printable

    return ", ".join(f"{clip(printable(str(k)), 40)}={_show(v, 40)}" for k, v in params.items()) or "(base)"
