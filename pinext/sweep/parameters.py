"""The points of a study: full grids, lists of points, Latin hypercube and random samples.

A *point* is a dict ``{parameter name: value}`` of scalars (int, float, bool or str); a study
is called as ``study(**point)``. Every point has a *key*, a hash of the study's name and the
point, under which its result is stored (:mod:`pinext.sweep.store`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..exceptions import InvalidParameter
from ..validation import integer

#: Columns that pinext adds to every row; parameters and results may not use these names.
RESERVED = ("key", "study", "status", "error", "warnings", "wall_time", "attempts", "worker")

Point = dict[str, Any]


def grid(axes: Mapping[str, Sequence[Any]]) -> list[Point]:
    """The full factorial grid of ``axes``, the last parameter varying fastest.

    Args:
        axes: Parameter name -> the values it takes.

    Returns:
        ``prod(len(values))`` points.

    Raises:
        InvalidParameter: An axis that is not a non-empty sequence of scalars.
    """
    names = list(axes)
    if not names:
        raise InvalidParameter(
            "the study has no points: the grid names no parameter (give e.g. {'x': [1, 2]})"
        )
    values = []
    for name in names:
        axis = axes[name]
        if isinstance(axis, (str, bytes)) or not isinstance(axis, Iterable):
            raise InvalidParameter(
                f"grid axis '{name}' must be a list of values, got {type(axis).__name__}"
            )
        axis = list(axis)
        if not axis:
            raise InvalidParameter(f"grid axis '{name}' is empty")
        values.append([_scalar(name, v) for v in axis])
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]


def _bounds(bounds: Mapping[str, Sequence[float]], n: int, log: Iterable[str]):
    if not isinstance(n, numbers.Integral) or n < 1:
        raise InvalidParameter(f"the number of samples must be a positive integer, got {n!r}")
    log = set(log)
    unknown = log - set(bounds)
    if unknown:
        raise InvalidParameter(
            f"log-scaled names {sorted(unknown)} are not among the bounds: {', '.join(bounds)}"
        )
    low, high = [], []
    for name, pair in bounds.items():
        try:
            a, b = (float(x) for x in pair)
        except (TypeError, ValueError):
            raise InvalidParameter(
                f"bounds of '{name}' must be a pair (low, high), got {pair!r}"
            ) from None
        if not (math.isfinite(a) and math.isfinite(b) and a < b):
            raise InvalidParameter(f"bounds of '{name}' must be finite with low < high, got {pair}")
        if name in log:
            if a <= 0:
                raise InvalidParameter(f"log-scaled '{name}' needs positive bounds, got {pair}")
            a, b = math.log(a), math.log(b)
        low.append(a)
        high.append(b)
    return list(bounds), np.array(low), np.array(high), log


def _scale(names, low, high, log, unit: np.ndarray) -> list[Point]:
    values = low + unit * (high - low)
    points = []
    for row in values:
        point = {}
        for name, value in zip(names, row, strict=True):
            point[name] = float(math.exp(value)) if name in log else float(value)
        points.append(point)
    return points


def latin_hypercube(
    bounds: Mapping[str, Sequence[float]], n: int, seed: int, *, log: Iterable[str] = ()
) -> list[Point]:
    """``n`` points of a Latin hypercube in the box ``bounds`` (McKay, Beckman & Conover 1979).

    Each parameter's range is cut into ``n`` equal strata and every stratum holds exactly one
    point, placed uniformly at random inside it; the strata are paired at random between
    parameters. The same ``seed`` gives the same points on every machine (numpy's PCG64).

    Args:
        bounds: Parameter name -> (low, high).
        n: Number of points.
        seed: Seed of the random generator.
        log: Names sampled uniformly in the logarithm (stiffnesses, masses spanning decades).

    Returns:
        ``n`` points with float values.

    Raises:
        InvalidParameter: Bad bounds or ``n``.
    """
    names, low, high, log = _bounds(bounds, n, log)
    rng = np.random.default_rng(integer("seed", seed, low=0))
    unit = np.empty((n, len(names)))
    for j in range(len(names)):
        unit[:, j] = (rng.permutation(n) + rng.random(n)) / n
    return _scale(names, low, high, log, unit)


def random(
    bounds: Mapping[str, Sequence[float]], n: int, seed: int, *, log: Iterable[str] = ()
) -> list[Point]:
    """``n`` points drawn uniformly and independently in the box ``bounds`` (Monte Carlo).

    Args:
        bounds: Parameter name -> (low, high).
        n: Number of points.
        seed: Seed of the random generator (numpy's PCG64).
        log: Names sampled uniformly in the logarithm.

    Returns:
        ``n`` points with float values.

    Raises:
        InvalidParameter: Bad bounds or ``n``.
    """
    names, low, high, log = _bounds(bounds, n, log)
    unit = np.random.default_rng(seed).random((n, len(names)))
    return _scale(names, low, high, log, unit)


def _scalar(name: str, value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (bool, int, float, str)):
        return value
    raise InvalidParameter(
        f"parameter '{name}' = {value!r}: values must be scalars (int, float, bool or str), "
        f"got {type(value).__name__}"
    )


def as_points(parameters: Any) -> list[Point]:
    """The points of ``parameters``: a grid (dict of lists), a list of dicts or a DataFrame.

    Raises:
        InvalidParameter: No points, points with different names, a reserved name or a value
            that is not a scalar.
    """
    if isinstance(parameters, Mapping):
        points = grid(parameters)
    elif hasattr(parameters, "to_dict") and hasattr(parameters, "columns"):  # a DataFrame
        points = parameters.to_dict("records")
    elif isinstance(parameters, Iterable) and not isinstance(parameters, (str, bytes)):
        points = list(parameters)
    else:
        raise InvalidParameter(
            "parameters must be a grid (dict of lists), a list of dicts or a DataFrame, got "
            f"{type(parameters).__name__}"
        )
    if not points:
        raise InvalidParameter("the study has no points")
    checked = []
    names = None
    for i, point in enumerate(points):
        if not isinstance(point, Mapping):
            raise InvalidParameter(f"point {i} must be a dict, got {type(point).__name__}")
        if names is None:
            names = list(point)
            clash = [n for n in names if n in RESERVED]
            if clash:
                raise InvalidParameter(
                    f"parameter names {clash} are reserved for the result columns "
                    f"({', '.join(RESERVED)})"
                )
        elif set(point) != set(names):
            raise InvalidParameter(
                f"point {i} has parameters {sorted(point)}, point 0 has {sorted(names)}; "
                "every point must name the same parameters"
            )
        checked.append({name: _scalar(name, point[name]) for name in names})
    return checked


def study_name(study: Callable[..., Any]) -> str:
    """``module.qualname`` of a study function (part of every point's key)."""
    func = getattr(study, "func", study)  # functools.partial
    name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"
    keywords = getattr(study, "keywords", None)
    if keywords:
        name += json.dumps(keywords, sort_keys=True, default=repr)
    return name


def point_key(name: str, point: Mapping[str, Any]) -> str:
    """The key of a point: 16 hex digits of the SHA-256 of the study's name and the point.

    Floats enter through their shortest round-trip representation, so the key is the same
    on every machine and for every run; ``1`` and ``1.0`` are different points.
    """
    text = json.dumps([name, dict(point)], sort_keys=True, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
