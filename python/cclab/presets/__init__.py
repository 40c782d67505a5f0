"""Built-in presets: the seed studies, one sweep file each (see README.md here).

`cclab reproduce NAME [--quick]` runs a preset's sweep file(s), then writes
each sweep's figures and HTML report, then prints the study's published values
beside the measured ones (the files' `[[published]]` tables, `published.py`).
A preset is usually one file; `bbr-loss` has two (the constant-rate link of P1
and the Verizon LTE trace of P11). Presets whose ref ends in "var" are
documented variants of a study's setup (a different buffer, window or path).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cclab.sweep import Sweep, load_sweep

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Preset:
    name: str
    ref: str  # rows of the published-results table in docs/validation.md
    title: str
    files: tuple[str, ...]

    def sweeps(self, quick: bool = False) -> list[tuple[str, Sweep]]:
        """(part name, sweep) per file; `quick` applies each file's [quick] table."""
        out = []
        for f in self.files:
            sw = load_sweep(HERE / f)
            out.append((Path(f).stem, sw.quick_variant() if quick else sw))
        return out

    def algorithms(self) -> set[str]:
        """Every congestion control the preset's runs use (base and axes, full and quick)."""
        found: set[str] = set()
        for _, sw in self.sweeps() + self.sweeps(quick=True):
            for group in sw.base.get("flows", []):
                found.add(_cca_name(group.get("cca")))
            for name, values in [*sw.axes.items(), *sw.zip.items()]:
                if name.endswith(".cca"):
                    found.update(_cca_name(v) for v in values)
        found.discard("")
        return found


def _cca_name(v) -> str:
    return v.get("name", "") if isinstance(v, dict) else str(v or "")


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("bbr-loss", "P1, P11", "throughput vs random loss, BBR vs CUBIC (100 Mbps/100 ms and Verizon LTE)",
               ("bbr-loss.toml", "bbr-loss-verizon.toml")),
        Preset("bbr-loss-1bdp", "P1 var", "the P1 loss sweep with a 1 BDP buffer and no window limit",
               ("bbr-loss-1bdp.toml",)),
        Preset("bbr-bandwidth-step", "P2", "BBR follows a doubling and a halving of the bandwidth",
               ("bbr-bandwidth-step.toml",)),
        Preset("bbr-cubic-queue", "P3", "queue on a deep buffer: CUBIC fills it, BBR keeps it empty",
               ("bbr-cubic-queue.toml",)),
        Preset("buffer-sweep-bbr", "P4", "2/4/8 BBR flows: loss, utilization, queue vs buffer 0.25-8 BDP",
               ("buffer-sweep-bbr.toml",)),
        Preset("buffer-sweep-bbr-vs-cubic", "P5", "2 BBR (or bbr_shallow) + 2 CUBIC: share vs buffer with IQR",
               ("buffer-sweep-bbr-vs-cubic.toml",)),
        Preset("bbr-cubic-cycles", "P6", "2 BBR + 2 CUBIC at 1.75 BDP: the ~20 s share cycle",
               ("bbr-cubic-cycles.toml",)),
        Preset("ten-and-ten", "P7", "10 CUBIC + 10 BBR on 1 Gbps: cyclic throughput", ("ten-and-ten.toml",)),
        Preset("ten-and-ten-paths", "P7 var", "10 CUBIC + 10 BBR: RTT x buffer, where the cycle appears",
               ("ten-and-ten-paths.toml",)),
        Preset("when-to-use-bbr", "P8", "goodput-gain and retransmission heatmaps over RTT x bandwidth x buffer",
               ("when-to-use-bbr.toml",)),
        Preset("when-to-use-bbr-stock-rwnd", "P8 var", "P8 with a stock Linux receive window (3 MiB)",
               ("when-to-use-bbr-stock-rwnd.toml",)),
        Preset("rtt-unfairness", "P9", "BBR flows with 10 and 50 ms RTT: the longer RTT wins",
               ("rtt-unfairness.toml",)),
        Preset("aqm-bbr-vs-cubic", "AQM", "1 BBR + 1 CUBIC behind each qdisc (drop-tail, RED, CoDel, FQ-CoDel, PIE) x 1/4/16 BDP",
               ("aqm-bbr-vs-cubic.toml",)),
        Preset("joining-flows", "P10", "a BBR flow joining 200-1000 ms later: convergence, Jain's index",
               ("joining-flows.toml",)),
        # topologies (docs/topologies.md): the ns-3 BBR study's seven, the parking lot, RTprop after a path change
        Preset("ns3-line", "ns-3 T1", "ns-3 line: source - router - sink, one flow per algorithm", ("ns3-line.toml",)),
        Preset("ns3-modified-line", "ns-3 T2", "ns-3 modified line: 20 and 100 ms RTT flows share a bottleneck",
               ("ns3-modified-line.toml",)),
        Preset("ns3-dumbbell-2x2", "ns-3 T3", "ns-3 2x2 dumbbell, homogeneous and mixed pairs", ("ns3-dumbbell-2x2.toml",)),
        Preset("ns3-vertical-2x2", "ns-3 T4", "ns-3 2x2 vertical dumbbell: a flow each way, data and ACKs share queues",
               ("ns3-vertical-2x2.toml",)),
        Preset("ns3-dumbbell-3x3", "ns-3 T5", "ns-3 3x3 dumbbell: BBR + CUBIC + NewReno mixed, and three of each",
               ("ns3-dumbbell-3x3.toml",)),
        Preset("ns3-line-new-flow", "ns-3 T6", "ns-3 4-node line: a shorter-path flow joins after 200-1000 ms",
               ("ns3-line-new-flow.toml",)),
        Preset("ns3-line-two-new-flows", "ns-3 T7", "ns-3 4-node line: three flows entering at n0, n1 and n2",
               ("ns3-line-two-new-flows.toml",)),
        Preset("parking-lot", "topology", "3 links, one long flow + a cross flow per link: Reno, CUBIC, BBR",
               ("parking-lot.toml",)),
        Preset("bbr-rtprop-step", "topology", "a 40 ms path whose delay triples: RTT samples vs BBR's min_rtt",
               ("bbr-rtprop-step.toml",)),
    )
}


def get(name: str) -> Preset:
    if name not in PRESETS:
        raise KeyError(f"no preset {name!r}; presets: {', '.join(PRESETS)}")
    return PRESETS[name]


__all__ = ["PRESETS", "Preset", "get"]
