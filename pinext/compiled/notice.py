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


def compiling_notice() -> None:
    if "compiling" not in _announced:
        _announced.add("compiling")
        print(
            "pinext: compiling the simulation kernels (ABA, DOP853, Radau; first run only, "
            "cached)...",
            file=sys.stderr,
            flush=True,
        )
