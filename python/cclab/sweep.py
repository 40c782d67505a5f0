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
try:  # Python ≥ 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover — Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: seed used when neither the base scenario nor an axis sets one (the
#: scenario schema's default).
DEFAULT_SEED = 1

_ALLOWED_KEYS = {"base", "trials", "axes", "zip", "name", "description", "figures", "quick", "published"}
_QUICK_KEYS = {"trials", "axes", "zip", "base"}
_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")


class SweepError(ValueError):
    """A sweep file is malformed; the message names the file and the field."""


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
        raise SweepError(f"axis path must be a non-empty string, got {path!r}")
    out: list[str | int] = []
    for seg in path.split("."):
        m = _SEGMENT.match(seg)
        if not m:
            raise SweepError(
                f"axis \"{path}\": bad path segment {seg!r} "
                "(expected names and [index], e.g. link.buffer or flows[0].cca)"
            )
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return out


def set_path(d: dict[str, Any], path: str, value: Any, what: str | None = None) -> None:
    """Set `value` at `path` inside the raw scenario dict `d` (in place).

    Missing tables on the way are created; list indices must exist.
    """
    what = what or f"axis \"{path}\""
    keys = parse_path(path)
    cur: Any = d
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
                cur = cur[key]
        else:
            if not isinstance(cur, dict):
                raise SweepError(f"{what}: {_fmt(keys[:i])} is not a table")
            if last:
                cur[key] = value
            else:
                if key not in cur:
                    cur[key] = [] if isinstance(keys[i + 1], int) else {}
                cur = cur[key]


def _fmt(keys: list[str | int]) -> str:
    s = ""
    for k in keys:
        s += f"[{k}]" if isinstance(k, int) else (f".{k}" if s else k)
    return s or "the scenario"


# ---------------------------------------------------------------- loading


def load_sweep(path: str | Path) -> Sweep:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise SweepError(f"{path}: cannot read sweep file: {e.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{path}: not valid TOML: {e}") from None
    sweep = sweep_from_dict(data, path.parent, source=path)
    sweep.text = text
    return sweep


def sweep_from_dict(data: dict[str, Any], base_dir: str | Path, source: Path | None = None) -> Sweep:
    where = f"{source}: " if source else ""
    base_dir = Path(base_dir)
    unknown = set(data) - _ALLOWED_KEYS
    if unknown:
        raise SweepError(
            f"{where}unknown key(s) {', '.join(sorted(unknown))}; "
            f"a sweep file has {', '.join(sorted(_ALLOWED_KEYS))}"
        )
    if "base" not in data:
        raise SweepError(f"{where}missing `base` (a scenario file path or an inline [base] table)")
    base = data["base"]
    if isinstance(base, str):
        base_path = (base_dir / base).resolve()
        try:
            base = tomllib.loads(base_path.read_text())
        except OSError as e:
            raise SweepError(f"{where}base = {data['base']!r}: cannot read: {e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise SweepError(f"{where}base = {data['base']!r}: not valid TOML: {e}") from None
        base_dir = base_path.parent
    elif not isinstance(base, dict):
        raise SweepError(f"{where}base must be a path or a table, got {type(base).__name__}")
    quick = data.get("quick", {})
    if not isinstance(quick, dict) or set(quick) - _QUICK_KEYS:
        raise SweepError(f"{where}[quick] may only set {', '.join(sorted(_QUICK_KEYS))}")
    figures = data.get("figures", [])
    if not isinstance(figures, list) or not all(isinstance(f, dict) and "kind" in f for f in figures):
        raise SweepError(f"{where}[[figures]] entries must be tables with a `kind`")
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


def _check_shape(sweep: Sweep, source: Path | None) -> None:
    where = f"{source}: " if source else ""
    t = sweep.trials
    if isinstance(t, bool) or not isinstance(t, int) or t < 1:
        raise SweepError(f"{where}trials = {t!r}: must be an integer ≥ 1")
    for table in ("axes", "zip"):
        for name, values in getattr(sweep, table).items():
            parse_path(name)
            if not isinstance(values, list) or not values:
                raise SweepError(f"{where}{table} \"{name}\": must be a non-empty list of values")
    both = set(sweep.axes) & set(sweep.zip)
    if both:
        raise SweepError(f"{where}axis {sorted(both)[0]!r} is both in [axes] and [zip]")
    lengths = {name: len(v) for name, v in sweep.zip.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise SweepError(f"{where}[zip] axes vary together and need equal lengths: {detail}")


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


def validate(sweep: Sweep) -> list[tuple[Point, dict[str, Any]]]:
    """Check every axis value, then every point; return (point, resolved IR) pairs.

    Each axis value is first tried alone on the base scenario so that a bad
    value is reported with the axis that produced it; then every point is
    validated and resolved (some values are only wrong together, e.g. an RTT
    below twice the link delay), and an error names the point.
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
                raise SweepError(f"{where}axis \"{name}\" = {value!r}: {e}") from None
    out = []
    for p in points:
        try:
            out.append((p, resolve(scenario_from_dict(p.scenario, sweep.base_dir))))
        except ScenarioError as e:
            raise SweepError(f"{where}point {describe(p.params)}: {e}") from None
    return out


def describe(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items()) or "(base)"
