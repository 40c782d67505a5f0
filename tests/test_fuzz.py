"""Fuzzing scenario and sweep files (hypothesis): every input is either accepted or refused with
one line of bounded length — never a traceback, never a hang.

Three generators, each starting from valid files:

* ``test_fuzz_scenario_mutations`` — 1 to 4 mutations of a valid scenario (replace any value by
  a random one — numbers of any size, unit strings, names with markup and escape sequences,
  deep lists, tables, trace paths to non-trace files —, delete a field, add a field), written
  as TOML and put through ``cclab validate-scenario`` (load, resolve, resource estimate, the
  printed tables); a scenario that validates and is small is also run on the engine.
* ``test_fuzz_scenario_text`` — byte-level edits of a valid file's text (syntax errors, truncation,
  stray brackets and quotes, non-UTF-8 bytes).
* ``test_fuzz_sweep_mutations`` — mutations of a valid sweep file (axes, zip, trials, base,
  quick), loaded and planned (every point validated and estimated), and ``cclab sweep --dry-run``.

Budget: ``CCLAB_FUZZ_EXAMPLES`` examples per generator (default 200: ~20 s for all three, the CI
budget), with a fixed seed unless ``CCLAB_FUZZ_SEED`` is set. The release run is
``CCLAB_FUZZ_EXAMPLES=10000 python -m pytest -q tests/test_fuzz.py`` (docs in tests/README.md).
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
import tomli_w

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, event, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from cclab.cli import app  # noqa: E402
from cclab.errors import MAX_MESSAGE, ScenarioError, ScenarioWarning  # noqa: E402
from cclab.sweep import SweepError  # noqa: E402

EXAMPLES = int(os.environ.get("CCLAB_FUZZ_EXAMPLES", "200"))
SEED = int(os.environ.get("CCLAB_FUZZ_SEED", "20261124"))
#: One example (validation, printing, a small engine run) must finish within this (no hang).
PER_EXAMPLE_S = 20.0
#: The longest line an error may print ("error: " + a clipped message).
MAX_LINE = MAX_MESSAGE + len("error: ") + 10

#: CCLAB_FUZZ_SHRINK=0 reports the first failing example as found (faster than a minimal one).
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if os.environ.get("CCLAB_FUZZ_SHRINK", "1") != "0"
                                                          else [])  # fmt: skip
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False, print_blob=True,
                    suppress_health_check=list(HealthCheck), phases=PHASES)  # fmt: skip

runner = CliRunner()

#: The whole generator's time limit grows with the budget (about 60 ms an example at most, on average).
TIMEOUT = pytest.mark.timeout(max(600, int(EXAMPLES * 0.25)))

BASE_SCENARIOS: list[dict[str, Any]] = [
    {"name": "fuzz", "duration": "2s", "seed": 1, "sample_interval": "100ms", "measure": {"from": "500ms"},
     "link": {"rate": "20Mbps", "delay": "0ms", "buffer": "1bdp", "loss": 0.0, "aqm": "droptail"},
     "flows": [{"cca": "cubic", "rtt": "20ms"}, {"cca": {"name": "bbr", "cwnd_gain": 1.5}, "rtt": "40ms", "count": 2,
                                                 "stagger": "100ms"}]},
    {"name": "fuzz-trace", "duration": "1s", "link": {"trace": "traces/Verizon-LTE-short.down", "buffer": "64pkts",
                                                      "loss": {"model": "gilbert-elliott", "p": 0.01, "r": 0.5}},
     "flows": [{"cca": "reno", "rtt": "30ms", "bytes": "1MB", "rwnd": "64KiB"}]},
    {"name": "fuzz-schedule", "duration": "1s", "sample_interval": "50ms",
     "link": {"rate": "5Mbps", "schedule": [{"at": "300ms", "rate": "10Mbps"}, {"at": "600ms", "delay": "5ms"}]},
     "flows": [{"cca": {"name": "vegas", "alpha": 1, "beta": 3}, "rtt": "20ms", "start": "100ms", "stop": "900ms"},
               {"cca": {"name": "bbr3", "beta": 0.5}, "rtt": "30ms"}]},
]  # fmt: skip

UNITS = ["bps", "kbps", "Mbps", "Gbps", "Tbps", "MBps", "ns", "us", "µs", "ms", "s", "min", "h", "B", "KB", "MB", "GB",
         "KiB", "GiB", "pkts", "bdp", "%", "", " ", "Mpbs"]  # fmt: skip
NAMES = ["cubic", "reno", "bbr", "bbr2", "bbr3", "vegas", "bbr_shallow", "droptail", "gilbert-elliott", "bernoulli",
         "x[/]y", "[bold]b[/bold]", "\x1b[31mred\x1b[0m", "\u202eevil", "tab\there", "a\nb", "", " ",
         "traces/Verizon-LTE-short.down", "Verizon-LTE-short.down", "/etc/passwd", "/dev/zero", "/dev/null", "/",
         ".", "..", "~", "~nobody/x", "x" * 300, "a\x00b", "$\\frac$", "%s%n", "{0}", "'; DROP TABLE", "nan", "inf",
         "-1s", "+1s", "1e999s", "0.000000000000000000000000000000000001s", "1" * 60 + "ms"]  # fmt: skip
KEYS = ["name", "duration", "seed", "sample_interval", "mss", "measure", "from", "to", "link", "rate", "trace",
        "schedule", "at", "delay", "buffer", "loss", "aqm", "model", "p", "r", "h", "k", "flows", "cca", "count", "rtt",
        "start", "stagger", "stop", "bytes", "rwnd", "params", "beta", "c", "cwnd_gain", "hystart", "alpha",
        "base", "trials", "axes", "zip", "quick", "figures", "kind", "", " ", "x[/]", "\x1b[2J", "k" * 200]  # fmt: skip

number_text = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text("0123456789.eE+-_", min_size=1, max_size=40),
    st.integers(0, 10**6).map(lambda n: f"1e{n}"),
    st.integers(0, 10**6).map(lambda n: f"1e-{n}"),
)
unit_string = st.builds(lambda n, u: n + u, number_text, st.sampled_from(UNITS))
scalar = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**53 + 1, 2**64, -(2**63), 10**300, 10**4000]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    unit_string,
    st.sampled_from(NAMES),
)


def _deep(depth: int) -> Any:
    v: Any = "1Mbps"
    for _ in range(depth):
        v = [v]
    return v


#: Well-formed values (a plausible number and a real unit, a real algorithm): mutations that keep a
#: scenario valid reach the cross-field checks, the estimate and the engine, not only the first error.
plausible = st.one_of(
    st.builds(lambda n, u: f"{n}{u}", st.one_of(st.integers(0, 3000).map(str),
                                                st.floats(0, 100, allow_nan=False).map(lambda x: f"{x:.3g}")),
              st.sampled_from(["Mbps", "kbps", "Gbps", "ms", "s", "us", "KB", "MB", "pkts", "bdp", "%"])),
    st.sampled_from(["cubic", "reno", "bbr", "bbr2", "bbr3", "vegas", "bbr_shallow"]),
    st.floats(0, 1, allow_nan=False),
    st.integers(1, 20),
    st.builds(lambda n, k, v: {"name": n, k: v}, st.sampled_from(["cubic", "bbr", "bbr3", "vegas"]),
              st.sampled_from(["beta", "cwnd_gain", "alpha", "c", "hystart", "probe_rtt_interval_ms"]),
              st.one_of(st.floats(-1, 100, allow_nan=False), st.integers(-5, 10**5), st.booleans())),
)  # fmt: skip

value = st.one_of(
    plausible,
    plausible,
    scalar,
    st.recursive(scalar, lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.sampled_from(KEYS), kids,
                                                                                            max_size=4)),
                 max_leaves=8),  # fmt: skip
    st.integers(25, 60).map(_deep),
    st.just("y" * 200_000),
    st.builds(lambda: ["1bdp"] * 50_000),  # a fresh list each time: mutations must not change the strategy
)

TRACE_CONTENT = st.one_of(
    st.binary(max_size=200),
    st.lists(st.integers(-5, 10**20).map(str), min_size=0, max_size=20).map(lambda xs: "\n".join(xs).encode()),
    st.just(b"root:x:0:0:root:/root:/bin/bash\nsecret\n"),
)


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside a scenario dict (dict keys and list indices)."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, (*prefix, i))
    return out


_NUMBER_UNIT = re.compile(r"^([0-9.]+)([A-Za-zµ%]+)$")


def tweak(old: Any, draw: Any) -> Any:
    """A value of the same kind as ``old``: another number with the same unit, another algorithm, …"""
    if isinstance(old, str) and (m := _NUMBER_UNIT.match(old)):
        number = draw(st.one_of(st.integers(0, 10**4).map(str), st.floats(0, 1000, allow_nan=False).map(lambda x: f"{x:.4g}"),
                                st.sampled_from(["0", "0.5", "1e3", "1e-3", "999999999999"])))  # fmt: skip
        return number + m.group(2)
    if isinstance(old, str):
        return draw(st.sampled_from(["cubic", "reno", "bbr", "bbr2", "bbr3", "vegas", "bbr_shallow", old]))
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return draw(st.one_of(st.integers(-3, 3 * max(1, old)), st.sampled_from([0, 1, 2**64, -1])))
    if isinstance(old, float):
        return draw(st.one_of(st.floats(-0.1, 1.1, allow_nan=False), st.sampled_from([0.0, 1.0, 1e-9])))
    return draw(value)


def mutate(data: Any, draw: Any) -> Any:
    """One mutation of ``data`` (in place, also returned): tweak, replace, delete or add somewhere."""
    targets = paths(data)
    op = draw(st.sampled_from(["tweak", "tweak", "tweak", "replace", "replace", "delete", "add"]))
    path = draw(st.sampled_from(targets)) if targets else ()
    parent: Any = data
    for part in path[:-1]:
        parent = parent[part]
    if op == "add" or not path:
        node = parent if isinstance(parent, dict) else data
        node[draw(st.sampled_from(KEYS))] = draw(value)
    elif op == "delete":
        del parent[path[-1]]
    elif op == "tweak":
        parent[path[-1]] = tweak(parent[path[-1]], draw)
    else:
        parent[path[-1]] = draw(value)
    return data


def check_cli(result, allowed_codes=(0, 2)) -> None:
    """The CLI ended as designed: exit 0, or one ``error:`` line of bounded length (exit 2), no traceback."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        tb = "".join(traceback.format_exception(result.exception))
        raise AssertionError(f"traceback from the CLI:\n{tb[-3000:]}")
    assert result.exit_code in allowed_codes, result.output[-2000:]
    if result.exit_code == 2:
        lines = [ln for ln in result.output.splitlines() if ln.strip()]
        assert len(lines) == 1, f"{len(lines)} lines:\n" + "\n".join(x[:300] for x in lines[:20])
        assert lines[0].startswith("error: "), lines[0][:500]
        assert len(lines[0]) <= MAX_LINE, f"an error line of {len(lines[0])} characters: {lines[0][:300]}…"
    assert "\x1b" not in result.output, "a raw escape character reached the terminal"


