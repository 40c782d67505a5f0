"""Both backends name algorithm states alike, and the kernel's BBR mode is right from the first sample (root).

* The same scenario (one BBR and one CUBIC flow) on ``sim`` and ``kernel``:
  every state either record uses is in the one table of cclab.states for
  that algorithm, and both records see BBR's STARTUP and PROBE_BW and
  CUBIC's SLOW_START and CONG_AVOID.
* BBR's mode before its first bandwidth sample is STARTUP (bbr_init), not
  PROBE_RTT: the kernel reports gains 1/1 then. PROBE_RTT cannot happen at
  all in a 5 s run — tcp_bbr.c enters it only when the min-RTT filter
  (bbr_min_rtt_win_sec = 10 s) has expired.
* The time-series figure of the kernel run has its state strip.
"""

from __future__ import annotations

import pytest

import cclab._native as native
from cclab import api, states
from cclab.plot import figure_timeseries

pytestmark = pytest.mark.usefixtures("no_leftovers")

SCENARIO = {
    "name": "bbr-cubic-states",
    "duration": "5s",
    "seed": 1,
    "sample_interval": "10ms",
    "link": {"rate": "50Mbps", "delay": "0ms", "buffer": "1bdp"},
    "flows": [{"cca": "bbr", "rtt": "50ms"}, {"cca": "cubic", "rtt": "50ms"}],
}


@pytest.mark.skipif(not hasattr(native, "simulate"), reason="the native engine is not built")
def test_both_backends_use_the_same_state_names(tmp_path, kernel_ready):
    k = api.run(SCENARIO, out=tmp_path / "k", backend="kernel", plot=False)
    s = api.run(SCENARIO, out=tmp_path / "s", backend="sim", plot=False)
    seen = {}
    for run in (k, s):
        f = run.flows
        for cca, table in (("bbr", states.BBR), ("cubic", states.LOSS_BASED)):
            names = set(f.loc[f.cca == cca, "state"].dropna())
            seen[run.meta["backend"], cca] = names
            assert names <= set(table), (run.meta["backend"], cca, names)
    print(seen)
    for backend in ("kernel", "sim"):
        assert {"STARTUP", "PROBE_BW"} <= seen[backend, "bbr"], seen
        assert {"SLOW_START", "CONG_AVOID"} <= seen[backend, "cubic"], seen

    bbr = k.flows[k.flows.cca == "bbr"].sort_values("time_s")
    assert bbr["state"].notna().all()
    assert bbr["state"].iloc[0] == "STARTUP", bbr[["time_s", "state", "bw_bps", "pacing_gain", "cwnd_gain"]].head(8)
    assert "PROBE_RTT" not in set(bbr["state"]), bbr.loc[bbr.state == "PROBE_RTT", ["time_s", "bw_bps", "pacing_gain"]]
    cubic = k.flows[k.flows.cca == "cubic"].sort_values("time_s")
    assert cubic["state"].iloc[0] == "SLOW_START"

    fig = figure_timeseries(k.flows, k.link, k.ir)
    strip = [ax for ax in fig.axes if ax.get_ylabel().startswith("state")]
    assert len(strip) == 1, [ax.get_ylabel() for ax in fig.axes]
    assert len(strip[0].collections) > 0, "the state strip has no shaded spans"
