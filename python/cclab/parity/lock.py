"""The machine-wide kernel-run lock: ``flock`` on /tmp/cclab-kernel.lock.

Kernel runs share the machine's CPUs with the emulator; two at once would
disturb each other (and the self-check would flag both). Every kernel run of
``cclab parity`` holds this lock, the same one people take by hand with
``flock /tmp/cclab-kernel.lock COMMAND``.

When the process was itself started under ``flock /tmp/cclab-kernel.lock``,
it inherits the locked file descriptor; taking the lock again through a new
descriptor would wait for ourselves forever. :func:`kernel_lock` therefore
first looks for an inherited descriptor of the same file that holds (or can
take) the lock, and uses it without ever releasing it — the parent releases
it when the command ends.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["LOCK_PATH", "kernel_lock"]

LOCK_PATH = "/tmp/cclab-kernel.lock"


def _inherited_holder(path: str) -> int | None:
    """An open descriptor of ``path`` whose open file description holds the lock (or just took it)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        return None
    for fd in fds:
        try:
            fst = os.fstat(fd)
        except OSError:
            continue
        if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # this description does not hold it: someone else's
        return fd
    return None


@contextmanager
def kernel_lock(path: str = LOCK_PATH, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the kernel-run lock for the duration of the ``with`` block.

    ``on_wait`` is called once if another process holds the lock (then this
    waits until it is released).
    """
    if _inherited_holder(path) is not None:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
