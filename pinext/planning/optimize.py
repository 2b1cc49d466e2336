"""Optimal design: the parameters that meet the required performance within the imposed
limits at the least cost (Vukobratović & Potkonjak, §20.4.1).

The handbook's third step of the design use of dynamics, after the drive requirements and the
interactive check against limits: "the complete CAD system for robots: algorithms and software
that would automatically find the optimal robot parameters based on the required performances
and the imposed limits", with a criterion of optimality and an optimization technique.

A :class:`Problem` is design variables (:class:`Continuous` ranges, :class:`Choice` lists:
catalogue motors, standard ratios) and an evaluation ``design -> (criteria, margins)``; every
constraint is a margin, positive when the limit is met (:attr:`pinext.planning.CheckRow.margin`,
:math:`1 - \\text{value}/\\text{limit}`). :class:`DriveProblem` builds one from a robot, a motion
and a motor catalogue — from a ``pinext design`` specification with ``[variables]`` and
``[objective]`` tables, or in Python — and screens each candidate by inverse dynamics
(:func:`~pinext.planning.drive_requirements`: the joint side once, the motor side per
candidate); an optional ``verify`` (a simulation) runs only on the best candidates that pass
the screening.

Optimizers (scipy, a well-kept library; nothing hand-written):

* one continuous variable, one criterion, no constraint: ``scipy.optimize.minimize_scalar``
  (bounded Brent) — the gear ratio of inertia matching, to the bracket's tolerance in a few
  tens of evaluations;
* otherwise ``scipy.optimize.differential_evolution``, with ``integrality`` for the
  :class:`Choice` variables (their option index) — a population method that needs no gradient
  and takes catalogue choices, and whose ``workers=`` map evaluates a generation in parallel
  (a process pool, or Dask through a map-like callable). Constraints follow Deb's feasibility
  rules folded into one score: a feasible design scores :math:`f/(|f| + s) \\in (-1, 1)`
  (monotone in the criterion :math:`f`), an infeasible one :math:`1 + \\sum \\max(0, -m_i)`;
* all variables continuous: the best design of differential evolution polished by
  ``scipy.optimize.minimize`` (SLSQP) with the margins as inequality constraints, so that the
  active limits are met to the solver's tolerance.

Two criteria give a Pareto front by the ε-constraint method (Haimes et al. 1971): the first
criterion minimised with the second bounded by :math:`\\varepsilon_k`, for ``pareto_points``
values between the two single-criterion optima, the non-dominated results kept; it also finds
the non-convex parts of a front that a weighted sum misses. Weights turn several criteria into
one weighted sum instead.

Evaluations are cached by design (a design that differential evolution proposes twice is
evaluated once, and counted once), and with ``path=`` stored as JSON lines: a run that is
interrupted and started again reads them back (resumable, as :func:`pinext.sweep` is).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..drives import DCMotor, Drive, ElasticTransmission, Gear
from ..exceptions import FileFormatError, InfeasibleDesign, InvalidParameter, NameNotFound
from .design import (
    CatalogueMotor,
    DesignSpec,
    DriveLimits,
    LinkLimits,
    check_design,
    read_design,
)
from .drive_sizing import DriveReport, _assemble, _joint_side

__all__ = [
    "Choice",
    "Continuous",
    "DriveProblem",
    "Evaluation",
    "Neighbour",
    "OptimalDesign",
    "ParetoPoint",
    "Problem",
    "enumerate_designs",
    "optimize",
]


# --------------------------------------------------------------------------------------------
# variables


def _finite(where: str, value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{where} must be a number, got {value!r}") from None
    if not math.isfinite(out):
        raise InvalidParameter(f"{where} must be a finite number, got {value!r}")
    return out


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
        low = _finite(f"variable '{self.name}': low", self.low)
        high = _finite(f"variable '{self.name}': high", self.high)
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
                _finite(f"variable '{self.name}': option {k}", option)
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
            weights = [_finite("weights", w) for w in self.weights]
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

    def binding(self, tolerance: float = 0.05) -> dict[str, float]:
        """The constraints whose margin is below ``tolerance`` (the limits that bind)."""
        return {k: m for k, m in self.constraints.items() if m < tolerance}

    def table(self) -> str:
        """Plain-text report: the design, the criteria, the margins, the neighbours."""
        from .optimize_report import text_report

        return text_report(self)


# --------------------------------------------------------------------------------------------
# evaluation cache and maps


def _key(design: Mapping[str, Any]) -> str:
    return json.dumps({k: design[k] for k in sorted(design)}, sort_keys=True)


def _plain(value: Any) -> Any:
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


class _Evaluator:
    """Decodes x, evaluates designs once each (in parallel through ``mapper``), scores them."""

    def __init__(
        self,
        problem: Problem,
        mapper: Callable[[Callable, Iterable], Iterable] | None,
        path: Path | None,
    ) -> None:
        self.problem = problem
        self.variables = list(problem.variables)
        self.mapper = mapper
        self.cache: dict[str, Evaluation] = {}
        self.designs: dict[str, dict[str, Any]] = {}
        self.path = path
        self.seen: set[str] = set()  # designs asked for in this run (stored ones included)
        self.extra: list[tuple[str, float]] = []  # ε-constraints: (criterion, bound)
        self.scale = 1.0
        if path is not None and path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    key = _key(row["design"])
                    self.designs[key] = row["design"]
                    self.cache[key] = Evaluation(row["criteria"], row["margins"])

    # -- x <-> design
    def bounds(self) -> list[tuple[float, float]]:
        return [
            (v.low, v.high) if isinstance(v, Continuous) else (0.0, len(v.options) - 1.0)
            for v in self.variables
        ]

    def integrality(self) -> np.ndarray:
        return np.array([isinstance(v, Choice) for v in self.variables])

    def design(self, x: Sequence[float] | np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for v, value in zip(self.variables, x, strict=True):
            if isinstance(v, Choice):
                index = int(np.clip(np.round(value), 0, len(v.options) - 1))
                out[v.name] = _plain(v.options[index])
            else:
                out[v.name] = float(np.clip(value, v.low, v.high))
        return out

    def x(self, design: Mapping[str, Any]) -> np.ndarray:
        return np.array(
            [
                v.options.index(design[v.name]) if isinstance(v, Choice) else design[v.name]
                for v in self.variables
            ],
            dtype=float,
        )

    # -- evaluations
    def prefetch(self, designs: Iterable[dict[str, Any]]) -> None:
        todo: dict[str, dict[str, Any]] = {}
        for design in designs:
            key = _key(design)
            self.seen.add(key)
            if key not in self.cache:
                todo[key] = design
        if not todo:
            return
        run = self.problem.evaluate
        if self.mapper is None or len(todo) == 1:
            results = [run(d) for d in todo.values()]
        else:
            results = list(self.mapper(run, list(todo.values())))
        lines = []
        for (key, design), result in zip(todo.items(), results, strict=True):
            evaluation = Evaluation(
                {k: float(v) for k, v in result.criteria.items()},
                {k: float(v) for k, v in result.margins.items()},
            )
            missing = [c for c in self.problem.minimize if c not in evaluation.criteria]
            if missing:
                raise NameNotFound("criterion", missing[0], list(evaluation.criteria))
            self.cache[key] = evaluation
            self.designs[key] = design
            lines.append(
                json.dumps(
                    {
                        "design": design,
                        "criteria": evaluation.criteria,
                        "margins": evaluation.margins,
                    }
                )
            )
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as stream:
                stream.write("".join(line + "\n" for line in lines))

    def evaluation(self, design: dict[str, Any]) -> Evaluation:
        self.prefetch([design])
        return self.cache[_key(design)]

    def objective(self, evaluation: Evaluation) -> float:
        problem = self.problem
        criteria = list(problem.minimize)
        if problem.weights is not None:
            return float(
                sum(
                    w * evaluation.criteria[c]
                    for w, c in zip(problem.weights, criteria, strict=True)
                )
            )
        return float(evaluation.criteria[criteria[0]])

    def violation(self, evaluation: Evaluation) -> float:
        total = evaluation.violation
        for criterion, bound in self.extra:
            value = evaluation.criteria[criterion]
            total += max(0.0, (value - bound) / max(abs(bound), 1e-300))
        return total

    def score(self, evaluation: Evaluation) -> float:
        """Deb's feasibility rules as one number (module docstring)."""
        violation = self.violation(evaluation)
        f = self.objective(evaluation)
        if not math.isfinite(f) and violation == 0.0:
            violation = math.inf
        if violation > 0.0:
            return 1.0 + min(violation, 1e300)
        return f / (abs(f) + self.scale)

    def rank(self, evaluation: Evaluation) -> tuple[float, float]:
        return (self.violation(evaluation), self.objective(evaluation))

    def __call__(self, x: np.ndarray) -> float:
        return self.score(self.evaluation(self.design(x)))

    def map(self, func: Callable, population: Iterable) -> list[float]:
        """The ``workers=`` map of differential evolution: one generation's new designs
        evaluated together (in parallel), then scored by ``func``."""
        population = [np.asarray(x) for x in population]
        self.prefetch([self.design(x) for x in population])
        return [func(x) for x in population]

    def best(self, designs: Iterable[str] | None = None) -> str:
        """The best design asked for in this run (or of ``designs``): a run that reads stored
        evaluations back takes the same decisions as the run that stored them."""
        keys = list(self.seen if designs is None else designs)
        return min(keys, key=lambda k: self.rank(self.cache[k]))


