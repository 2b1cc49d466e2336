"""The records of an optimal design (:func:`~pinext.planning.optimize`): the design variables
(:class:`Continuous` ranges, :class:`Choice` lists), the :class:`Evaluation` of one design
(criteria and constraint margins), the :class:`Problem`, and the result
(:class:`OptimalDesign`) with its catalogue neighbours and Pareto front, which prints its own
tables.

Every constraint is a margin, positive when the limit is met
(:attr:`pinext.planning.CheckRow.margin`, :math:`1 - \\text{value}/\\text{limit}`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .._format import table
from ..exceptions import InvalidParameter
from ..validation import real

__all__ = [
    "BINDING",
    "Choice",
    "Continuous",
    "Evaluation",
    "Neighbour",
    "OptimalDesign",
    "ParetoPoint",
    "Problem",
    "enumerate_designs",
]

#: A margin below this binds (the limit is active) [fraction of the limit].
BINDING = 0.05


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python number (JSON and TOML write it); anything else as is."""
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


# --------------------------------------------------------------------------------------------
# variables and problems


@dataclass(frozen=True)
class Continuous:
    """A continuous design variable in ``[low, high]``.

    Args:
        name: Variable name (``"JOINT.ratio"`` for a drive problem).
        low: Lower bound (its unit is the variable's).
        high: Upper bound, > ``low``.
    """

    name: str
    low: float
    high: float

    def __post_init__(self) -> None:
        low = real(f"variable '{self.name}': low", self.low)
        high = real(f"variable '{self.name}': high", self.high)
        if not low < high:
            raise InvalidParameter(
                f"variable '{self.name}': the bounds are inverted or empty (low = {low:g}, "
                f"high = {high:g}); give low < high"
            )
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)


@dataclass(frozen=True)
class Choice:
    """A discrete design variable: one of ``options`` (catalogue names or standard values),
    in the order that :class:`Neighbour` calls "one size smaller" (the previous option).

    Args:
        name: Variable name (``"JOINT.motor"``, ``"JOINT.ratio"`` for a drive problem).
        options: The options, at least one; numbers must be finite.
    """

    name: str
    options: tuple[Any, ...]

    def __post_init__(self) -> None:
        options = tuple(self.options)
        if not options:
            raise InvalidParameter(f"variable '{self.name}': the list of options is empty")
        for k, option in enumerate(options):
            if not isinstance(option, str):
                real(f"variable '{self.name}': option {k}", option)
        if len(set(options)) != len(options):
            raise InvalidParameter(f"variable '{self.name}': repeated options in {options}")
        object.__setattr__(self, "options", options)


Variable = Continuous | Choice


class Evaluation(NamedTuple):
    """What a :class:`Problem` computes for one design."""

    criteria: dict[str, float]
    """Criterion name -> value (the units are the criterion's)."""
    margins: dict[str, float]
    """Constraint name -> margin (positive: met; 1 − value/limit for a limit)."""

    @property
    def violation(self) -> float:
        """Σ max(0, −margin) (0 when every limit is met; inf for a NaN margin)."""
        total = 0.0
        for margin in self.margins.values():
            if not math.isfinite(margin):
                return math.inf
            total += max(0.0, -margin)
        return total

    @property
    def feasible(self) -> bool:
        """Every margin ≥ 0."""
        return self.violation == 0.0