def check_error(e: BaseException) -> None:
    message = str(e)
    assert "\n" not in message and len(message) <= MAX_MESSAGE, f"{len(message)} characters: {message[:300]}"


def dump(data: dict[str, Any]) -> str | None:
    try:
        return tomli_w.dumps(data)
    except (TypeError, ValueError, RecursionError):  # not representable as TOML: nothing to test
        return None


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def run_small(ir: dict[str, Any]) -> None:
    """Run a valid scenario on the engine when it is small (the estimate keeps this quick)."""
    from cclab import _native, limits

    est = limits.estimate(ir)
    if est.events < 3e5 and est.rows < 5e4 and est.samples < 5e4 and hasattr(_native, "simulate"):
        _native.simulate(json.dumps(ir))
        event("ran on the engine")


def scenario_example(workdir: Path, text: str | bytes, trace: bytes | None = None) -> None:
    f = workdir / "s.toml"
    f.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    if trace is not None:
        (workdir / "fuzz.trace").write_bytes(trace)
    t0 = time.monotonic()
    check_cli(runner.invoke(app, ["validate-scenario", str(f)]))
    from cclab import api

    try:
        _sc, _text, ir = api.prepare(f)
    except ScenarioError as e:
        check_error(e)
        event("refused")  # --hypothesis-show-statistics shows how the examples ended
    else:
        event("accepted")
        run_small(ir)
    assert time.monotonic() - t0 < PER_EXAMPLE_S, f"one example took {time.monotonic() - t0:.1f} s"


