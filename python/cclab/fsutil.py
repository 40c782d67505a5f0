"""Writing files safely: atomically, through temporary files nobody else can plant.

Every file cclab writes outside a run record's own temporary directory goes
through :func:`atomic_file`: the data is written to a new temporary file in
the target's directory, created by :func:`tempfile.mkstemp` (``O_EXCL``, a
unique random name, never an existing file or a symlink someone left there),
fsynced, then renamed over the target. ``rename`` replaces a symlink at the
target name instead of writing through it, and readers see the old file or
the new one, never half of one. :func:`figure_formats` checks the figure
formats asked for before anything is drawn or written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["FIGURE_FORMATS", "atomic_file", "atomic_write_bytes", "atomic_write_text", "default_mode", "figure_formats",
           "file_in_the_way"]


def file_in_the_way(path: str | Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is not a directory (so ``path`` can never be
    made: say so in one line instead of a traceback), else ``None``. ``path`` itself is not looked at."""
    for parent in Path(path).parents:
        if parent.exists() or parent.is_symlink():
            return None if parent.is_dir() else parent
    return None


def default_mode() -> int:
    """Permissions of an ordinary new file under the current umask (mkstemp makes 0600)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[BinaryIO]:
    """Open a new temporary file beside ``path`` for binary writing; on success it replaces ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:100]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, default_mode())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_file`)."""
    with atomic_file(path) as fh:
        fh.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_file`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


#: Figure formats cclab draws (``cclab.plot.save_figure``).
FIGURE_FORMATS = ("png", "svg", "pdf")


def figure_formats(formats: Iterable[str] | str) -> tuple[str, ...]:
    """``formats`` checked and normalised (``".PDF"`` → ``"pdf"``) before anything is run or written;
    one name is a one-element list, not its letters. :class:`ValueError` for an empty list or an
    unknown format (here, not in ``cclab.plot``, so that ``cclab.run`` checks them before the run
    without importing matplotlib)."""
    names = (formats,) if isinstance(formats, str) else tuple(formats)
    if not names:
        raise ValueError(f"formats: empty; expected some of: {', '.join(FIGURE_FORMATS)}")
    out = []
    for fmt in names:
        if not isinstance(fmt, str) or fmt.lower().lstrip(".") not in FIGURE_FORMATS:
            raise ValueError(f"formats: {fmt!r} is not a figure format; expected some of: {', '.join(FIGURE_FORMATS)}")
        out.append(fmt.lower().lstrip("."))
    return tuple(out)
