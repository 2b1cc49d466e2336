"""The Parquet dataset of a study: one row per point, appended as results arrive.

A dataset is a folder of Parquet files (``part-<time>-<id>.parquet``), each holding the rows
that arrived since the previous one. Files are written under a hidden temporary name and
renamed, so an interrupted study never leaves a half-written file. ``pandas.read_parquet``
and ``pyarrow.dataset`` read the folder directly; :func:`read` also reconciles rows of the
same point written by several runs.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import FileFormatError, InvalidParameter
from .dependencies import require
from .parameters import RESERVED

if TYPE_CHECKING:
    import pandas as pd

#: Statuses of a row: the study returned, the study raised, every attempt lost its worker.
STATUSES = ("ok", "error", "lost")
#: Statuses that a rerun does not compute again.
DONE = ("ok", "error")


def _pandas():
    require()
    import pandas as pd

    return pd


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.glob("*.parquet") if not p.name.startswith((".", "_")))


def read(path: str | os.PathLike) -> pd.DataFrame:
    """The rows of a study's dataset, one per point (a DataFrame, empty if there is none).

    When several runs wrote the same point, the last row that is done (``ok`` or ``error``)
    wins, else the last ``lost`` one.

    Args:
        path: The dataset folder given to :func:`pinext.sweep` as ``path``.

    Raises:
        InvalidParameter: ``path`` is a file, not a folder.
    """
    pd = _pandas()
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InvalidParameter(f"{path} is a file; a study's dataset is a folder")
    files = _files(path) if path.is_dir() else []
    if not files:
        return pd.DataFrame(columns=list(RESERVED))
    frames = []
    for file in files:
        try:
            df = pd.read_parquet(file)
        except Exception as err:  # noqa: BLE001 - pyarrow's many error types
            raise FileFormatError(
                str(file), "parquet", f"unreadable ({type(err).__name__}: {err})"
            ) from None
        missing = [c for c in ("key", "status") if c not in df.columns]
        if missing:
            raise FileFormatError(
                str(file),
                "columns",
                f"not a row file of a pinext sweep (no column {', '.join(missing)}); give the "
                "study a folder of its own (path=), or move the file away",
            )
        frames.append(df)
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=list(RESERVED))
    df = pd.concat(frames, ignore_index=True)
    rank = df["status"].isin(DONE).astype(int)
    order = rank.to_numpy() * len(df) + np.arange(len(df))  # done rows after lost ones, then age
    df = df.iloc[order.argsort(kind="stable")]
    return df.drop_duplicates("key", keep="last").sort_index().reset_index(drop=True)


class Writer:
    """Appends rows to a dataset folder, one Parquet file per :meth:`flush`.

    Args:
        path: The folder (created if missing).
        every: Flush when a buffered row is older than this [s].
    """

    def __init__(self, path: str | os.PathLike, every: float = 1.0) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise InvalidParameter(f"{self.path} is a file; a study's dataset is a folder")
        self.path.mkdir(parents=True, exist_ok=True)
        self.every = every
        self.rows: list[dict[str, Any]] = []
        self.oldest = 0.0
        self.written = 0

    def add(self, row: Mapping[str, Any]) -> None:
        """Buffer a row; write the buffer if its oldest row waited ``every`` seconds."""
        if not self.rows:
            self.oldest = time.monotonic()
        self.rows.append(dict(row))
        self.tick()

    def tick(self) -> None:
        """Write the buffer if its oldest row waited ``every`` seconds."""
        if self.rows and time.monotonic() - self.oldest >= self.every:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one new Parquet file (atomically)."""
        if not self.rows:
            return
        pd = _pandas()
        df = pd.DataFrame(self.rows)
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = self.path / f".{name}.tmp"
        df.to_parquet(tmp, index=False)
        os.replace(tmp, self.path / name)
        self.written += len(self.rows)
        self.rows = []


def frame(rows: Iterable[Mapping[str, Any]], parameters: list[str]) -> pd.DataFrame:
    """A DataFrame of ``rows``: the parameters, the results, then pinext's columns."""
    pd = _pandas()
    df = pd.DataFrame(list(rows))
    results = [c for c in df.columns if c not in parameters and c not in RESERVED]
    reserved = [
        c
        for c in ("wall_time", "status", "error", "warnings", "attempts", "worker", "key", "study")
        if c in df.columns
    ]
    return df.reindex(columns=[*parameters, *results, *reserved])
