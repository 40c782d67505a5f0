"""The kernel backend: the machine's real TCP stacks, in network namespaces
that cclab creates, across cclab's own userspace link emulator
(``crates/cclab-link``), with per-flow kernel state from sock_diag.

Modules:

* :mod:`.backend` — ``check(ir)`` (fails early, before any namespace exists)
  and ``run(ir)`` (raw engine output, docs/record.md).
* :mod:`.netns` — namespaces, sysctls, device setup, and cleanup of
  leftovers (``cclab doctor --clean``).
* :mod:`.diag` — INET_DIAG sock_diag netlink: ``tcp_info`` + BBR info.
* :mod:`.machine` — what this machine can run (``cclab doctor``).
* :mod:`.bench` — the emulator benchmark (``python -m cclab.kernel.bench``).

Design and measured numbers: docs/kernel.md.
"""
