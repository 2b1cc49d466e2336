"""Helpers shared by the benchmarks: timing, locating example-robot-data, equal-error
comparison of two peers' error-time curves."""

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


def per_call_in_turn(
    funcs: list[Callable[[], object]], number: int, repeat: int = 7
) -> list[float]:
    """Best-of-``repeat`` time of one call of each function [s].

    Within every repeat the functions run one after the other (``number`` calls each), so that
    the ratios between them are taken in the same state of the machine.
    """
    for func in funcs:
        func()  # warm up (compilation, caches)
    best = [float("inf")] * len(funcs)
    for _ in range(repeat):
        for i, func in enumerate(funcs):
            start = time.perf_counter()
            for _ in range(number):
                func()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


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


def markdown(rows: list, header: list[str], caption: str | None, bold: str | None = None) -> str:
    """The table as Markdown under its caption, stamped with the date and the versions of
    pinext, Pinocchio and Numba (no caption: the table alone; the column ``bold`` in bold)."""
    import datetime

    import numba
    import pinocchio as pin

    import pinext as px

    versions = f"pinext {px.__version__}, Pinocchio {pin.__version__}, Numba {numba.__version__}"
    stamp = f"{datetime.date.today().isoformat()}, {versions}: {caption}"
    lines = [stamp, ""] if caption is not None else []
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    column = header.index(bold) if bold is not None else -1
    for row in rows:
        cells = [f"**{c}**" if i == column else str(c) for i, c in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
