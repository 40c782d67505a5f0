"""The record's algorithm-state names, the same for both backends (docs/record.md).

A record's ``state`` column holds ``state_names[cca][cc_state]``. The
canonical names are the simulator's, upper-case and named after Linux's own
enums (crates/cclab-sim/src/cc/: ``bbr/mod.rs`` STATE_NAMES, ``reno.rs``
LOSS_BASED_STATES, also used by ``cubic.rs``). This module writes down the
ones the kernel backend can report, and maps what Linux exports onto them;
``tests/test_states.py`` asserts that the simulator's tables for reno,
cubic and bbr equal these, so the two backends cannot drift apart.

Kernel mapping (docs/kernel.md "Per-flow kernel state"):

* BBR: the mode (``tcp_bbr.c`` ``enum bbr_mode``) inferred from
  ``tcp_bbr_info`` (``cclab.kernel.backend._bbr_mode``), coded as :data:`BBR`;
* every other algorithm: Linux's ``tcpi_ca_state`` (``include/net/tcp.h``
  ``enum tcp_ca_state``) and slow start (``tcp_in_slow_start``: cwnd <
  ssthresh) folded into :data:`LOSS_BASED` exactly as the simulator's
  ``loss_based_state`` does (:func:`loss_based_code`).
"""

from __future__ import annotations

__all__ = ["BBR", "CA_STATE", "LOSS_BASED", "kernel_names", "loss_based_code"]

#: BBR v1 modes, tcp_bbr.c ``enum bbr_mode`` order (BBR_STARTUP = 0 … BBR_PROBE_RTT = 3).
BBR: tuple[str, ...] = ("STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT")
#: Loss-based algorithms (Reno, CUBIC, and on the kernel every algorithm that exports no mode of its own).
LOSS_BASED: tuple[str, ...] = ("SLOW_START", "CONG_AVOID", "RECOVERY", "LOSS")

#: Linux ``enum tcp_ca_state`` (include/net/tcp.h): TCP_CA_Open … TCP_CA_Loss.
CA_STATE = {"open": 0, "disorder": 1, "cwr": 2, "recovery": 3, "loss": 4}


def kernel_names(cca: str) -> tuple[str, ...]:
    """The state names the kernel backend reports for ``cca``: BBR's modes for
    ``bbr``, :data:`LOSS_BASED` for every other algorithm."""
    return BBR if cca == "bbr" else LOSS_BASED


def loss_based_code(ca_state: int, cwnd: int, ssthresh: int) -> int:
    """Index into :data:`LOSS_BASED` for a socket in Linux ``ca_state`` with ``cwnd``/``ssthresh`` (segments).

    As the simulator's ``loss_based_state`` (crates/cclab-sim/src/cc/reno.rs):
    CWR and Recovery → RECOVERY, Loss → LOSS; in Open or Disorder, SLOW_START
    while cwnd < ssthresh (``tcp_in_slow_start``), else CONG_AVOID.
    """
    if ca_state in (CA_STATE["cwr"], CA_STATE["recovery"]):
        return 2
    if ca_state == CA_STATE["loss"]:
        return 3
    return 0 if cwnd < ssthresh else 1
