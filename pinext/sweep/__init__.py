"""Parameter sweeps and Monte Carlo studies on Dask.

A designer varies parameters by the thousand (Vukobratović & Potkonjak, §20.4.1: "a designer
can quickly check a large number of different configurations"). ``pinext.sweep`` runs a
study — a function ``study(**point) -> dict[str, float]`` — over a grid or samples of
points on Dask (``dask.distributed``): an embedded ``LocalCluster`` on one machine, or an
existing cluster through its scheduler's address, unchanged.

``pinext.sweep`` is both the function and the namespace::

    import pinext as px

    df = px.sweep(px.sweep.studies.modal, {"sublinks": [2, 5, 10], "side": [0.01, 0.02]})
    points = px.sweep.latin_hypercube({"speed": (0.1, 1.0), "mass": (0.5, 5.0)}, 64, seed=1)
    df = px.sweep(px.sweep.studies.impact, points, path="out/impact")   # resumable
    px.sweep.plot(df, "speed", "mass", hue="impulse")

(``px.sweep`` is an instance of :class:`Sweep`, which calls :func:`run`; the functions also
import from this package: ``from pinext.sweep import run, latin_hypercube``.)

Dask, pandas and pyarrow are optional: ``pip install "pinext[sweep]"``. They are imported
when a study runs, never by ``import pinext``.
"""

from __future__ import annotations

from typing import Any

from . import studies
from .dependencies import REQUIRED as REQUIRED
from .dependencies import require
from .engine import local_cluster, run
from .parameters import grid, latin_hypercube, random
from .plot import plot
from .store import read


class Sweep:
    """``pinext.sweep``: call it to run a study (:func:`run`); its attributes are the rest.

    Attributes:
        grid: :func:`pinext.sweep.parameters.grid`.
        latin_hypercube: :func:`pinext.sweep.parameters.latin_hypercube`.
        random: :func:`pinext.sweep.parameters.random`.
        plot: :func:`pinext.sweep.plot.plot`.
        read: :func:`pinext.sweep.store.read`, a study's dataset as a DataFrame.
        local_cluster: :func:`pinext.sweep.engine.local_cluster`.
        run: :func:`pinext.sweep.engine.run` (the same as calling the object).
        studies: The ready studies (:mod:`pinext.sweep.studies`).
    """

    grid = staticmethod(grid)
    latin_hypercube = staticmethod(latin_hypercube)
    random = staticmethod(random)
    plot = staticmethod(plot)
    read = staticmethod(read)
    local_cluster = staticmethod(local_cluster)
    require = staticmethod(require)
    run = staticmethod(run)
    studies = studies

    def __call__(
        self,
        study: Any,
        parameters: Any,
        *,
        client: Any = None,
        path: Any = None,
        retries: int = 2,
        progress: bool = True,
        **options: Any,
    ) -> Any:
        """Run ``study`` over ``parameters``; see :func:`pinext.sweep.engine.run`."""
        return run(
            study,
            parameters,
            client=client,
            path=path,
            retries=retries,
            progress=progress,
            **options,
        )

    def __repr__(self) -> str:
        return "<pinext.sweep: call it to run a study; .latin_hypercube, .random, .plot, ...>"


sweep = Sweep()
sweep.__doc__ = run.__doc__

__all__ = [
    "Sweep",
    "grid",
    "latin_hypercube",
    "local_cluster",
    "plot",
    "random",
    "read",
    "require",
    "run",
    "studies",
    "sweep",
]
