"""The evaluations of an optimal design (:func:`~pinext.planning.optimize`), each design
evaluated once: kept by design, evaluated in parallel through a map (a process pool, a Dask
client, any map-like callable), and with a path appended to a JSON-lines file that a later run
reads back instead of evaluating again (resumable, as :func:`pinext.sweep` is).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..exceptions import InvalidParameter, NameNotFound
from .optimize_problem import Evaluation, Problem

__all__ = ["EvaluationStore", "design_key", "evaluation_map"]


def design_key(design: Mapping[str, Any]) -> str:
    """The key of a design in the store (its JSON, names sorted)."""
    return json.dumps({k: design[k] for k in sorted(design)}, sort_keys=True)


class EvaluationStore:
    """The evaluations of a problem's designs, each computed once.

    Args:
        problem: Its ``evaluate`` computes the designs; every evaluation must give the
            criteria of its ``minimize``.
        mapper: ``(func, designs) -> results``, the map that evaluates several designs at
            once (None: one after the other in this process).
        path: A JSON-lines file, one ``{"design", "criteria", "margins"}`` a line, or
            ``{"design", "verify"}`` for a verification (the margins of the problem's
            ``verify``, a simulation): read back if it exists, appended to with every new
            evaluation and verification. The file is not checked against the problem: a
            changed problem needs a new file.

    Attributes:
        cache: Design key -> its evaluation.
        designs: Design key -> the design.
        seen: The keys of the designs asked for in this run (stored ones included): what a
            run decides from, so that a run that reads the store back decides the same.
        verified: Design key -> the margins of its verification.
    """

    def __init__(
        self,
        problem: Problem,
        mapper: Callable[[Callable, Iterable], Iterable] | None,
        path: Path | None,
    ) -> None:
        self.problem = problem
        self.mapper = mapper
        self.path = path
        self.cache: dict[str, Evaluation] = {}
        self.designs: dict[str, dict[str, Any]] = {}
        self.seen: set[str] = set()
        self.verified: dict[str, dict[str, float]] = {}
        if path is not None and path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    key = design_key(row["design"])
                    if "verify" in row:
                        self.verified[key] = row["verify"]
                        continue
                    self.designs[key] = row["design"]
                    self.cache[key] = Evaluation(row["criteria"], row["margins"])

    def prefetch(self, designs: Iterable[dict[str, Any]]) -> None:
        """Evaluate the designs not in the store, together (through the map), and store
        them."""
        todo: dict[str, dict[str, Any]] = {}
        for design in designs:
            key = design_key(design)
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
            lines.append(json.dumps({"design": design, **evaluation._asdict()}))
        self._append(lines)

    def _append(self, lines: list[str]) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as stream:
                stream.write("".join(line + "\n" for line in lines))

    def verification(self, design: dict[str, Any]) -> dict[str, float]:
        """The margins of the problem's ``verify`` (a simulation) for one design: read from
        the store, or run once and stored (a resumed run does not simulate again)."""
        key = design_key(design)
        if key not in self.verified:
            verify = self.problem.verify
            if verify is None:
                raise InvalidParameter("the problem has no verify to run")
            margins = {str(k): float(m) for k, m in verify(design).items()}
            self.verified[key] = margins
            self._append([json.dumps({"design": design, "verify": margins})])
        return self.verified[key]

    def evaluation(self, design: dict[str, Any]) -> Evaluation:
        """The evaluation of one design (computed if it is not stored)."""
        self.prefetch([design])
        return self.cache[design_key(design)]


def evaluation_map(workers: Any, client: Any) -> tuple[Callable | None, Any]:
    """(the map that evaluates designs in parallel, the pool to shut down after the run).

    Args:
        workers: None or 1 (no map), a number of processes > 1, or a map-like callable.
        client: A ``dask.distributed.Client`` (its tasks; ``workers`` is then ignored).

    Raises:
        InvalidParameter: ``workers`` is none of these.
    """
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
