"""Every bad input is one clear line: resource limits, empty measure windows, names printed
safely, traces that are not traces, numbers that would be rounded, deep nesting, huge values.

Each test names the behaviour cclab had before (in its docstring) that made it fail then.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import one_line_error
from typer.testing import CliRunner

from cclab.cli import app
from cclab.errors import MAX_MESSAGE, ScenarioError
from cclab.resolve import resolve
from cclab.scenario import load_scenario, scenario_from_dict

runner = CliRunner()

SCENARIO = """\
name = {name}
duration = "{duration}"
sample_interval = "{interval}"
{extra}
[link]
{link}
[[flows]]
cca = "cubic"
rtt = "20ms"
count = {count}
"""


def write(tmp_path: Path, name: str = '"t"', duration: str = "10s", interval: str = "10ms", count: int = 1,
          link: str = 'rate = "10Mbps"', extra: str = "") -> Path:  # fmt: skip
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO.format(name=name, duration=duration, interval=interval, count=count, link=link, extra=extra))
    return p


# ---------------------------------------------------------------- resource limits


def test_one_microsecond_samples_for_10000_flows_are_refused_with_an_estimate(tmp_path):
    """Before: validation passed and the engine aborted the process (SIGABRT) allocating 10¹¹ rows.
    (Every flow at every 1 µs sample, asked for explicitly: by default the per-flow series of so
    large a run are coarsened, docs/record.md "Records at scale".)"""
    p = write(tmp_path, interval="1us", count=10_000, extra='record = { flows = "1us" }')
    line = one_line_error(runner.invoke(app, ["run", str(p), "--out", str(tmp_path / "r")]),
                          "sample_interval: 1us", "too large", "estimated memory ~100 TB", "exceeds the limit of 8 GB",
                          "100,000,000,000 rows", "--allow-large")  # fmt: skip
    assert len(line) < MAX_MESSAGE + 20
    assert not (tmp_path / "r").exists()
    dry = runner.invoke(app, ["run", str(p), "--dry-run"])
    assert dry.exit_code == 2 and "estimate: 10,000,000 samples × flows = 100,000,000,000 rows" in dry.output
    assert "memory ~100 TB" in dry.output


def test_too_many_flows_for_memory_are_refused_naming_the_flows(tmp_path, monkeypatch):
    """Before: the flows' own state was in the estimate but the error blamed the buffer or the sample interval."""
    from cclab import limits

    monkeypatch.setitem(limits.LIMITS, "memory_bytes", 400 * 10**6)  # 400 MB: ~12 500 flows at 20 kB each
    p = write(tmp_path, duration="1s", interval="1s", count=20_000)
    line = one_line_error(runner.invoke(app, ["run", str(p), "--out", str(tmp_path / "r")]),
                          "flows: 20,000 flows", "estimated memory", "exceeds the limit of 400 MB", "--allow-large")  # fmt: skip
    assert len(line) < MAX_MESSAGE + 20
    assert not (tmp_path / "r").exists()
    dry = runner.invoke(app, ["run", str(p), "--dry-run"])
    assert dry.exit_code == 2 and "flows' state ~400 MB" in dry.output


