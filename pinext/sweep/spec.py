"""``pinext sweep SPEC.toml``: a ready study, a robot and a parameter grid in one file.

.. code-block:: toml

    study = "drive_tracking"          # modal, drive_tracking or impact
    robot = "six_dof_arm"             # optional: URDF path or project robot name

    [fixed]                           # optional: arguments held constant
    duration = 0.6

    [grid]                            # a full grid ...
    ratio = [50.0, 100.0, 160.0]
    stiffness = [5.0e3, 1.0e4, 2.0e4]

    # ... or samples instead of [grid]:
    # [samples]
    # method = "latin_hypercube"      # or "random"
    # n = 64
    # seed = 1
    # log = ["stiffness"]             # optional: sampled in the logarithm
    # bounds = { ratio = [50.0, 160.0], stiffness = [5.0e3, 2.0e4] }

    [plot]                            # optional
    response = "peak_tracking_error"  # default: the study's main result
"""

from __future__ import annotations

import inspect
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import FileFormatError, InvalidParameter
from ..validation import describe, duration_text, flag, integer, real, thousands
from . import parameters as sampling
from .engine import usable_cpus
from .studies import STUDIES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TOP_KEYS = ("study", "robot", "fixed", "grid", "samples", "plot")
SAMPLE_METHODS = ("latin_hypercube", "random")


#: Most points a specification may ask for without ``--force``.
MAX_POINTS = 100_000


def _refuse_large(source: str, spec: dict[str, Any], force: bool) -> None:
    """Refuse, before building it, a grid or a sample of more than :data:`MAX_POINTS`."""
    if force:
        return
    if isinstance(spec.get("grid"), dict):
        sizes = [len(v) if isinstance(v, list) else 1 for v in spec["grid"].values()]
        count = math.prod(sizes)
        shape = " x ".join(str(s) for s in sizes)
    elif isinstance(spec.get("samples"), dict) and isinstance(spec["samples"].get("n"), int):
        count, shape = spec["samples"]["n"], "samples.n"
    else:
        return
    if count > MAX_POINTS:
        raise InvalidParameter(
            f"{source}: the study has {thousands(count)} points ({shape}); at one second per "
            f"point on {usable_cpus()} worker(s) that is about "
            f"{duration_text(count / usable_cpus())}; take fewer values, or sample the box "
            f'([samples], method = "latin_hypercube"), or pass --force to run it anyway '
            f"(at most {thousands(MAX_POINTS)} points without it)"
        )


def load_spec(path: str | Path, *, force: bool = False) -> tuple[Any, list[dict[str, Any]], str]:
    """The study, its points and the response to draw, from a sweep specification.

    Raises:
        FileFormatError: Unknown keys, an unknown study or parameter, neither or both of
            ``[grid]`` and ``[samples]``; messages list the valid choices.
    """
    source = str(path)
    try:
        spec = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise FileFormatError(source, "TOML", "not a UTF-8 text file") from None
    except OSError as err:
        raise FileFormatError(source, "file", err.strerror or str(err)) from None
    except tomllib.TOMLDecodeError as err:
        raise FileFormatError(source, "TOML", str(err)) from None
    unknown = sorted(set(spec) - set(TOP_KEYS))
    if unknown:
        raise FileFormatError(
            source, ", ".join(unknown), f"unknown keys; valid: {', '.join(TOP_KEYS)}"
        )
    name = spec.get("study")
    if name not in STUDIES:
        raise FileFormatError(
            source, "study", f"unknown study {name!r}; ready studies: {', '.join(STUDIES)}"
        )
    ready = STUDIES[name]
    valid = list(inspect.signature(ready.function).parameters)
    plot = spec.get("plot", {})
    if not isinstance(plot, dict) or set(plot) - {"response"}:
        raise FileFormatError(source, "plot", "a table with one key, response")
    response = plot.get("response", ready.response)
    if ready.results and response not in ready.results:
        raise FileFormatError(
            source,
            "plot.response",
            f"{response!r} is not a result of study '{name}'; its results: "
            f"{', '.join(ready.results)}",
        )
    _refuse_large(source, spec, force)
    if ("grid" in spec) == ("samples" in spec):
        raise FileFormatError(source, "grid/samples", "give either a [grid] or a [samples] table")
    try:
        if "grid" in spec:
            points = sampling.grid(spec["grid"])
        else:
            samples = dict(spec["samples"])
            method = samples.pop("method", "latin_hypercube")
            if method not in SAMPLE_METHODS:
                raise FileFormatError(
                    source, "samples.method", f"{method!r}; valid: {', '.join(SAMPLE_METHODS)}"
                )
            missing = [k for k in ("bounds", "n", "seed") if k not in samples]
            if missing:
                raise FileFormatError(source, "samples", f"missing {', '.join(missing)}")
            points = getattr(sampling, method)(
                samples["bounds"], samples["n"], samples["seed"], log=samples.get("log", ())
            )
    except FileFormatError:
        raise
    except Exception as err:  # InvalidParameter from the samplers, bad types
        raise FileFormatError(source, "grid" if "grid" in spec else "samples", str(err)) from None
    fixed = dict(spec.get("fixed", {}))
    if "robot" in spec:
        fixed["robot"] = spec["robot"]
    for key in [*points[0], *fixed]:
        if key not in valid:
            raise FileFormatError(
                source,
                key,
                f"not a parameter of study '{name}'; its parameters: {', '.join(valid)}",
            )
    points = [{**fixed, **point} for point in points]
    _check_types(source, spec, ready.function, points)
    return ready.function, points, response