@dataclass
class Problem:
    """An optimal-design problem.

    Args:
        variables: The design variables (distinct names).
        evaluate: ``design -> Evaluation``, ``design`` a dict variable name -> value. A
            picklable callable (a module-level function or an object) when evaluations run
            in worker processes.
        minimize: The criterion to minimise, or two criteria (a Pareto front unless
            ``weights`` are given), or several with ``weights`` (a weighted sum).
        weights: One weight per criterion of ``minimize``: minimise Σ w_i f_i.
        verify: Optional ``(design) -> margins`` (e.g. a simulation), run only on the best
            candidates that meet every limit of ``evaluate``; their margins join the
            constraints under ``"verify: ..."`` names.
        title: Shown in reports.
        groups: Optional partition of the variables into groups that the criterion sums
            over independently, each constraint reading one group: ``evaluate`` then accepts
            the design of one group alone and gives that group's criteria and constraints.
            :func:`optimize` solves one small problem per group (a drive problem's joints:
            the joint torques of the screening do not depend on the drives).
    """

    variables: Sequence[Variable]
    evaluate: Callable[[dict[str, Any]], Evaluation]
    minimize: str | Sequence[str]
    weights: Sequence[float] | None = None
    verify: Callable[[dict[str, Any]], Mapping[str, float]] | None = None
    title: str = "optimal design"
    groups: Sequence[Sequence[str]] | None = None

    def __post_init__(self) -> None:
        self.variables = list(self.variables)
        if not self.variables:
            raise InvalidParameter("a Problem needs at least one design variable")
        for variable in self.variables:
            if not isinstance(variable, (Continuous, Choice)):
                raise InvalidParameter(f"variables must be Continuous or Choice, got {variable!r}")
        names = [v.name for v in self.variables]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise InvalidParameter(f"repeated variable names: {', '.join(repeated)}")
        criteria = [self.minimize] if isinstance(self.minimize, str) else list(self.minimize)
        if not criteria or not all(isinstance(c, str) for c in criteria):
            raise InvalidParameter(
                f"minimize must be a criterion name or a list of them, got {self.minimize!r}"
            )
        self.minimize = criteria
        if self.weights is not None:
            weights = [real("weights", w) for w in self.weights]
            if len(weights) != len(criteria) or any(w < 0 for w in weights) or sum(weights) == 0:
                raise InvalidParameter(
                    f"weights must be one non-negative number per criterion of minimize "
                    f"({', '.join(criteria)}), not all zero; got {list(self.weights)}"
                )
            self.weights = weights
        elif len(criteria) > 2:
            raise InvalidParameter(
                f"minimize names {len(criteria)} criteria: give weights= (a weighted sum), "
                "or at most two criteria (a Pareto front)"
            )
        if self.groups is not None:
            self.groups = [list(g) for g in self.groups]
            flat = [n for g in self.groups for n in g]
            if sorted(flat) != sorted(names):
                raise InvalidParameter(
                    f"groups must partition the variables {names} (each once), got {self.groups}"
                )

    @property
    def pareto(self) -> bool:
        """Two criteria without weights: a Pareto front."""
        return self.weights is None and len(self.minimize) == 2


def enumerate_designs(problem: Problem) -> Iterable[dict[str, Any]]:
    """Every design of a problem of :class:`Choice` variables only (exhaustive enumeration,
    the reference that tests compare :func:`optimize` with)."""
    if not all(isinstance(v, Choice) for v in problem.variables):
        raise InvalidParameter("enumerate_designs needs Choice variables only")
    names = [v.name for v in problem.variables]
    for values in itertools.product(*(v.options for v in problem.variables)):  # type: ignore[union-attr]
        yield {n: plain(x) for n, x in zip(names, values, strict=True)}


# --------------------------------------------------------------------------------------------
# results


class ParetoPoint(NamedTuple):
    """One design of a Pareto front."""

    design: dict[str, Any]
    """Variable name -> value."""
    criteria: dict[str, float]
    """The two criteria (and any other the evaluation gives)."""


class Neighbour(NamedTuple):
    """A catalogue neighbour of the chosen design: one :class:`Choice` one option smaller
    (the other options of the same group, e.g. the joint's ratio, tried in turn)."""

    variable: str
    """The variable moved one option down."""
    design: dict[str, Any]
    """The best of the neighbour's designs (least violation, then criterion)."""
    feasible: bool
    """Whether any of them meets every limit."""
    constraint: str
    """The constraint with the smallest margin in ``design``."""
    margin: float
    """Its margin (negative: exceeded)."""


