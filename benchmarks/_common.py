"""Helpers shared by the benchmarks: timing and locating example-robot-data."""

from __future__ import annotations

import site
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path


def per_call(func: Callable[[], object], min_time: float = 0.2) -> float:
    """Median-of-5 wall time of one call [s], each batch running at least ``min_time``."""
    func()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            func()
        elapsed = time.perf_counter() - start
        if elapsed > min_time / 5:
            break
        n *= 2
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            func()
        samples.append((time.perf_counter() - start) / n)
    return sorted(samples)[2]


def robots_dir() -> Path | None:
    """The example-robot-data ``robots`` folder, or None."""
    for base in [sysconfig.get_paths()["purelib"], *site.getsitepackages()]:
        path = Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if path.is_dir():
            return path
    return None


def print_table(rows, header) -> None:
    """Print an aligned table."""
    from pinext.cli import table

    print(table(rows, header))