def _where(spec: dict[str, Any], key: str) -> str:
    """The table of the specification that gives a parameter (for the error)."""
    if key == "robot" and "robot" in spec:
        return "robot"
    if key in spec.get("fixed", {}):
        return f"fixed.{key}"
    if key in spec.get("grid", {}):
        return f"grid.{key}"
    return f"samples.bounds.{key}"


def _check_types(source: str, spec: dict[str, Any], study: Any, points: list) -> None:
    """Each parameter's values against the type the study declares (``int``, ``float``,
    ``str``, ``bool``), before any point runs: a wrong value would otherwise fail in every
    point, each recorded as an error, and the command would end as if it had succeeded."""
    kinds = {
        name: str(parameter.annotation).replace(" ", "")
        for name, parameter in inspect.signature(study).parameters.items()
    }
    checked: set[tuple[str, str]] = set()
    for point in points:
        for key, value in point.items():
            if (key, repr(value)) in checked:
                continue
            checked.add((key, repr(value)))
            kind = kinds.get(key, "")
            try:
                if kind in ("int", "<class'int'>"):
                    integer(key, value)
                elif kind in ("float", "<class'float'>"):
                    real(key, value)
                elif kind in ("float|None", "None|float", "Optional[float]"):
                    real(key, value, none=True)
                elif kind in ("bool", "<class'bool'>"):
                    flag(key, value)
                elif kind in ("str", "<class'str'>") and not isinstance(value, str):
                    raise InvalidParameter(f"{key} must be text, got {describe(value)}")
            except InvalidParameter as err:
                raise FileFormatError(
                    source, _where(spec, key), f"{err} (study '{study.__name__}')"
                ) from None


def run_spec(
    spec: str | Path,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    out: str | Path | None = None,
    progress: bool = True,
    force: bool = False,
) -> int:
    """Run a sweep specification: the dataset and a plot in ``out``, a summary on screen.

    Args:
        spec: The TOML file.
        scheduler: Address of an existing Dask scheduler; default an embedded LocalCluster.
        workers: Worker processes of the embedded cluster (default: the usable CPUs).
        out: Output folder (default ``out/sweep_<spec stem>``); the dataset is
            ``out/results`` (rerunning resumes it), the plot ``out/<response>.png``.
        progress: Show the progress bar.
        force: Run a study of more than :data:`MAX_POINTS` points.

    Returns:
        0 (failed points are reported, not fatal).
    """
    from .._format import table
    from .engine import local_cluster, reachable, run

    spec = Path(spec)
    out = Path("out") / f"sweep_{spec.stem}" if out is None else Path(out)
    if out.exists() and not out.is_dir():
        raise InvalidParameter(f"--out {out} is a file; give a folder (created if missing)")
    study, points, response = load_spec(spec, force=force)
    if scheduler is not None:
        reachable(scheduler)
    out.mkdir(parents=True, exist_ok=True)
    dataset = out / "results"
    started = time.perf_counter()
    owned: list[Any] = []
    client: Any = scheduler
    if scheduler is None:  # the embedded cluster's scratch space (lock files) under --out
        from distributed import Client

        owned.append(local_cluster(workers, local_directory=str(out / "dask-scratch")))
        client = Client(owned[0], set_as_default=False)
        owned.append(client)
    try:
        df = run(study, points, client=client, path=dataset, progress=progress)
    finally:
        for resource in reversed(owned):
            resource.close()
    wall = time.perf_counter() - started
    counts = df["status"].value_counts()
    print(
        table(
            [
                ["study", f"{study.__name__} ({len(df)} points)"],
                [
                    "ok / error / timeout / lost",
                    " / ".join(str(counts.get(s, 0)) for s in ("ok", "error", "timeout", "lost")),
                ],
                ["wall time [s]", f"{wall:.1f}"],
                ["study time on workers [s]", f"{np.nansum(df['wall_time']):.1f}"],
                ["dataset", str(dataset)],
            ],
            ["sweep", "value"],
        )
    )
    swept = [p for p in points[0] if df[p].nunique() > 1]
    ok = df[df["status"] == "ok"]
    results = [c for c in ok.columns if c not in points[0] and c not in _BOOKKEEPING]
    if len(ok) and results:
        rows = []
        for name in results:
            best = ok.loc[ok[name].idxmin()] if ok[name].notna().any() else None
            rows.append(
                [
                    name,
                    f"{ok[name].min():.4g}",
                    f"{ok[name].median():.4g}",
                    f"{ok[name].max():.4g}",
                    ", ".join(
                        f"{p}={best[p]:g}" if isinstance(best[p], float) else f"{p}={best[p]}"
                        for p in swept
                    )
                    if best is not None
                    else "-",
                ]
            )
        print()
        print(table(rows, ["result", "min", "median", "max", "at the min"]))
    for _, row in df[df["status"] != "ok"].head(5).iterrows():
        print(f"{row['status']}: {', '.join(f'{p}={row[p]}' for p in swept)}: {row['error']}")
    if len(ok) and response in ok.columns and swept:
        figure = draw(ok, swept, response)
        target = out / f"{response}.png"
        figure.savefig(target, dpi=120)
        print(f"wrote {target}")
    return 0


_BOOKKEEPING = sampling.RESERVED  # pinext's own columns, not results


def draw(df: Any, swept: list[str], response: str) -> Any:
    """The response against one swept parameter, a heat map over two, a panel per parameter
    beyond."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plot import plot

    if len(swept) == 2:
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        plot(df, swept[0], swept[1], hue=response, ax=ax)
    else:
        fig, axes = plt.subplots(1, len(swept), figsize=(4.0 * len(swept), 3.6), squeeze=False)
        for ax, name in zip(axes[0], swept, strict=True):
            plot(df, name, response, ax=ax)
    fig.suptitle(response)
    fig.tight_layout()
    return fig