def test_the_kernel_flow_limit_is_reported_by_a_dry_run(tmp_path):
    """Before: --dry-run --backend kernel said "within the limits" for 65 flows; only the run refused them."""
    from cclab.kernel.machine import MAX_FLOWS

    p = write(tmp_path, count=MAX_FLOWS + 1)
    dry = runner.invoke(app, ["run", str(p), "--dry-run", "--backend", "kernel"])
    assert dry.exit_code == 2, dry.output
    errors = [ln for ln in dry.output.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and f"at most {MAX_FLOWS} flows per kernel run" in errors[0] and "docs/kernel.md" in errors[0]
    ok = runner.invoke(app, ["run", str(write(tmp_path, count=MAX_FLOWS)), "--dry-run", "--backend", "kernel"])
    assert "flows per kernel run" not in ok.output
    assert runner.invoke(app, ["run", str(p), "--dry-run"]).exit_code == 0  # the simulator has no such limit


def test_a_flow_group_count_above_the_typo_guard_is_one_line(tmp_path):
    from cclab.scenario import MAX_COUNT

    p = write(tmp_path, count=MAX_COUNT + 1)
    one_line_error(runner.invoke(app, ["validate-scenario", str(p)]), "count")


def test_dry_run_of_a_normal_scenario_runs_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", str(write(tmp_path)), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "within the limits" in result.output and "bottleneck packets" in result.output
    assert not (tmp_path / "runs").exists()


def test_allow_large_lifts_the_limit(tmp_path, monkeypatch):
    from cclab import api, limits

    monkeypatch.setitem(limits.LIMITS, "memory_bytes", 1)  # everything is "too large" now
    p = write(tmp_path, duration="200ms")
    with pytest.raises(ScenarioError, match="too large"):
        api.run(p, out=tmp_path / "a", plot=False)
    assert api.run(p, out=tmp_path / "b", plot=False, allow_large=True).meta["status"] == "complete"
    result = runner.invoke(app, ["run", str(p), "--out", str(tmp_path / "c"), "--no-plot", "--allow-large"])
    assert result.exit_code == 0, result.output


def test_a_sweep_with_a_too_large_point_is_refused_before_anything_runs(tmp_path):
    f = tmp_path / "sw.toml"
    f.write_text('[base]\nname = "b"\nduration = "10s"\n[base.link]\nrate = "10Mbps"\n[[base.flows]]\n'
                 'cca = "cubic"\nrtt = "20ms"\ncount = 1000\n[zip]\nsample_interval = ["10ms", "1us"]\n'
                 '"record.flows" = ["10ms", "1us"]\n')  # fmt: skip
    result = runner.invoke(app, ["sweep", str(f), "--out", str(tmp_path / "o"), "--no-progress"])
    one_line_error(result, "point sample_interval='1us'", "too large", "--allow-large")
    assert not (tmp_path / "o").exists()
    dry = runner.invoke(app, ["sweep", str(f), "--dry-run"])
    assert dry.exit_code == 2 and "too large" in dry.output


@pytest.mark.parametrize(
    ("link", "needle"),
    [('rate = "9000000Tbps"', "highest rate; expected at most 1Tbps"),
     ('rate = "9000000000000000000bps"', "highest rate"),
     ('rate = "900Gbps"\ndelay = "100ms"', "more than the 2 GiB a socket buffer can be")],
)
def test_link_rates_beyond_the_engine_are_refused(tmp_path, link, needle):
    """Before: a 9e18 bit/s link passed validation; the engine raised a ValueError traceback or aborted."""
    if "delay" in link:
        text = write(tmp_path, link=link).read_text().replace('rtt = "20ms"', 'rtt = "200ms"')
        (tmp_path / "s.toml").write_text(text)
    one_line_error(runner.invoke(app, ["run", str(tmp_path / "s.toml") if "delay" in link else str(write(tmp_path, link=link)),
                                       "--out", str(tmp_path / "r")]), needle)  # fmt: skip


# ---------------------------------------------------------------- the measure window


def test_an_empty_measure_window_is_an_error(tmp_path):
    """Before: the run went ahead and reported goodput 0.00 over a window without a sample."""
    # (a sample_interval must divide the duration, so an empty window ends before the duration)
    p = write(tmp_path, interval="2s", extra='measure = { from = "8.5s", to = "9.5s" }')
    for cmd in (["validate-scenario", str(p)], ["run", str(p), "--out", str(tmp_path / "r")]):
        one_line_error(runner.invoke(app, cmd), "measure: the window from '8.5s' to '9.5s' holds no sample",
                       "samples every '2s', nearest at 8s and 10s", "widen the window")  # fmt: skip
    with pytest.raises(ScenarioError, match="holds no sample"):
        resolve(scenario_from_dict({"name": "w", "duration": "1s", "sample_interval": "100ms",
                                    "measure": {"from": "10ms", "to": "50ms"}, "link": {"rate": "10Mbps"},
                                    "flows": [{"cca": "reno", "rtt": "10ms"}]}))  # fmt: skip
    ok = resolve(scenario_from_dict({"name": "w", "duration": "1s", "sample_interval": "100ms",
                                     "measure": {"from": "100ms", "to": "200ms"}, "link": {"rate": "10Mbps"},
                                     "flows": [{"cca": "reno", "rtt": "10ms"}]}))  # fmt: skip
    assert ok["measure"] == {"from_ns": 100_000_000, "to_ns": 200_000_000}


def test_a_measure_window_off_the_sample_grid_is_an_error():
    """Before: from = 10 ms with 100 ms samples ran; the goodput counted the sample covering (0, 100 ms]
    over an active time from 10 ms, while the delay distributions started at 10 ms."""
    base = {"name": "w", "duration": "1s", "sample_interval": "100ms", "link": {"rate": "10Mbps"},
            "flows": [{"cca": "reno", "rtt": "10ms"}]}  # fmt: skip
    for window, field, near in (({"from": "10ms", "to": "500ms"}, "measure.from", "'0s' or '0.1s'"),
                                ({"from": "100ms", "to": "450ms"}, "measure.to", "'0.4s' or '0.5s'")):
        with pytest.raises(ScenarioError, match=rf"{field}: .* is not a multiple of sample_interval "
                                                rf"\('100ms'\).*expected a multiple of the sample interval "
                                                rf"\(e\.g\. {near}\)"):  # fmt: skip
            resolve(scenario_from_dict({**base, "measure": window}))


# ---------------------------------------------------------------- names printed safely


@pytest.fixture
def replay(monkeypatch, make_raw):
    """The CLI's run pipeline with the synthetic raw output of tests/helpers.py as the engine."""
    import cclab.api

    class Replay:
        name = "replay"

        def run(self, ir):
            return make_raw()

    monkeypatch.setattr(cclab.api, "get_backend", lambda name: Replay())


SYNTH = """\
name = {name}
duration = "6s"
sample_interval = "1s"
measure = {{ from = "2s" }}
[link]
rate = "4Mbps"
buffer = "15000B"
[[flows]]
cca = "cubic"
rtt = "20ms"
[[flows]]
cca = "reno"
rtt = "40ms"
"""


@pytest.mark.parametrize(
    ("toml_name", "shown"),
    [
        ('"x[/]y"', "x[/]y"),
        ('"[bold]not bold[/bold] [link=file:///etc]z[/link]"', "[bold]not bold[/bold] [link=file:///etc]z[/link]"),
        ('"a\\u001b[31mred\\u001b]0;title\\u0007b"', "a\\x1b[31mred\\x1b]0;title\\x07b"),
        ('"tab\\there\\u202eevil"', "tab\\x09here\\u202eevil"),
    ],
    ids=["closing-tag", "markup", "escape-sequences", "bidi"],
)
def test_names_with_markup_and_control_characters_are_printed_as_text(tmp_path, replay, toml_name, shown):
    """Before: a name containing "[/]" crashed the rich output (MarkupError traceback), and escape
    sequences in a name reached the terminal."""
    p = tmp_path / "n.toml"
    p.write_text(SYNTH.format(name=toml_name))
    out = tmp_path / "rec"
    result = runner.invoke(app, ["run", str(p), "--out", str(out), "--no-plot"])
    assert result.exit_code == 0, result.output
    assert shown in result.output, result.output
    assert "\x1b" not in result.output and "\u202e" not in result.output and "\x07" not in result.output
    result = runner.invoke(app, ["validate-scenario", str(p)])
    assert result.exit_code == 0 and shown in result.output, result.output
    assert "\x1b" not in result.output
    (tmp_path / "plot").mkdir()
    result = runner.invoke(app, ["plot", str(out), "--out", str(tmp_path / "plot")])
    assert result.exit_code == 0, result.output


def test_an_unknown_field_named_with_escape_sequences_is_shown_escaped(tmp_path):
    p = tmp_path / "k.toml"
    p.write_text(SYNTH.format(name='"k"').replace("[link]", '"\\u001b[2Jevil[/]" = 1\n[link]'))
    line = one_line_error(runner.invoke(app, ["validate-scenario", str(p)]), "\\x1b[2Jevil[/]: unknown field")
    assert "\x1b" not in line


# ---------------------------------------------------------------- traces


SECRET = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHsecretKEYmaterial user@host"


def test_a_trace_path_to_a_non_trace_file_is_refused_without_echoing_it(tmp_path):
    """Before: the error quoted the file's first bytes (e.g. 'root:x:0:0:root:/root:/bin…' of /etc/passwd)."""
    secret = tmp_path / "id_ed25519.pub"
    secret.write_text(SECRET + "\nsecond line secret\n")
    p = write(tmp_path, link=f'trace = "{secret}"')
    for cmd in (["validate-scenario", str(p)], ["run", str(p), "--out", str(tmp_path / "r")]):
        result = runner.invoke(app, cmd)
        line = one_line_error(result, "link.trace", "line 1 is not a non-negative integer number of ms",
                              "is this a Mahimahi trace?", "Mahimahi format")  # fmt: skip
        for piece in ("ssh", "AAAA", "secret", "user@host", "ed25519 "):
            assert piece not in line.replace(str(secret), ""), line


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"0\n5\n99999999999999999999999\n", "a timestamp of 23 digits is too large"),
        (b"0\n5\n10\x00\n", "not a text file (it holds NUL bytes)"),
        (b"\xff\xfe0\n", "not a text file (byte 0 is not ASCII)"),
        (b"0\n5\n10 20\n", "line 3 holds 2 values"),  # two numbers: the count is what is wrong
    ],
)
def test_malformed_traces_give_one_bounded_line(tmp_path, content, needle):
    (tmp_path / "t.trace").write_bytes(content)
    with pytest.raises(ScenarioError) as info:
        resolve(load_scenario(write(tmp_path, link='trace = "t.trace"')))
    assert needle in str(info.value) and len(str(info.value)) <= MAX_MESSAGE