@TIMEOUT
@seed(SEED)
@SETTINGS
@given(data=st.data())
def test_fuzz_scenario_mutations(workdir, data):
    scenario = copy.deepcopy(data.draw(st.sampled_from(BASE_SCENARIOS)))
    for _ in range(data.draw(st.sampled_from([1, 1, 1, 2, 2, 3, 4]))):  # mostly one: valid variants run further
        scenario = mutate(scenario, data.draw)
    trace = None
    if data.draw(st.integers(0, 9)) == 0 and isinstance(scenario.get("link"), dict):
        scenario["link"].pop("rate", None)
        scenario["link"].pop("schedule", None)
        scenario["link"]["trace"] = "fuzz.trace"
        trace = data.draw(TRACE_CONTENT)
    text = dump(scenario)
    if text is not None:
        scenario_example(workdir, text, trace)


EDIT_TEXT = st.one_of(st.sampled_from(["[", "]", "{", "}", '"', "'", "=", "\n", "[[", "]]", ".", ",", "#", "\\", "\x00",
                                       "\x1b[31m", "[/]", "1e999", "-"]),
                      st.text(max_size=10))  # fmt: skip


@TIMEOUT
@seed(SEED)
@SETTINGS
@given(data=st.data())
def test_fuzz_scenario_text(workdir, data):
    text = tomli_w.dumps(data.draw(st.sampled_from(BASE_SCENARIOS))).encode()
    for _ in range(data.draw(st.integers(1, 5))):
        pos = data.draw(st.integers(0, len(text)))
        op = data.draw(st.sampled_from(["insert", "delete", "truncate", "byte"]))
        if op == "insert":
            text = text[:pos] + data.draw(EDIT_TEXT).encode("utf-8", "surrogatepass") + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + data.draw(st.integers(1, 20)):]
        elif op == "truncate":
            text = text[:pos]
        else:
            text = text[:pos] + bytes([data.draw(st.integers(0, 255))]) + text[pos + 1:]
    scenario_example(workdir, text)