def _mapper(workers: Any, client: Any) -> tuple[Callable | None, Any]:
    """(map for the evaluations, resource to close)."""
    if client is not None:

        def dask_map(func: Callable, items: Iterable) -> list:
            futures = client.map(func, list(items), pure=False)
            return client.gather(futures)

        return dask_map, None
    if workers is None or workers == 1:
        return None, None
    if callable(workers):
        return workers, None
    if isinstance(workers, int) and not isinstance(workers, bool) and workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(workers)
        return pool.map, pool
    raise InvalidParameter(
        f"workers must be None, 1, a number of processes > 1 or a map-like callable "
        f"(func, iterable) -> results, got {workers!r}"
    )


# --------------------------------------------------------------------------------------------
# optimizers


def _minimize_scalar(ev: _Evaluator, tolerance: float) -> str:
    from scipy.optimize import minimize_scalar

    v = ev.variables[0]
    assert isinstance(v, Continuous)
    width = v.high - v.low
    minimize_scalar(
        lambda x: ev.objective(ev.evaluation({v.name: float(x)})),
        bounds=(v.low, v.high),
        method="bounded",
        options={"xatol": tolerance * max(abs(v.low), abs(v.high), width), "maxiter": 500},
    )
    return "scipy.optimize.minimize_scalar (bounded Brent)"


def _differential_evolution(ev: _Evaluator, seed: int, maxiter: int, popsize: int) -> str:
    from scipy.optimize import differential_evolution

    integral = ev.integrality()
    differential_evolution(
        ev,
        ev.bounds(),
        integrality=integral if integral.any() else None,
        seed=seed,
        maxiter=maxiter,
        popsize=popsize,
        polish=False,
        updating="deferred",
        workers=ev.map,
        tol=0.01,
        init="sobol" if len(ev.variables) > 1 else "latinhypercube",
    )
    method = "scipy.optimize.differential_evolution" + (" (integrality)" if integral.any() else "")
    if not integral.any():
        method += _polish(ev)
    return method