def test_a_trace_that_is_a_device_a_directory_or_an_impossible_name(tmp_path):
    for spec, needle in (("/dev/null", "is not a regular file"), (str(tmp_path), "is a directory"),
                         ("x" * 5000, "cannot be opened (File name too long)")):  # fmt: skip
        with pytest.raises(ScenarioError) as info:
            scenario_from_dict({"name": "t", "duration": "1s", "link": {"trace": spec},
                                "flows": [{"cca": "cubic", "rtt": "20ms"}]})  # fmt: skip
        assert needle in str(info.value) and len(str(info.value)) <= MAX_MESSAGE, str(info.value)


# ---------------------------------------------------------------- numbers, nesting, huge values


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('duration = "1.0000000000000000000000000001s"', "is not a whole number of ns"),
        ("[link]\nloss = 0.1000000000000000000000000001", "cannot be represented exactly (it would be rounded to 0.1)"),
        ('[link]\nloss = "0.1000000000000000000000000001%"', "cannot be represented exactly"),
        ("[link]\nloss = 1e400", "is too large"),
        ("[link]\nloss = " + "7" * 400, "is out of range"),  # found by tests/test_fuzz.py: an OverflowError traceback
        ('[[flows]]\ncca = { name = "cubic", beta = ' + "7" * 400 + ' }\nrtt = "20ms"', "too large to be represented"),
        ("seed = " + "9" * 5000, "a number cannot be read"),
        ('duration = "1e-99999999s"', "more digits than cclab reads"),
    ],
)
def test_numbers_are_refused_not_rounded(tmp_path, text, needle):
    """Before: decimal's 28-digit context and float parsing rounded such values silently."""
    base = {"name": '"n"', "duration": '"10s"'}
    lines = [f"{k} = {v}" for k, v in base.items() if not text.startswith(k)]
    body = "\n".join(lines) + "\n" + text + "\n"
    if "[link]" not in text:
        body += '[link]\nrate = "10Mbps"\n'
    else:
        body = body.replace("[link]\n", '[link]\nrate = "10Mbps"\n')
    body += '[[flows]]\ncca = "cubic"\nrtt = "20ms"\n'
    p = tmp_path / "n.toml"
    p.write_text(body)
    line = one_line_error(runner.invoke(app, ["validate-scenario", str(p)]), needle)
    assert len(line) <= MAX_MESSAGE + 10