BASE_SWEEP: dict[str, Any] = {
    "name": "fuzz-sweep", "trials": 2,
    "base": {"name": "b", "duration": "1s", "sample_interval": "100ms", "link": {"rate": "10Mbps", "buffer": "1bdp"},
             "flows": [{"cca": "cubic", "rtt": "20ms"}, {"cca": "reno", "rtt": "20ms"}]},
    "axes": {"link.buffer": ["0.5bdp", "2bdp"], "flows[1].cca": ["reno", "bbr"]},
    "zip": {"link.rate": ["5Mbps", "10Mbps"], "flows[0].rtt": ["10ms", "30ms"]},
    "quick": {"trials": 1, "axes": {"link.buffer": ["1bdp"]}, "base": {"duration": "500ms"}},
    "figures": [{"kind": "line", "x": "link.buffer", "y": "*.share"}],
}  # fmt: skip

AXIS_PATHS = st.one_of(
    st.sampled_from(["link.buffer", "link.rate", "link.loss", "flows[0].cca", "flows[1].count", "flows[5].rtt",
                     "measure.from", "seed", "sample_interval", "link", "flows", "flows[0]", "link.schedule[0].rate",
                     "", ".", "a..b", "x[", "flows[99999999999999999999].rtt", "\x1b[31m", "k" * 500]),
    st.text(max_size=30),
)  # fmt: skip


@TIMEOUT
@seed(SEED)
@SETTINGS
@given(data=st.data())
def test_fuzz_sweep_mutations(workdir, data):
    from cclab.runner import plan
    from cclab.sweep import load_sweep

    sweep = copy.deepcopy(BASE_SWEEP)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["tree", "axis", "axis", "values"]))
        if kind == "tree":
            sweep = mutate(sweep, data.draw)
        elif kind == "axis" and isinstance(sweep.get("axes"), dict):
            sweep["axes"][data.draw(AXIS_PATHS)] = data.draw(st.lists(value, min_size=0, max_size=4))
        elif isinstance(sweep.get("axes"), dict) and sweep["axes"]:
            key = data.draw(st.sampled_from(sorted(sweep["axes"], key=str)))
            sweep["axes"][key] = data.draw(st.one_of(value, st.lists(value, max_size=5)))
    text = dump(sweep)
    if text is None:
        return
    f = workdir / "sweep.toml"
    f.write_text(text)
    t0 = time.monotonic()
    try:
        sw = load_sweep(f)
        for variant in (sw, sw.quick_variant()):
            if variant.n_points <= 500:  # planning validates every point; larger grids are legitimately slow
                with warnings.catch_warnings():  # a scenario warning is output, not a failure of the input's check
                    warnings.simplefilter("ignore", ScenarioWarning)
                    plan(variant)
    except (SweepError, ScenarioError) as e:
        check_error(e)
        event("refused")
    else:
        event("accepted")
        if sw.n_points <= 500:
            check_cli(runner.invoke(app, ["sweep", str(f), "--dry-run"]))
    assert time.monotonic() - t0 < PER_EXAMPLE_S, f"one example took {time.monotonic() - t0:.1f} s"


def test_generators_reach_the_interesting_places(workdir):
    """The strategies above produce what they claim (guards against a generator that silently only makes noise)."""
    assert math.isnan(float("nan"))
    assert len(paths(BASE_SCENARIOS[0])) > 20 and len(paths(BASE_SWEEP)) > 20
    assert dump({"x": _deep(60)}) is not None
