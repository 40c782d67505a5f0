"""cclab.kernel.readlat: the read-latency histogram's summary, pooling and ``[host] read_delay`` line
(the measurement itself, a kernel run, is tests/kernel/test_read_latency_kernel.py)."""

from __future__ import annotations

import tomllib

import pytest
from typer.testing import CliRunner

from cclab.kernel import readlat


def _hist(counts, over=0):
    return {"bin_ns": 10_000, "counts": counts, "over": over, "reads": sum(counts) + over}


def test_summary_quantiles_are_upper_bin_edges():
    # 900 reads in [0, 10) µs, 90 in [20, 30), 9 in [1000, 1010) µs, 1 over 100 ms
    counts = [900, 0, 90] + [0] * 97 + [9]
    s = readlat.summarize(_hist(counts, over=1))
    assert s["reads"] == 1000 and s["over_100ms"] == 1
    assert s["p50_us"] == 10 and s["p90_us"] == 10  # the 900th read is still in the first bin
    assert s["p99_us"] == 30
    assert s["p99.9_us"] == 1010
    assert s["per_million_over_1ms"] == pytest.approx(10_000)  # 9 + 1 of 1000


def test_a_quantile_among_the_long_reads_is_unknown():
    s = readlat.summarize(_hist([1], over=9))
    assert s["p50_us"] is None and s["per_million_over_1ms"] == pytest.approx(900_000)


def test_an_empty_histogram_summarizes_to_nothing():
    s = readlat.summarize(_hist([]))
    assert s["reads"] == 0 and s["p50_us"] is None and s["per_million_over_1ms"] is None


def test_merge_pools_counts_and_refuses_other_bins():
    m = readlat.merge([_hist([1, 2]), _hist([0, 1, 5], over=2)])
    assert m["counts"] == [1, 3, 5] and m["over"] == 2 and m["reads"] == 11
    with pytest.raises(ValueError, match="different bin widths"):
        readlat.merge([_hist([1]), {"bin_ns": 1000, "counts": [1]}])
    with pytest.raises(ValueError, match="no histograms"):
        readlat.merge([])


def test_the_host_line_resolves_to_the_same_bins():
    from cclab.resolve import resolve
    from cclab.scenario import scenario_from_dict

    counts = [500, 300, 0, 150, 0, 0, 40, 0, 0, 0, 10, 0, 0]
    line = readlat.toml_line(_hist(counts, over=3))
    assert line.startswith('read_delay = { histogram = { bin = "10us", counts = [500, 300, 0, 150')
    assert line.endswith("10] } }")  # trailing empty bins dropped; the reads over 100 ms are not in it
    host = tomllib.loads(line)
    ir = resolve(scenario_from_dict({"name": "x", "duration": "1s", "link": {"rate": "20Mbps", "buffer": "1bdp"},
                                     "flows": [{"cca": "cubic", "rtt": "20ms"}], "host": host}))  # fmt: skip
    edges, probs = ir["host"]["read_delay_ns"], ir["host"]["read_delay_p"]
    assert edges[0] == 0 and edges[-1] == 110_000  # 0 … the last non-empty bin's upper edge (ns)
    assert probs[-1] == 2**32 and len(edges) == len(probs)


def test_doctor_seed_needs_read_latency():
    from cclab.cli import app

    r = CliRunner().invoke(app, ["doctor", "--seed", "3"])
    assert r.exit_code == 2
    assert "--seed: only with --read-latency SCENARIO" in r.output