@pytest.mark.parametrize(
    "text",
    ["x = " + "[" * 5000 + "]" * 5000, "x = " + "{a = " * 3000 + "1" + "}" * 3000,
     "[link]\nrate = " + "[" * 40 + '"1Mbps"' + "]" * 40],
    ids=["deep-list", "deep-table", "deep-value"],
)
def test_deep_nesting_is_one_line(tmp_path, text):
    """Before: RecursionError tracebacks (tomllib, pydantic, repr of the value)."""
    p = tmp_path / "d.toml"
    p.write_text('name = "d"\nduration = "1s"\n' + text + "\n")
    one_line_error(runner.invoke(app, ["validate-scenario", str(p)]), "nested too deeply")
    s = tmp_path / "s.toml"
    s.write_text("[base]\n" + text.replace("[link]", "[base.link]") + "\n")
    one_line_error(runner.invoke(app, ["sweep", str(s), "--out", str(tmp_path / "o")]), "nested too deeply")


def test_deeply_nested_python_input_is_one_line():
    deep: list = []
    node = deep
    for _ in range(10_000):
        node.append([])
        node = node[0]
    with pytest.raises(ScenarioError, match="nested too deeply"):
        scenario_from_dict({"name": "x", "duration": "1s", "link": {"rate": "1Mbps"},
                            "flows": [{"cca": "cubic", "rtt": "1ms", "count": deep}]})  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value"),
    [("name", "x" * 3_000_000), ("flows[0].rtt", "9" * 1_000_000 + "ms"), ("link.buffer", ["1bdp"] * 200_000),
     ("unknown" * 100_000, 1)],
    ids=["name", "rtt", "list", "key"],
)
def test_huge_values_give_short_errors(tmp_path, key, value):
    """Before: some error lines were several MB long (the value or key repeated in full)."""
    data = {"name": "h", "duration": "1s", "link": {"rate": "1Mbps"}, "flows": [{"cca": "cubic", "rtt": "1ms"}]}
    if key == "flows[0].rtt":
        data["flows"][0]["rtt"] = value
    elif key == "link.buffer":
        data["link"]["buffer"] = value
    else:
        data[key] = value
    if key == "name":
        data["name"] = value + "\n"  # a two-line name is an error
    with pytest.raises(ScenarioError) as info:
        resolve(scenario_from_dict(data))
    assert len(str(info.value)) <= MAX_MESSAGE and "\n" not in str(info.value)


def test_sweep_errors_are_bounded(tmp_path):
    f = tmp_path / "s.toml"
    big = "y" * 100_000
    f.write_text(f'[base]\nname = "s"\nduration = "1s"\n[base.link]\nrate = "1Mbps"\n[[base.flows]]\ncca = "cubic"\n'
                 f'rtt = "1ms"\n[axes]\n"link.buffer" = ["{big}"]\n')  # fmt: skip
    line = one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(tmp_path / "o")]), 'axis "link.buffer"')
    assert len(line) <= MAX_MESSAGE + 10
    f.write_text(json.dumps({}).replace("{}", "trials = 1000000000\n[base]\n"))
    one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(tmp_path / "o")]),
                   "trials = 1000000000: expected an integer from 1 to 10000")  # fmt: skip
    f.write_text("axes = 5\n[base]\n")
    one_line_error(runner.invoke(app, ["sweep", str(f), "--out", str(tmp_path / "o")]), "axes = 5: expected a table")
