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
  rules folded into one score: a feasible design scores :math:`f/(|f| + 1) \\in (-1, 1)`
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
evaluated once, and counted once), and with ``path=`` stored as JSON lines, the
verifications (simulations) too: a run that is interrupted and started again reads them back
(resumable, as :func:`pinext.sweep` is).

The parts: the records (variables, problem, result) in :mod:`.optimize_problem`, the store of
evaluations in :mod:`.optimize_store`, :class:`DriveProblem` in :mod:`.drive_problem`,
:class:`ElasticTracking` in :mod:`.elastic_tracking`, the reports in :mod:`.optimize_report`;
this module holds the optimizers and re-exports the public names.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import InfeasibleDesign, InvalidParameter
from ..validation import integer, real
from .drive_problem import DriveProblem
from .elastic_tracking import ElasticTracking
from .optimize_problem import (
    Choice,
    Continuous,
    Evaluation,
    Neighbour,
    OptimalDesign,
    ParetoPoint,
    Problem,
    enumerate_designs,
    plain,
)
from .optimize_store import EvaluationStore, design_key, evaluation_map

__all__ = [
    "Choice",
    "Continuous",
    "DriveProblem",
    "ElasticTracking",
    "Evaluation",
    "Neighbour",
    "OptimalDesign",
    "ParetoPoint",
    "Problem",
    "enumerate_designs",
    "optimize",
]


class _Evaluator(EvaluationStore):
    """The store seen by the optimizers: decodes x (a Choice as its option index), scores
    designs by Deb's feasibility rules (module docstring), and feeds differential
    evolution's ``workers=`` map."""

    def __init__(
        self,
        problem: Problem,
        mapper: Callable[[Callable, Iterable], Iterable] | None,
        path: Path | None,
    ) -> None:
        super().__init__(problem, mapper, path)
        self.variables = list(problem.variables)
        self.criterion = problem.minimize[0]  # minimised (without weights)
        self.extra: list[tuple[str, float]] = []  # ε-constraints: (criterion, bound)

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
                out[v.name] = plain(v.options[index])
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

    # -- scores
    def objective(self, evaluation: Evaluation) -> float:
        weights = self.problem.weights
        if weights is not None:
            return float(
                sum(
                    w * evaluation.criteria[c]
                    for w, c in zip(weights, self.problem.minimize, strict=True)
                )
            )
        return float(evaluation.criteria[self.criterion])

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
        return f / (abs(f) + 1.0)

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
    ends = []
    for criterion in (second, first):
        ev.criterion = criterion
        method = _solve(ev, **options)
        ends.append(ev.best())
    low = ev.cache[ends[0]].criteria[second]
    high = ev.cache[ends[1]].criteria[second]
    for epsilon in np.linspace(low, high, n)[1:-1]:
        ev.extra = [(second, float(epsilon))]
        _solve(ev, **options)
    ev.extra = []
    candidates = [
        (k, ev.cache[k].criteria[first], ev.cache[k].criteria[second])
        for k in sorted(ev.seen)
        if ev.violation(ev.cache[k]) == 0.0
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
            candidate.update({w.name: plain(x) for w, x in zip(others, values, strict=True)})
            designs.append(candidate)
        ev.prefetch(designs)
        keys = [design_key(d) for d in designs]
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
    seed = integer("seed", seed, low=0)
    maxiter = integer("maxiter", maxiter, low=1)
    popsize = integer("popsize", popsize, low=1)
    tolerance = real("tolerance", tolerance, low=0.0, high=1.0, strict=True)
    if problem.pareto:
        pareto_points = integer("pareto_points", pareto_points, low=3)
    mapper, pool = evaluation_map(workers, client)
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
            order = [design_key(d) for d in candidates]
            evaluations = count + 1
        else:
            if problem.pareto:
                front, chosen, method = _pareto(ev, pareto_points, **options)
            else:
                method = _solve(ev, **options)
                chosen = ev.best()
            order = sorted(ev.seen, key=lambda k: ev.rank(ev.cache[k]))
            order.remove(chosen)
            order.insert(0, chosen)
            evaluations = len(ev.seen)
        chosen = order[0]
        if ev.violation(ev.cache[chosen]) > 0.0:
            raise _infeasible(ev.cache[chosen].margins, ev.designs[chosen], evaluations)
        constraints = dict(ev.cache[chosen].margins)
        verifications = 0
        if problem.verify is not None:
            feasible = [k for k in order if ev.violation(ev.cache[k]) == 0.0]
            chosen, constraints, verifications = _verify(
                ev, feasible[: max(1, int(verify_candidates))], evaluations
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


def _verify(
    ev: _Evaluator, candidates: list[str], evaluations: int
) -> tuple[str, dict[str, float], int]:
    """Run the problem's ``verify`` on the candidates, best screened first, until one meets
    every limit; returns (its key, its margins with the verification's, runs)."""
    failed: list[tuple[float, str, dict[str, float]]] = []
    for runs, key in enumerate(candidates, 1):
        margins = {f"verify: {k}": m for k, m in ev.verification(ev.designs[key]).items()}
        violation = Evaluation({}, margins).violation
        if violation == 0.0:
            return key, {**ev.cache[key].margins, **margins}, runs
        failed.append((violation, key, margins))
    _, key, margins = min(failed, key=lambda item: item[0])
    raise _infeasible(margins, ev.designs[key], evaluations)


def _infeasible(
    margins: Mapping[str, float], design: dict[str, Any], evaluations: int
) -> InfeasibleDesign:
    """The error of a design that exceeds a limit: its violated constraint closest to
    feasible (a NaN margin counts as the farthest), by how much, and every violated one."""
    violated = {k: m for k, m in margins.items() if not m >= 0}
    closest = max(violated, key=lambda k: violated[k] if math.isfinite(violated[k]) else -math.inf)
    return InfeasibleDesign(closest, violated[closest], design, evaluations, violated)