def _polish(ev: _Evaluator) -> str:
    """SLSQP from the best design, the margins (and ε-bounds) as inequality constraints."""
    from scipy.optimize import minimize

    start_key = ev.best()
    start = ev.cache[start_key]
    if ev.violation(start) > 0:
        return ""
    x0 = ev.x(ev.designs[start_key])
    low = np.array([v.low for v in ev.variables])  # type: ignore[union-attr]
    high = np.array([v.high for v in ev.variables])  # type: ignore[union-attr]
    span = high - low

    def evaluation(u: np.ndarray) -> Evaluation:
        return ev.evaluation(ev.design(low + span * u))

    names = list(start.margins)

    def constraints(u: np.ndarray) -> np.ndarray:
        e = evaluation(u)
        extra = [(b - e.criteria[c]) / max(abs(b), 1e-300) for c, b in ev.extra]
        return np.array([e.margins[n] for n in names] + extra)

    f0 = abs(ev.objective(start)) or 1.0
    minimize(
        lambda u: ev.objective(evaluation(u)) / f0,
        (x0 - low) / span,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * len(ev.variables),
        constraints=[{"type": "ineq", "fun": constraints}],
        options={"ftol": 1e-12, "maxiter": 200},
    )
    return " + scipy.optimize.minimize (SLSQP polish)"


def _solve(ev: _Evaluator, *, seed: int, maxiter: int, popsize: int, tolerance: float) -> str:
    only = ev.variables[0]
    if (
        len(ev.variables) == 1
        and isinstance(only, Continuous)
        and not ev.extra
        and len(ev.problem.minimize) == 1
    ):
        method = _minimize_scalar(ev, tolerance)
        if ev.violation(ev.cache[ev.best()]) == 0.0:
            return method
        return method + " + " + _differential_evolution(ev, seed, maxiter, popsize)
    return _differential_evolution(ev, seed, maxiter, popsize)


