"""The optional dependencies of ``pinext.sweep``: Dask, pandas and pyarrow (``pinext[sweep]``)."""

from __future__ import annotations

import importlib.util

from ..exceptions import MissingDependency

#: Distributions needed to run a study: (import name, distribution).
REQUIRED = (
    ("dask", "dask"),
    ("distributed", "distributed"),
    ("pandas", "pandas"),
    ("pyarrow", "pyarrow"),
)


def require() -> None:
    """Check that the ``sweep`` extra is installed.

    Raises:
        MissingDependency: dask, distributed, pandas or pyarrow is missing; the message names
            the extra ``pinext[sweep]``.
    """
    missing = [dist for module, dist in REQUIRED if importlib.util.find_spec(module) is None]
    if missing:
        raise MissingDependency("pinext.sweep", missing, "sweep")
