"""`cclab parity`: the same scenarios on the simulator and on the Linux kernel, compared within fixed tolerances.

* :mod:`cclab.parity.matrix` — the cases, as data (scenario, metrics, seeds, why, quick subset);
* :mod:`cclab.parity.checks` — metric extraction (via :mod:`cclab.metrics`) and the tolerances;
* :mod:`cclab.parity.run` — records in a resumable store, kernel runs one at a time under
  :mod:`cclab.parity.lock`, invalid kernel runs rerun once;
* :mod:`cclab.parity.output` — the table, ``parity.json``/``parity.parquet`` and ``parity.html``.

How to run it and what it checks: docs/validation.md ("Parity").
"""

from cclab.parity.checks import METRICS, TOLERANCES, Check, evaluate, judge
from cclab.parity.matrix import CASES, Case, quick_cases

__all__ = ["CASES", "METRICS", "TOLERANCES", "Case", "Check", "evaluate", "judge", "quick_cases"]
