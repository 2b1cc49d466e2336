"""Notices of the compiled path: why a phase runs on the Python path (once per process), and
that the kernels are being compiled (a first run only)."""

from __future__ import annotations

import logging
import sys

_announced: set[str] = set()


def announce(reason: str) -> None:
    """Log once per process why a phase runs on the Python path (an implementation detail
    that a user cannot act on: an INFO record of the ``pinext`` logger, not a warning)."""
    if reason not in _announced:
        _announced.add(reason)
        logging.getLogger("pinext").info("%s; this runs on the Python path", reason)


def compiling_notice(method: str = "DOP853") -> None:
    """Say once per process that the kernels of ``method`` are being compiled, with what it
    takes (``benchmarks/bench_compile.py``, 2 cores: the first run about 40 s of CPU, each
    later kind of scene 3–15 s)."""
    if "compiling" not in _announced:
        _announced.add("compiling")
        print(
            f"pinext: compiling the simulation kernels for {method} (once: cached after; "
            "about 40 s on an empty cache, 3-20 s for each new kind of scene)...",
            file=sys.stderr,
            flush=True,
        )