def _non_dominated(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    points = sorted(points, key=lambda p: (p[1], p[2]))
    front: list[tuple[str, float, float]] = []
    for point in points:
        if not front or point[2] < front[-1][2] - 1e-12 * max(1.0, abs(front[-1][2])):
            front.append(point)
    return front


def _pareto(ev: _Evaluator, n: int, **options: Any) -> tuple[list[ParetoPoint], str, str]:
    """ε-constraint sweep; returns (front, chosen key, method)."""
    first, second = list(ev.problem.minimize)
    feasible = lambda key: ev.violation(ev.cache[key]) == 0.0  # noqa: E731
    ends = []
    for criterion in (second, first):
        ev.problem.minimize = [criterion, first if criterion == second else second]
        method = _solve(ev, **options)
        ends.append(ev.best())
    ev.problem.minimize = [first, second]
    low = ev.cache[ends[0]].criteria[second]
    high = ev.cache[ends[1]].criteria[second]
    for epsilon in np.linspace(low, high, n)[1:-1]:
        ev.extra = [(second, float(epsilon))]
        _solve(ev, **options)
    ev.extra = []
    candidates = [
        (k, ev.cache[k].criteria[first], ev.cache[k].criteria[second])
        for k in sorted(ev.seen)
        if feasible(k)
    ]
    front = _non_dominated(candidates)
    if not front:
        return [], ev.best(), method
    f1 = np.array([p[1] for p in front])
    f2 = np.array([p[2] for p in front])
    span1, span2 = max(np.ptp(f1), 1e-300), max(np.ptp(f2), 1e-300)
    knee = int(np.argmin(np.hypot((f1 - f1.min()) / span1, (f2 - f2.min()) / span2)))
    points = [ParetoPoint(dict(ev.designs[k]), dict(ev.cache[k].criteria)) for k, _, _ in front]
    return points, front[knee][0], method + f", ε-constraint front ({n} points)"


def _neighbours(ev: _Evaluator, design: dict[str, Any]) -> list[Neighbour]:
    """Each Choice one option down, the other Choices of its group (same prefix before the
    first dot) tried in turn."""
    out = []
    for v in ev.variables:
        if not isinstance(v, Choice) or v.options.index(design[v.name]) == 0:
            continue
        if not isinstance(v.options[0], str):
            continue  # standard values (ratios) have no "size"; catalogue names do
        group = v.name.split(".")[0]
        smaller = v.options[v.options.index(design[v.name]) - 1]
        others = [
            w
            for w in ev.variables
            if w is not v and isinstance(w, Choice) and w.name.split(".")[0] == group
        ]
        designs = []
        for values in itertools.product(*(w.options for w in others)):
            candidate = {**design, v.name: smaller}
            candidate.update({w.name: _plain(x) for w, x in zip(others, values, strict=True)})
            designs.append(candidate)
        ev.prefetch(designs)
        keys = [_key(d) for d in designs]
        best = ev.best(keys)
        evaluation = ev.cache[best]
        if not evaluation.margins:
            continue
        name = min(evaluation.margins, key=evaluation.margins.__getitem__)
        out.append(
            Neighbour(
                v.name,
                dict(ev.designs[best]),
                evaluation.violation == 0.0,
                name,
                evaluation.margins[name],
            )
        )
    return out


def _by_groups(
    problem: Problem,
    groups: Sequence[Sequence[str]],
    mapper: Callable | None,
    store: Path | None,
    options: Mapping[str, Any],
) -> tuple[list[dict[str, Any]], str, int]:
    """One problem per group; returns (candidate designs, best first: the groups' optima
    combined, then each group's next feasible choices in order of the criterion added),
    method, evaluations)."""
    per_group = []
    method = ""
    count = 0
    for group in groups:
        variables = [v for v in problem.variables if v.name in group]
        sub = Problem(variables, problem.evaluate, problem.minimize, problem.weights)
        ev = _Evaluator(sub, mapper, store)
        method = _solve(ev, **options)
        count += len(ev.seen)
        ranked = sorted(ev.seen, key=lambda k: ev.rank(ev.cache[k]))
        feasible = [k for k in ranked if ev.violation(ev.cache[k]) == 0.0] or ranked[:1]
        per_group.append([(ev.designs[k], ev.objective(ev.cache[k])) for k in feasible])
    best = {k: v for options_ in per_group for k, v in options_[0][0].items()}
    alternatives: list[tuple[float, dict[str, Any]]] = []
    for options_ in per_group:
        for design, value in options_[1:]:
            alternatives.append((value - options_[0][1], {**best, **design}))
    alternatives.sort(key=lambda item: item[0])
    return [best] + [d for _, d in alternatives[:20]], method + ", one group at a time", count


def optimize(
    spec_or_problem: str | Path | Problem,
    *,
    seed: int = 0,
    maxiter: int = 200,
    popsize: int = 15,
    tolerance: float = 1e-7,
    pareto_points: int = 9,
    workers: int | Callable[[Callable, Iterable], Iterable] | None = None,
    client: Any = None,
    path: str | Path | None = None,
    verify_candidates: int = 5,
    neighbours: bool = True,
    decompose: bool = True,
) -> OptimalDesign:
    """Find the design that minimises the criterion within every limit (Vukobratović &
    Potkonjak, §20.4.1, "the complete CAD system for robots"); see the module docstring for
    the methods (scipy's ``minimize_scalar``, ``differential_evolution`` with integrality,
    SLSQP polish, ε-constraint Pareto front).

    Args:
        spec_or_problem: A :class:`Problem` (:class:`DriveProblem`...), or a ``pinext design``
            specification (TOML) with ``[variables]`` and ``[objective]`` tables (see
            :meth:`DriveProblem.from_spec`).
        seed: Seed of differential evolution's random generator.
        maxiter: Most generations of differential evolution.
        popsize: Population size multiplier of differential evolution.
        tolerance: Relative tolerance on a single continuous variable (bounded Brent).
        pareto_points: Points of the ε-constraint sweep for two criteria (≥ 3).
        workers: Parallel evaluations: None or 1 (in this process), a number of processes,
            or a map-like callable ``(func, designs) -> results`` (e.g. a Dask client's).
        client: A ``dask.distributed.Client``: evaluations run as its tasks.
        path: A JSON-lines file that stores every evaluation; a later run with the same file
            reads them back instead of evaluating again (resumable).
        verify_candidates: Most candidates that the problem's ``verify`` (a simulation) is
            run on, best screened first, until one passes.
        neighbours: Evaluate the chosen design's catalogue neighbours (one size smaller).
        decompose: Solve a problem with :attr:`Problem.groups` one group at a time (one
            criterion or a weighted sum); False: all variables at once.

    Returns:
        :class:`OptimalDesign`.

    Raises:
        InfeasibleDesign: No design meets every limit; the message gives the constraint
            closest to feasible and by how much.
        InvalidParameter, FileFormatError: A bad problem or specification (before any
            evaluation).
    """
    if isinstance(spec_or_problem, (str, Path)):
        problem: Problem = DriveProblem.from_spec(spec_or_problem)
    elif isinstance(spec_or_problem, Problem):
        problem = spec_or_problem
    else:
        raise InvalidParameter(
            f"optimize needs a Problem or the path of a TOML specification, got {spec_or_problem!r}"
        )
    seed = int(_finite("seed", seed))
    maxiter = int(_finite("maxiter", maxiter))
    popsize = int(_finite("popsize", popsize))
    if maxiter < 1 or popsize < 1:
        raise InvalidParameter(f"maxiter and popsize must be ≥ 1, got {maxiter}, {popsize}")
    tolerance = _finite("tolerance", tolerance)
    if not 0 < tolerance < 1:
        raise InvalidParameter(f"tolerance must lie in (0, 1), got {tolerance}")
    if problem.pareto and int(pareto_points) < 3:
        raise InvalidParameter(f"pareto_points must be ≥ 3, got {pareto_points}")
    mapper, pool = _mapper(workers, client)
    store = None if path is None else Path(path)
    options: dict[str, Any] = {
        "seed": seed,
        "maxiter": maxiter,
        "popsize": popsize,
        "tolerance": tolerance,
    }
    try:
        ev = _Evaluator(problem, mapper, store)
        front = None
        groups = problem.groups if decompose and not problem.pareto else None
        if groups is not None and len(groups) > 1:
            candidates, method, count = _by_groups(problem, groups, mapper, store, options)
            ev.prefetch(candidates)
            order = [_key(d) for d in candidates]
            chosen = order[0]
            evaluations = count + 1
        else:
            if problem.pareto:
                front, chosen, method = _pareto(ev, int(pareto_points), **options)
            else:
                method = _solve(ev, **options)
                chosen = ev.best()
            order = sorted(ev.seen, key=lambda k: ev.rank(ev.cache[k]))
            order.remove(chosen)
            order.insert(0, chosen)
            evaluations = len(ev.seen)
        evaluation = ev.cache[chosen]
        if ev.violation(evaluation) > 0.0:
            violated = {k: m for k, m in evaluation.margins.items() if not m >= 0}
            closest = max(
                violated, key=lambda k: violated[k] if math.isfinite(violated[k]) else -math.inf
            )
            raise InfeasibleDesign(
                closest, violated[closest], ev.designs[chosen], evaluations, violated
            )
        constraints = dict(evaluation.margins)
        verifications = 0
        if problem.verify is not None:
            order = [k for k in order if ev.violation(ev.cache[k]) == 0.0]
            failed: list[tuple[float, str, dict[str, float]]] = []
            for key in order[: max(1, int(verify_candidates))]:
                verifications += 1
                last = {
                    f"verify: {k}": float(m) for k, m in problem.verify(ev.designs[key]).items()
                }
                violation = Evaluation({}, last).violation
                if violation == 0.0:
                    chosen = key
                    constraints = {**ev.cache[key].margins, **last}
                    break
                failed.append((violation, key, last))
            else:
                _, key, last = min(failed, key=lambda item: item[0])
                violated = {k: m for k, m in last.items() if not m >= 0}
                closest = max(violated, key=violated.__getitem__)
                raise InfeasibleDesign(
                    closest, violated[closest], ev.designs[key], evaluations, violated
                )
        evaluation = ev.cache[chosen]
        design = dict(ev.designs[chosen])
        result = OptimalDesign(
            design=design,
            objective=ev.objective(evaluation),
            criteria=dict(evaluation.criteria),
            constraints=constraints,
            evaluations=evaluations,
            method=method,
            feasible=all(m >= 0 for m in constraints.values()),
            pareto=front,
            verifications=verifications,
            problem=problem,
        )
        if neighbours:
            result.neighbours = _neighbours(ev, design)
        return result
    finally:
        if pool is not None:
            pool.shutdown()


# --------------------------------------------------------------------------------------------
# drives


#: Criteria of a :class:`DriveProblem` (summed over the joints) with their units.
DRIVE_CRITERIA = {
    "motor_mass": "total motor mass [kg] (the catalogue's masses)",
    "peak_motor_torque": "Σ peak |T_em| [N.m]",
    "rms_motor_torque": "Σ RMS T_em [N.m]",
    "copper_loss": "Σ ∫ R i² dt over the motion [J]",
    "energy": "Σ ∫ max(u i, 0) dt, electrical energy drawn over the motion [J]",
}
#: Keys of a ``[variables.JOINT]`` table.
VARIABLE_KEYS = ("motor", "ratio", "stiffness", "damping", "efficiency")
#: Keys of the ``[objective]`` table.
OBJECTIVE_KEYS = ("minimize", "weights")


def _bad(where: str, message: str, path: Path | None) -> Exception:
    if path is not None:
        return FileFormatError(str(path), where, message)
    return InvalidParameter(f"{where}: {message}")


class DriveProblem(Problem):
    """Motors and gears of a robot's drives chosen for a prescribed motion, screened by
    inverse dynamics against the catalogue ratings and the designer's limits.

    The joint side of :func:`~pinext.planning.drive_requirements` (Pinocchio's ``rnea`` along
    the motion) does not depend on the drives and is computed once; each candidate costs only
    the motor side (ratio, efficiency, rotor inertia, voltage, heating) and
    :func:`~pinext.planning.check_design`: one constraint per limit, named
    ``"JOINT: quantity [unit]"``, its margin :math:`1 - \\text{value}/\\text{limit}`.

    Args:
        robot: The :class:`pinext.Robot`.
        motion: The prescribed motion (see :func:`~pinext.planning.drive_requirements`).
        variables: Joint name -> its variables, as the ``[variables.JOINT]`` tables:
            ``motor`` (a list of catalogue names, or ``"catalogue"`` for all of them, smallest
            mass first), ``ratio`` (a list of standard ratios, or ``{low, high}`` for a
            continuous one), ``stiffness`` [N.m/rad] and ``damping`` [N.m.s/rad] (an elastic
            transmission; a list, a ``{low, high}`` range or a number) and ``efficiency``
            (a number: the gear's).
        catalogue: Name -> :class:`~pinext.planning.CatalogueMotor`.
        drives: Joint name -> the drive of the joints that are not varied, and the starting
            drive (motor, transmission kind) of those that are.
        limits: Joint name -> :class:`~pinext.planning.DriveLimits`, overriding the
            catalogue's ratings key by key.
        link_limits: Flexible link name -> :class:`~pinext.planning.LinkLimits`.
        section_modulus: Flexible link name -> W [m^3].
        minimize: Criterion or criteria of :data:`DRIVE_CRITERIA`.
        weights: See :class:`Problem`.
        gravity: Include gravity.
        samples: Samples of the motion.
        verify: See :class:`Problem`; it receives the design and may call
            :meth:`drives_of` to build the drives.
        title: Report title.
        source: The specification file, when read from one (errors name it).
    """

    def __init__(
        self,
        robot: Any,
        motion: Any,
        variables: Mapping[str, Mapping[str, Any]],
        *,
        catalogue: Mapping[str, CatalogueMotor] | None = None,
        drives: Mapping[str, Drive] | None = None,
        limits: Mapping[str, Mapping[str, Any] | DriveLimits] | None = None,
        link_limits: Mapping[str, LinkLimits] | None = None,
        section_modulus: Mapping[str, Any] | None = None,
        minimize: str | Sequence[str] = "motor_mass",
        weights: Sequence[float] | None = None,
        gravity: bool = True,
        samples: int = 801,
        verify: Callable[[dict[str, Any]], Mapping[str, float]] | None = None,
        title: str = "optimal drives",
        source: str | Path | None = None,
    ) -> None:
        self.source = None if source is None else Path(source)
        where_path = self.source
        self.robot = robot
        self.motion = motion
        self.catalogue = dict(catalogue or {})
        self.base_drives = dict(getattr(robot, "drives", {}) or {})
        self.base_drives.update(drives or {})
        self.limit_overrides: dict[str, dict[str, Any]] = {}
        for joint, table in (limits or {}).items():
            if isinstance(table, DriveLimits):
                table = {k: v for k, v in table.__dict__.items() if v is not None}
            try:
                DriveLimits(**dict(table))
            except (TypeError, InvalidParameter) as err:
                raise _bad(f"limits.{joint}", str(err), where_path) from None
            self.limit_overrides[joint] = dict(table)
        self.link_limits = dict(link_limits or {})
        self.section_modulus = dict(section_modulus or {})
        self.gravity = gravity
        self.samples = samples
        criteria = [minimize] if isinstance(minimize, str) else list(minimize)
        for criterion in criteria:
            if criterion not in DRIVE_CRITERIA:
                raise _bad(
                    "objective.minimize",
                    f"unknown criterion {criterion!r}; valid criteria: "
                    + "; ".join(f"{k} ({v})" for k, v in DRIVE_CRITERIA.items()),
                    where_path,
                )
        joints = [
            robot.model.names[j]
            for j in range(1, robot.model.njoints)
            if robot.model.joints[j].nv == 1
        ]
        self.fixed: dict[str, dict[str, Any]] = {}
        parsed: list[Variable] = []
        if not variables:
            raise _bad("variables", "no design variable: give [variables.JOINT] tables", where_path)
        for joint, table in variables.items():
            if joint not in joints:
                raise NameNotFound("joint", joint, joints)
            if not isinstance(table, Mapping):
                raise _bad(f"variables.{joint}", f"must be a table, got {table!r}", where_path)
            unknown = [k for k in table if k not in VARIABLE_KEYS]
            if unknown:
                raise _bad(
                    f"variables.{joint}",
                    f"unknown keys {unknown}; valid keys: {', '.join(VARIABLE_KEYS)}",
                    where_path,
                )
            fixed: dict[str, Any] = {}
            for key, value in table.items():
                name, where = f"{joint}.{key}", f"variables.{joint}.{key}"
                try:
                    if key == "motor":
                        parsed.append(Choice(name, self._motors(value, where, where_path)))
                    elif key == "efficiency":
                        efficiency = _finite(where, value)
                        if not 0 < efficiency <= 1:
                            raise InvalidParameter(f"{where} must lie in (0, 1], got {value!r}")
                        fixed[key] = efficiency
                    elif isinstance(value, Mapping):
                        extra = [k for k in value if k not in ("low", "high")]
                        if extra or "low" not in value or "high" not in value:
                            raise InvalidParameter(
                                f"{where} as a range needs exactly low and high, got {dict(value)}"
                            )
                        parsed.append(Continuous(name, value["low"], value["high"]))
                        if parsed[-1].low <= 0:  # type: ignore[union-attr]
                            raise InvalidParameter(
                                f"{where}: low must be positive, got {value['low']!r}"
                            )
                    elif isinstance(value, (list, tuple)):
                        choice = Choice(name, tuple(value))
                        if any(isinstance(x, str) or x <= 0 for x in choice.options):
                            raise InvalidParameter(
                                f"{where}: every value must be a positive number, got {value}"
                            )
                        parsed.append(choice)
                    else:
                        number = _finite(where, value)
                        if number <= 0:
                            raise InvalidParameter(f"{where} must be positive, got {value!r}")
                        fixed[key] = number
                except InvalidParameter as err:
                    message = str(err)
                    raise _bad(where, message, where_path) from None
            names = [v.name for v in parsed]
            if f"{joint}.motor" not in names and joint not in self.base_drives:
                raise _bad(
                    f"variables.{joint}",
                    "no motor: give motor = [catalogue names] or a [drives."
                    f"{joint}] table with the motor",
                    where_path,
                )
            if ("stiffness" in table) != ("damping" in table) and not (
                joint in self.base_drives
                and isinstance(self.base_drives[joint].transmission, ElasticTransmission)
            ):
                raise _bad(
                    f"variables.{joint}",
                    "an elastic transmission needs both stiffness and damping",
                    where_path,
                )
            self.fixed[joint] = fixed
        for joint in self.limit_overrides:
            if joint not in self.fixed and joint not in self.base_drives:
                raise _bad(
                    f"limits.{joint}",
                    f"joint '{joint}' has no motor to limit: give it a [variables.{joint}] "
                    f"table with motor = [...] or a [drives.{joint}] table; joints with "
                    f"variables: {', '.join(self.fixed)}",
                    where_path,
                )
        self.varied = {
            joint: [v.name for v in parsed if v.name.startswith(f"{joint}.")]
            for joint in self.fixed
        }
        self.varied = {joint: names for joint, names in self.varied.items() if names}
        groups = list(self.varied.values())
        super().__init__(parsed, self._evaluate, criteria, weights, verify, title, groups)
        self._side: Any = None

    def _absent(self, design: Mapping[str, Any]) -> set[str]:
        """Varied joints of which ``design`` holds no variable (a group's partial design)."""
        return {
            joint
            for joint, names in self.varied.items()
            if not any(name in design for name in names)
        }

    def _motors(self, value: Any, where: str, path: Path | None) -> tuple[str, ...]:
        if not self.catalogue:
            raise _bad(
                where,
                'the motor catalogue is empty: give catalogue = "FILE.toml" with [[motor]] '
                "tables (e.g. examples/dc_motors.toml)",
                path,
            )
        by_mass = sorted(self.catalogue, key=lambda n: (self.catalogue[n].mass, n))
        if value == "catalogue":
            return tuple(by_mass)
        if not isinstance(value, (list, tuple)) or not value:
            raise _bad(
                where,
                f'must be "catalogue" or a non-empty list of catalogue names, got {value!r}',
                path,
            )
        for name in value:
            if name not in self.catalogue:
                err = NameNotFound("catalogue motor", name, list(self.catalogue))
                raise _bad(where, str(err), path)
        return tuple(sorted(value, key=lambda n: (self.catalogue[n].mass, n)))

    # -- building a candidate
    def drives_of(
        self, design: Mapping[str, Any], *, elastic: bool | None = None
    ) -> dict[str, Drive]:
        """The drives of a design (the varied joints; the others as given). A partial design
        (see :attr:`Problem.groups`) leaves out the varied joints it does not name."""
        drives = dict(self.base_drives)
        absent = self._absent(design)
        for joint, fixed in self.fixed.items():
            if joint in absent:
                drives.pop(joint, None)
                continue
            base = drives.get(joint)
            motor = base.actuator if base is not None else None
            if f"{joint}.motor" in design:
                motor = self.catalogue[design[f"{joint}.motor"]].motor
            transmission = base.transmission if base is not None else None
            ratio = design.get(f"{joint}.ratio", fixed.get("ratio"))
            if ratio is None:
                ratio = transmission.ratio if transmission is not None else 1.0
            stiffness = design.get(f"{joint}.stiffness", fixed.get("stiffness"))
            damping = design.get(f"{joint}.damping", fixed.get("damping"))
            if isinstance(transmission, ElasticTransmission) or stiffness is not None:
                if isinstance(transmission, ElasticTransmission):
                    transmission = dataclasses.replace(transmission, ratio=float(ratio))
                    if stiffness is not None:
                        transmission = dataclasses.replace(transmission, stiffness=float(stiffness))
                    if damping is not None:
                        transmission = dataclasses.replace(transmission, damping=float(damping))
                else:
                    transmission = ElasticTransmission(
                        float(ratio), float(stiffness), float(damping)
                    )
            elif isinstance(transmission, Gear):
                transmission = dataclasses.replace(transmission, ratio=float(ratio))
                if "efficiency" in fixed:
                    transmission = dataclasses.replace(transmission, efficiency=fixed["efficiency"])
            else:
                transmission = Gear(float(ratio), efficiency=fixed.get("efficiency", 1.0))
            drives[joint] = Drive(motor, transmission)
        return drives

    def limits_of(self, design: Mapping[str, Any]) -> dict[str, DriveLimits]:
        """The limits of a design: the chosen motors' ratings, overridden by ``limits``."""
        out: dict[str, DriveLimits] = {}
        joints = set(self.limit_overrides) | {j for j in self.fixed if f"{j}.motor" in design}
        for joint in sorted(joints - self._absent(design)):
            ratings: dict[str, Any] = {}
            if f"{joint}.motor" in design:
                ratings = dict(self.catalogue[design[f"{joint}.motor"]].limits.__dict__)
            ratings.update(self.limit_overrides.get(joint, {}))
            out[joint] = DriveLimits(**ratings)
        return out

    def report_of(self, design: Mapping[str, Any], samples: int | None = None) -> DriveReport:
        """The :class:`~pinext.planning.DriveReport` of a design."""
        if samples is not None and samples != self.samples:
            side = _joint_side(
                self.robot, self.motion, gravity=self.gravity,
                section_modulus=self.section_modulus, samples=samples,
            )  # fmt: skip
            return _assemble(side, self.drives_of(design))
        if self._side is None:
            self._side = _joint_side(
                self.robot, self.motion, gravity=self.gravity,
                section_modulus=self.section_modulus, samples=self.samples,
            )  # fmt: skip
        return _assemble(self._side, self.drives_of(design))

    def _evaluate(self, design: dict[str, Any]) -> Evaluation:
        report = self.report_of(design)
        check = check_design(report, self.limits_of(design), self.link_limits)
        margins = {f"{r.name}: {r.quantity}": float(r.margin) for r in check.rows}
        for key, value in margins.items():
            if math.isnan(value):
                margins[key] = -math.inf
        drives = self.drives_of(design)
        mass = 0.0
        for joint, drive in drives.items():
            if f"{joint}.motor" in design:
                mass += self.catalogue[design[f"{joint}.motor"]].mass
            else:  # a motor of the specification: its catalogue entry, if it has one
                mass += next(
                    (e.mass for e in self.catalogue.values() if e.motor == drive.actuator), 0.0
                )
        driven = np.array([joint in drives for joint in report.joints])
        finite = driven & np.isfinite(report.copper_loss).all(axis=0)
        copper = float(np.trapezoid(report.copper_loss[:, finite], report.t, axis=0).sum())
        electric = report.voltage[:, finite] * report.current[:, finite]
        energy = float(np.trapezoid(np.maximum(electric, 0.0), report.t, axis=0).sum())
        criteria = {
            "motor_mass": mass,
            "peak_motor_torque": float(report.peak_motor_torque[driven].sum()),
            "rms_motor_torque": float(report.rms_motor_torque[driven].sum()),
            "copper_loss": copper,
            "energy": energy,
        }
        return Evaluation(criteria, margins)

    def check_of(self, design: Mapping[str, Any], samples: int | None = None) -> Any:
        """(report, :class:`~pinext.planning.DesignCheck`) of a design."""
        report = self.report_of(design, samples)
        return report, check_design(report, self.limits_of(design), self.link_limits)

    @classmethod
    def from_spec(cls, spec_path: str | Path) -> DriveProblem:
        """Read a ``pinext design`` specification extended with ``[variables]`` and
        ``[objective]`` (everything else as :func:`~pinext.planning.run_design` reads it)::

            catalogue = "dc_motors.toml"
            [variables.shoulder_lift]
            motor = "catalogue"                # or ["DC32-48V-120W", "DC40-48V-150W"]
            ratio = [30, 50, 80, 100, 120, 160]    # or { low = 10, high = 300 }
            efficiency = 0.85
            [objective]
            minimize = "motor_mass"            # or ["motor_mass", "copper_loss"]: a front
            weights = [1.0, 0.05]              # optional: a weighted sum

        Raises:
            FileFormatError: The file, with the key that is wrong and what is valid.
        """
        design: DesignSpec = read_design(spec_path, extra=("variables", "objective"))
        path = design.path
        table = design.table
        variables = table.get("variables")
        if not isinstance(variables, dict) or not variables:
            raise FileFormatError(
                str(path), "variables", "needs [variables.JOINT] tables (motor, ratio, ...)"
            )
        objective = table.get("objective", {"minimize": "motor_mass"})
        if not isinstance(objective, dict):
            raise FileFormatError(str(path), "objective", "must be a table [objective]")
        unknown = [k for k in objective if k not in OBJECTIVE_KEYS]
        if unknown:
            raise FileFormatError(
                str(path),
                "objective",
                f"unknown keys {unknown}; valid keys: {', '.join(OBJECTIVE_KEYS)}",
            )
        limit_tables = table.get("limits", {})
        try:
            return cls(
                design.robot,
                design.motion,
                variables,
                catalogue=design.catalogue,
                drives=design.drives,
                limits=limit_tables,
                link_limits=design.link_limits,
                section_modulus=design.section_modulus,
                minimize=objective.get("minimize", "motor_mass"),
                weights=objective.get("weights"),
                gravity=design.gravity,
                samples=design.samples,
                title=design.title,
                source=path,
            )
        except NameNotFound as err:
            raise FileFormatError(str(path), "variables", str(err)) from None
        except InvalidParameter as err:
            if isinstance(err, FileFormatError):
                raise
            raise FileFormatError(str(path), "objective", str(err)) from None


def enumerate_designs(problem: Problem) -> Iterable[dict[str, Any]]:
    """Every design of a problem of :class:`Choice` variables only (exhaustive enumeration,
    the reference that tests compare :func:`optimize` with)."""
    if not all(isinstance(v, Choice) for v in problem.variables):
        raise InvalidParameter("enumerate_designs needs Choice variables only")
    names = [v.name for v in problem.variables]
    for values in itertools.product(*(v.options for v in problem.variables)):  # type: ignore[union-attr]
        yield {n: _plain(x) for n, x in zip(names, values, strict=True)}


# --------------------------------------------------------------------------------------------
# verification by simulation


class ElasticTracking:
    """Verify a drive design by simulation with elastic transmissions: the links follow the
    motion under the feedforward of :func:`~pinext.planning.elastic_drive_feedforward`
    (Vukobratović & Potkonjak, Fig. 20.10a) plus motor-side PD, as in
    ``examples/size_drives.py``; the margins are each joint's peak tracking error against
    ``max_tracking_error`` and the motor limits (rated torque against the RMS of
    :math:`C_M i`, peak torque, speed, voltage, winding temperature) measured in the run.

    Args:
        problem: The :class:`DriveProblem` whose designs are verified.
        stiffness: Joint name -> torsional stiffness c [N.m/rad] of its transmission.
        damping: Joint name -> damping d [N.m.s/rad].
        max_tracking_error: Largest |q − q_ref| allowed on every joint [rad].
        settle: Time simulated after the motion ends [s].
        kp: Proportional gain [V/rad] on the motor angles.
        kd: Derivative gain [V.s/rad] on the motor speeds.
        samples: Samples of the feedforward table.
        **simulate_options: Passed to :func:`pinext.simulate` (default rtol 1e-8,
            atol 1e-10, output_dt 2e-3).
    """

    def __init__(
        self,
        problem: DriveProblem,
        stiffness: Mapping[str, float],
        damping: Mapping[str, float],
        max_tracking_error: float,
        *,
        settle: float = 0.5,
        kp: float = 2.0,
        kd: float = 0.05,
        samples: int = 2501,
        **simulate_options: Any,
    ) -> None:
        self.problem = problem
        for name, table in (("stiffness", stiffness), ("damping", damping)):
            for joint, value in table.items():
                number = _finite(f"{name}[{joint!r}]", value)
                if number <= 0 and not (name == "damping" and number == 0):
                    raise InvalidParameter(f"{name}[{joint!r}] must be positive, got {value!r}")
        self.stiffness = dict(stiffness)
        self.damping = dict(damping)
        self.max_tracking_error = _finite("max_tracking_error", max_tracking_error)
        if self.max_tracking_error <= 0:
            raise InvalidParameter(
                f"max_tracking_error must be positive [rad], got {max_tracking_error!r}"
            )
        self.settle = _finite("settle", settle)
        self.kp, self.kd, self.samples = float(kp), float(kd), int(samples)
        self.options = {"rtol": 1e-8, "atol": 1e-10, "output_dt": 2e-3, **simulate_options}

    def run(self, design: Mapping[str, Any]) -> tuple[Any, Any, dict[str, float]]:
        """(trajectory, system, margins) of one design."""
        from ..drives.feedforward import elastic_drive_feedforward
        from ..simulation.simulate import simulate
        from ..simulation.system import System
        from .drive_sizing import winding_temperature
        from .motion import as_motion

        problem = self.problem
        rigid = problem.drives_of(design)
        elastic = {
            joint: Drive(
                drive.actuator,
                ElasticTransmission(drive.ratio, self.stiffness[joint], self.damping[joint]),
            )
            for joint, drive in rigid.items()
            if joint in self.stiffness
        }
        system = System(problem.robot, drives=elastic)
        end = float(as_motion(problem.motion, samples=3).t[-1])
        t = np.linspace(0.0, end + self.settle, self.samples)
        q_ref = np.asarray(problem.motion(np.minimum(t, end))[0])
        ff = elastic_drive_feedforward(problem.robot, elastic, t, q_ref)
        angle = system.layout["drives.motor_angle"]
        velocity = system.layout["drives.motor_velocity"]
        law = ff.control(angle, velocity, self.kp, self.kd)
        traj = simulate(
            system, t[-1], x0=system.initial_state(q_ref[0]), control=law, progress=False,
            **self.options,
        )  # fmt: skip
        reference = np.asarray(problem.motion(np.minimum(traj.t, end))[0])
        names = list(problem.robot.model.names)[1:]
        limits = problem.limits_of(design)
        margins: dict[str, float] = {}
        x = traj.x
        omega = x[:, velocity]
        voltage = np.array([law(tk, xk) for tk, xk in zip(traj.t, x, strict=True)])
        current = traj.state("drives.current") if "drives.current" in traj.layout else None
        for k, joint in enumerate(elastic):
            c = names.index(joint)
            error = float(np.abs(traj.q[:, c] - reference[:, c]).max())
            margins[f"{joint}: peak tracking error [rad]"] = 1.0 - error / self.max_tracking_error
            lim = limits.get(joint)
            motor = elastic[joint].actuator
            if lim is None or current is None or not isinstance(motor, DCMotor):
                continue
            torque = motor.torque_constant * current[:, k]
            cycle = traj.t <= end  # the RMS over the motion, as the screening takes it
            rms = float(np.sqrt(np.trapezoid(torque[cycle] ** 2, traj.t[cycle]) / end))
            values = {
                "rated_torque": ("RMS motor torque [N.m]", rms),
                "peak_torque": ("peak motor torque [N.m]", float(np.abs(torque).max())),
                "max_speed": ("peak motor speed [rad/s]", float(np.abs(omega[:, k]).max())),
                "max_voltage": ("peak voltage [V]", float(np.abs(voltage[:, k]).max())),
            }
            r_th, tau_th = motor.thermal_resistance, motor.thermal_time_constant
            if r_th is not None and tau_th is not None:
                heat = winding_temperature(
                    traj.t, motor.resistance * current[:, k] ** 2, r_th, tau_th,
                    motor.ambient_temperature,
                )  # fmt: skip
                values["max_winding_temperature"] = (
                    "peak winding temperature [°C]",
                    float(heat.max()),
                )
            for key, (label, value) in values.items():
                limit = getattr(lim, key)
                if limit is not None:
                    margins[f"{joint}: {label}"] = 1.0 - value / limit
        return traj, system, margins

    def __call__(self, design: Mapping[str, Any]) -> dict[str, float]:
        """The margins of one design (see the class docstring)."""
        return self.run(design)[2]
