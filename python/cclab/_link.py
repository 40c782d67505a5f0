"""``python -m cclab._link emulate|send|recv|version …`` — the kernel
backend's link emulator and traffic endpoints (crates/cclab-link), compiled
into the extension module ``cclab._native``, so every install of cclab (a
wheel, ``pip install .``, an editable checkout) carries the emulator that
matches its simulator. The kernel backend starts it in processes of its own
(``cclab.kernel.machine.link_command``); it is not meant to be run by hand.

Keep this module free of imports beyond ``cclab._native``: it starts three
times per kernel run.
"""

from __future__ import annotations

import sys

#: The argv marker by which cleanup recognizes these processes in /proc
#: (``cclab.kernel.netns``): ``<python> … -m cclab._link …``.
MODULE = "cclab._link"


def main(argv: list[str] | None = None) -> int:
    from cclab import _native

    if not hasattr(_native, "link_main"):
        print("cclab-link: this build of cclab has no link emulator (it is Linux only)", file=sys.stderr)
        return 2
    args = sys.argv[1:] if argv is None else argv
    return int(_native.link_main(["cclab-link", *args]))


if __name__ == "__main__":
    sys.exit(main())