def _value(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


@dataclass
class OptimalDesign:
    """The result of :func:`optimize`.

    Attributes:
        design: Variable name -> chosen value.
        objective: The minimised criterion (the weighted sum with weights; for a Pareto
            front, the first criterion of the chosen point) at the chosen design.
        criteria: Every criterion that the evaluation gives at the chosen design.
        constraints: Constraint name -> margin (positive: met) at the chosen design,
            the ``verify`` margins included.
        evaluations: Distinct designs evaluated (screening; ``verifications`` apart).
        method: The scipy optimizer(s) used.
        feasible: Every constraint met.
        pareto: The Pareto front (two criteria), sorted by the first criterion; else None.
        neighbours: The chosen design's catalogue neighbours (one size smaller).
        verifications: Designs that ``verify`` ran on.
        problem: The problem solved.
    """

    design: dict[str, Any]
    objective: float
    criteria: dict[str, float]
    constraints: dict[str, float]
    evaluations: int
    method: str
    feasible: bool
    pareto: list[ParetoPoint] | None = None
    neighbours: list[Neighbour] = field(default_factory=list)
    verifications: int = 0
    problem: Problem | None = None

    def binding(self, tolerance: float = BINDING) -> dict[str, float]:
        """The constraints whose margin is below ``tolerance`` (the limits that bind)."""
        return {k: m for k, m in self.constraints.items() if m < tolerance}

    def sections(self) -> dict[str, tuple[list[str], list[list[str]]]]:
        """Title -> (header, rows) of each table of the report: the design, the criteria,
        the margins (tightest first, the binding ones and failures marked), the catalogue
        neighbours and the Pareto front."""
        out = {
            "design": (["variable", "value"], [[k, _value(v)] for k, v in self.design.items()]),
            "criteria": (
                ["criterion", "value"],
                [[k, f"{v:.6g}"] for k, v in self.criteria.items()],
            ),
            "constraints": (
                ["constraint", "margin", ""],
                [
                    [
                        k,
                        f"{100 * m:+.2f} %",
                        "binds" if 0 <= m < BINDING else ("FAIL" if not m >= 0 else ""),
                    ]
                    for k, m in sorted(self.constraints.items(), key=lambda kv: kv[1])
                ],
            ),
        }
        if self.neighbours:
            out["catalogue neighbours (one size smaller)"] = (
                [
                    "variable",
                    "smaller",
                    "best of its group",
                    "result",
                    "tightest constraint",
                    "margin",
                ],
                [
                    [
                        n.variable,
                        str(n.design[n.variable]),
                        ", ".join(
                            f"{k}={_value(v)}"
                            for k, v in n.design.items()
                            if k.split(".")[0] == n.variable.split(".")[0] and k != n.variable
                        ),
                        "pass" if n.feasible else "FAIL",
                        n.constraint,
                        f"{100 * n.margin:+.2f} %",
                    ]
                    for n in self.neighbours
                ],
            )
        if self.pareto:
            names = list(self.problem.minimize) if self.problem is not None else []
            out["Pareto front"] = (
                [*names, "design"],
                [
                    [
                        *(f"{p.criteria[c]:.6g}" for c in names),
                        ", ".join(f"{k}={_value(v)}" for k, v in p.design.items()),
                    ]
                    for p in self.pareto
                ],
            )
        return out

    def table(self) -> str:
        """Plain-text report: the design, the criteria, the margins, the neighbours."""
        parts = [
            f"optimal design: objective {self.objective:.6g} after {self.evaluations} "
            f"evaluations ({self.method})"
            + (f"; {self.verifications} verified by simulation" if self.verifications else "")
        ]
        for title, (header, rows) in self.sections().items():
            parts += ["", f"{title}:", table(rows, header)]
        return "\n".join(parts)
