"""The progress bars of runs, and the switch that keeps them off where no one reads them.

A run draws a tqdm bar on stderr (``progress=None``: once it has lasted
:data:`PROGRESS_DELAY`). Inside :func:`without_bars` (a sweep's point on a Dask worker, whose
stderr the study's terminal shows beside the sweep's own bar) no run draws one, whatever its
``progress`` says.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from tqdm.auto import tqdm

__all__ = ["PROGRESS_DELAY", "bar", "without_bars"]

#: Wall time [s] after which a run shows its progress bar (``progress=None``).
PROGRESS_DELAY = 2.0
_QUIET: ContextVar[bool] = ContextVar("pinext_without_bars", default=False)


@contextmanager
def without_bars() -> Iterator[None]:
    """No run inside the block draws a progress bar (the setting is per thread or task: a
    thread started inside inherits it only through ``contextvars.copy_context``)."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def bar(progress: bool | None, total: float, desc: str) -> Any:
    """The tqdm bar of a run to ``total`` [s]: drawn from the start (``progress=True``),
    never (False, or inside :func:`without_bars`), or once the run has lasted
    :data:`PROGRESS_DELAY` (None)."""
    return tqdm(
        total=float(total),
        unit="s",
        disable=progress is False or _QUIET.get(),
        delay=PROGRESS_DELAY if progress is None else 0.0,
        desc=desc,
        bar_format="{l_bar}{bar}| {n:.3f}/{total:.3f} s [{elapsed}<{remaining}]",
    )
