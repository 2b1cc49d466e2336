"""Run a study on Dask: an embedded ``LocalCluster`` or an existing cluster.

pinext does not schedule anything itself: each point is one ``dask.distributed`` task, the
scheduler places it, and pinext collects the results as they complete, writes them to the
study's Parquet dataset and resubmits the points whose worker died.
"""

from __future__ import annotations

import ast
import asyncio
import contextvars
import logging
import os
import socket
import sys
import threading
import time
import traceback
import uuid
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..exceptions import InvalidParameter
from ..simulation.progress import without_bars
from ..validation import real
from .dependencies import require
from .parameters import RESERVED, as_points, point_key, study_name
from .store import DONE, Writer, frame, read

if TYPE_CHECKING:
    import pandas as pd

LOGGER = logging.getLogger(__name__)

#: Errors of a task (not of the study) that mean its worker died or its result was lost.
_WORKER_LOST = ("KilledWorker", "CancelledError", "CommClosedError", "FutureCancelledError")


def usable_cpus() -> int:
    """The number of CPUs this process may run on (its affinity mask where there is one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def local_cluster(workers: int | None = None, **options: Any) -> Any:
    """A Dask ``LocalCluster`` for studies: processes of one thread each, on 127.0.0.1 only.

    The simulator holds Python's GIL, so each worker is a process with one thread. The
    scheduler and the workers listen on the loopback interface and the dashboard is off
    (pass ``dashboard_address="127.0.0.1:8787"`` to have it). The scheduler's
    ``allowed_failures`` is 0: a point whose worker dies comes back to :func:`run` at once,
    which resubmits it (``retries``) the same way on every cluster.

    Args:
        workers: Number of worker processes; default :func:`usable_cpus`.
        **options: Further ``LocalCluster`` arguments (they override the defaults above).

    Returns:
        The started ``distributed.LocalCluster`` (close it, or use it in a ``with`` block).
    """
    require()
    from distributed import LocalCluster

    n = usable_cpus() if workers is None else int(workers)
    if n < 1:
        raise InvalidParameter(f"a cluster needs at least one worker, got workers={workers}")
    settings: dict[str, Any] = {
        "n_workers": n,
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": None,
        "silence_logs": logging.ERROR,
        "scheduler_kwargs": {"allowed_failures": 0},
    }
    if "dashboard_address" not in options:  # no dashboard; the health endpoints on any free port
        settings["scheduler_kwargs"]["dashboard_address"] = "127.0.0.1:0"
    settings.update(options)
    return LocalCluster(**settings)


def _where(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" (at {Path(last.filename).name}:{last.lineno} in {last.name})"


class _TimedOut(Exception):
    """The study of a point ran longer than the sweep's ``timeout``."""


def _call(study: Callable[..., Any], point: Mapping[str, Any], timeout: float | None) -> Any:
    """``study(**point)``, in a daemon thread when there is a ``timeout`` [s]: a point that
    runs longer raises :class:`_TimedOut` (its thread is left to the worker's restart)."""
    if timeout is None:
        return study(**point)
    box: dict[str, Any] = {}
    context = contextvars.copy_context()  # the caller's without_bars() holds in the thread

    def target() -> None:
        try:
            box["raw"] = context.run(study, **point)
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True, name="pinext-study")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise _TimedOut(f"the study ran longer than timeout = {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["raw"]


def evaluate(
    study: Callable[..., Mapping[str, Any]],
    point: Mapping[str, Any],
    timeout: float | None = None,
) -> dict[str, Any]:
    """Run one point on a worker; never raises for the study's own errors.

    Returns:
        ``{"results", "status", "error", "warnings", "wall_time", "worker"}``: the study's
        results as floats (empty on error), ``"ok"``, ``"error"`` or ``"timeout"`` (it ran
        longer than ``timeout`` [s]), the error's type, message and innermost location, the
        warnings the point raised (each distinct one once, ``"Category: message"`` joined by
        newlines; none is printed by the worker), the study's wall time [s] and the worker's
        address. The point's runs draw no progress bar (:func:`pinext.simulation.progress.
        without_bars`): only the sweep's bar shows.
    """
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, without_bars():
        warnings.simplefilter("always")  # every warning of the point, none printed
        results, status, error = _outcome(study, point, timeout)
    said = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    wall = time.perf_counter() - start
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = ""
    return {
        "results": results,
        "status": status,
        "error": error,
        "warnings": "\n".join(said),
        "wall_time": wall,
        "worker": worker,
    }


def _outcome(
    study: Callable[..., Mapping[str, Any]], point: Mapping[str, Any], timeout: float | None
) -> tuple[dict[str, float], str, str]:
    """(results, status, error) of one point (see :func:`evaluate`)."""
    results: dict[str, float] = {}
    status, error = "ok", ""
    try:
        raw = _call(study, point, timeout)
        if not isinstance(raw, Mapping):
            raise InvalidParameter(
                f"a study must return a dict of floats, got {type(raw).__name__}"
            )
        for name, value in raw.items():
            if not isinstance(name, str) or name in RESERVED or name in point:
                raise InvalidParameter(
                    f"result name {name!r} clashes with a parameter or a reserved column "
                    f"({', '.join(RESERVED)})"
                )
            try:
                results[name] = float(value)
            except (TypeError, ValueError):
                raise InvalidParameter(
                    f"result '{name}' must be a float, got {type(value).__name__}"
                ) from None
    except _TimedOut as err:
        results, status, error = {}, "timeout", f"timeout: {err}"
    except Exception as err:  # recorded in the row; the study goes on
        results = {}
        status = "error"
        error = f"{type(err).__name__}: {err}{_where(err)}"
    return results, status, error


def _connect(client: Any, workers: int | None, owned: list[Any]) -> Any:
    from distributed import Client

    if workers is not None and client is not None:
        raise InvalidParameter(
            "workers= sizes the embedded LocalCluster; it cannot be combined with client= "
            "(size an existing cluster where it is started)"
        )
    if client is None:
        cluster = local_cluster(workers)
        owned.append(cluster)
        client = Client(cluster, set_as_default=False)
        owned.append(client)
    elif isinstance(client, str):
        reachable(client)
        client = Client(client, set_as_default=False, timeout="30s")
        owned.append(client)
    elif not isinstance(client, Client):
        raise InvalidParameter(
            "client must be None (embedded LocalCluster), a dask.distributed.Client or a "
            f"scheduler address such as 'tcp://host:8786', got {type(client).__name__}"
        )
    return client


#: Seconds to wait for a scheduler's port to answer before calling it unreachable.
CONNECT_TIMEOUT = 5.0


def reachable(address: str) -> None:
    """Refuse at once a scheduler address that is malformed or whose port does not answer
    (Dask itself would wait 30 s and end in an ``OSError``)."""
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise InvalidParameter(
            f"scheduler address {address!r} is not of the form tcp://host:port "
            "(e.g. tcp://127.0.0.1:8786)"
        )
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
    except OSError as err:
        raise InvalidParameter(
            f"scheduler {address} is unreachable ({err}); start one with `dask scheduler` "
            "(and workers with `dask worker ADDRESS`), or leave the scheduler out for an "
            "embedded local cluster"
        ) from None


def _refuse_unpicklable(study: Callable[..., Any]) -> None:
    import cloudpickle

    try:
        cloudpickle.dumps(study)
    except Exception as err:  # noqa: BLE001 - pickling raises many types
        raise InvalidParameter(
            f"study {study_name(study)} cannot be sent to the workers: it does not pickle "
            f"({type(err).__name__}: {err}); define it as a function at the top level of a "
            "module, holding no open files, locks, clients or live models (load those inside "
            "the study)"
        ) from None


GUARD_ADVICE = (
    'put the script\'s top-level code under `if __name__ == "__main__":` (the embedded '
    "cluster's worker processes are started by spawning: each imports the main script "
    "again, and an unguarded call would start a cluster in every worker; see the "
    "multiprocessing guide of Python)"
)


def _refuse_in_worker_import() -> None:
    """A script that calls ``pinext.sweep`` at its top level is imported again by every
    worker process that starts: refuse there, with the fix, instead of Dask's "Nanny failed
    to start" tracebacks. (While the child imports the script, multiprocessing marks it
    ``_inheriting`` and names the module ``__mp_main__``; its parent process is not set yet.)"""
    import multiprocessing

    process = multiprocessing.current_process()
    if getattr(process, "_inheriting", False) or (
        multiprocessing.parent_process() is not None and "__mp_main__" in sys.modules
    ):
        raise InvalidParameter(
            f"pinext.sweep was called while a worker process imported your script: {GUARD_ADVICE}"
        )


def _is_main_test(test: ast.expr) -> bool:
    """Whether ``test`` is ``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1


def unguarded_call() -> str | None:
    """``"script.py:line"`` when the main script calls this (through any functions) from
    its top-level code outside an ``if __name__ == "__main__":`` block; None otherwise (an
    interactive session, ``python -c``, a guarded call, a call from an imported module)."""
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if main is None or not script or not str(script).endswith(".py"):
        return None
    line = None
    frame: Any = sys._getframe(1)
    while frame is not None:  # the outermost frame of the script's top-level code
        if frame.f_globals is main.__dict__ and frame.f_code.co_name == "<module>":
            line = frame.f_lineno
        frame = frame.f_back
    if line is None:
        return None
    try:
        tree = ast.parse(Path(script).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        end = getattr(node, "end_lineno", None) or node.lineno
        if isinstance(node, ast.If) and _is_main_test(node.test) and node.lineno <= line <= end:
            return None
    return f"{script}:{line}"


def _refuse_unguarded_script() -> None:
    """Refuse, before any worker starts, an embedded cluster asked for by the top-level
    code of a script without a ``__main__`` guard (:func:`unguarded_call`)."""
    where = unguarded_call()
    if where is not None:
        raise InvalidParameter(
            f"pinext.sweep is called from the top level of the script at {where}, outside "
            f'`if __name__ == "__main__":`; {GUARD_ADVICE}'
        )


def run(
    study: Callable[..., Mapping[str, float]],
    parameters: Any,
    *,
    client: Any = None,
    path: str | os.PathLike | None = None,
    retries: int = 2,
    progress: bool = True,
    workers: int | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    timeout: float | None = None,
) -> pd.DataFrame:
    """Run ``study(**point)`` for every point on Dask; one row per point.

    Each point is a Dask task. A point whose study raises is recorded with its error
    (``status == "error"``) and the study goes on; a point whose worker dies is submitted
    again, to any live worker, up to ``retries`` times, then recorded as ``"lost"`` (the
    embedded cluster's scheduler hands such a point back at once; the scheduler of an existing
    cluster first reschedules it itself, up to its ``distributed.scheduler.allowed-failures``
    times). A result lost with its worker after the point finished is recomputed by Dask. With a
    ``path``, rows are appended to a Parquet dataset as they arrive (at least every second)
    and when the run ends or is interrupted; a rerun with the same ``path`` skips the points
    already done (``"ok"`` or ``"error"``; lost points run again). A point is known by the
    hash of the study's name (``module.qualname``) and its parameters, so a dataset may hold
    several studies and grids.

    Args:
        study: A top-level (picklable) function ``study(**point) -> dict[str, float]``.
        parameters: A grid (dict of lists, :func:`~pinext.sweep.parameters.grid`), a list of
            dicts (e.g. :func:`~pinext.sweep.parameters.latin_hypercube`) or a DataFrame.
            Repeated points are run once.
        client: None starts an embedded :func:`local_cluster` (closed at the end); a
            ``dask.distributed.Client``, or a scheduler address ``"tcp://host:8786"``, runs on
            that cluster.
        path: Folder of the Parquet dataset; None keeps the rows in memory only.
        retries: Resubmissions of a point after its worker died.
        progress: Show a tqdm bar (points done, failed, time left).
        workers: Size of the embedded cluster (default: the usable CPUs).
        on_result: Called in this process with each new row (a dict) as it arrives; an
            exception raised there stops the study (rows so far are written).
        timeout: Longest wall time of one point [s] (None: no limit). A point that runs
            longer is recorded with ``status == "timeout"`` and its worker is restarted (the
            study's thread cannot be stopped otherwise); the other points go on.

    Returns:
        A ``pandas.DataFrame``, one row per distinct point in the order given: the
        parameters, the results, then ``wall_time`` [s] (the study's time on its worker),
        ``status`` (``ok``, ``error``, ``timeout``, ``lost``), ``error`` (type, message and
        location), ``warnings`` (what the point warned, each distinct warning once, e.g. a
        :class:`~pinext.contact.VelocityLimitWarning`; the workers print none, and one line
        of the ``pinext`` logger sums them up after the progress bar), ``attempts``,
        ``worker`` (address), ``key`` and ``study``.

    Raises:
        InvalidParameter: Bad parameters, ``study`` not callable, negative ``retries``.
        MissingDependency: dask, pandas or pyarrow is not installed (``pinext[sweep]``).
    """
    require()
    if not callable(study):
        raise InvalidParameter(f"study must be a function, got {type(study).__name__}")
    if not isinstance(retries, int) or retries < 0:
        raise InvalidParameter(f"retries must be a non-negative integer, got {retries!r}")
    timeout = real("timeout", timeout, unit="[s]", low=0.0, strict=True, none=True)
    _refuse_in_worker_import()
    if client is None:
        _refuse_unguarded_script()
    name = study_name(study)
    points: dict[str, dict[str, Any]] = {}
    for point in as_points(parameters):
        points.setdefault(point_key(name, point), point)
    rows: dict[str, dict[str, Any]] = {}
    if path is not None:
        previous = read(path)
        if len(previous):
            done = previous[previous["key"].isin(list(points)) & previous["status"].isin(DONE)]
            keep = set(RESERVED) | set(next(iter(points.values())))
            done = done[[c for c in done.columns if c in keep or done[c].notna().any()]]
            for row in done.to_dict("records"):
                rows[row["key"]] = row
    todo = [key for key in points if key not in rows]
    writer = Writer(path) if path is not None and todo else None
    if todo:
        _refuse_unpicklable(study)
        _execute(
            study,
            name,
            points,
            todo,
            rows,
            client,
            workers,
            retries,
            progress,
            writer,
            on_result,
            timeout,
        )
    params = list(next(iter(points.values())))
    ordered = [rows[key] for key in points]
    return frame(ordered, params)


def _execute(
    study, name, points, todo, rows, client, workers, retries, progress, writer, on_result, timeout
) -> None:
    from distributed import as_completed
    from tqdm.auto import tqdm

    owned: list[Any] = []
    pending: dict[Any, tuple[str, int]] = {}
    counts = {"ok": 0, "error": 0, "timeout": 0, "lost": 0}
    bar = tqdm(total=len(todo), desc="sweep", unit="pt", disable=not progress, smoothing=0.1)
    label = getattr(study, "__name__", "study")
    try:
        client = _connect(client, workers, owned)
        run_id = uuid.uuid4().hex[:8]
        futures = client.map(
            evaluate,
            [study] * len(todo),
            [points[key] for key in todo],
            [timeout] * len(todo),
            key=[f"{label}-{key}-{run_id}-1" for key in todo],
            pure=False,
        )
        pending = {f: (key, 1) for f, key in zip(futures, todo, strict=True)}
        queue = as_completed(futures, loop=client.loop)
        while pending:
            if not queue.has_ready():  # idle: rows waiting in the buffer go to disk
                if writer is not None:
                    writer.tick()
                time.sleep(0.01)
                continue
            future = next(queue)
            key, attempt = pending.pop(future)
            point = points[key]
            try:
                # Waits if the worker holding the result died meanwhile: Dask recomputes it.
                out = future.result()
            except (Exception, asyncio.CancelledError) as err:  # the task's, not the study's
                if type(err).__name__ in _WORKER_LOST and attempt <= retries:
                    again = client.submit(
                        evaluate,
                        study,
                        point,
                        timeout,
                        key=f"{label}-{key}-{run_id}-{attempt + 1}",
                        pure=False,
                    )
                    pending[again] = (key, attempt + 1)
                    queue.add(again)
                    continue
                row = {
                    **point,
                    "wall_time": float("nan"),
                    "status": "lost",
                    "error": f"{type(err).__name__}: {err}",
                    "warnings": "",
                    "attempts": attempt,
                    "worker": "",
                }
            else:
                row = {**point, **out["results"]}
                row.update(
                    wall_time=out["wall_time"],
                    status=out["status"],
                    error=out["error"],
                    warnings=out.get("warnings", ""),
                    attempts=attempt,
                    worker=out["worker"],
                )
            row.update(key=key, study=name)
            if row["status"] == "timeout" and row["worker"]:
                _restart(client, row["worker"])
            rows[key] = row
            counts[row["status"]] += 1
            if writer is not None:
                writer.add(row)
            bar.update(1)
            bar.set_postfix(
                failed=counts["error"] + counts["lost"] + counts["timeout"], refresh=False
            )
            if on_result is not None:
                on_result(dict(row))
    finally:
        if pending:
            try:
                client.cancel(list(pending))
            except Exception:  # noqa: BLE001 - the client may already be closing
                pass
        if writer is not None:
            writer.flush()
        bar.close()
        for resource in reversed(owned):
            resource.close()
        _summarise_warnings([rows[key] for key in todo if key in rows])


def _summarise_warnings(rows: list[dict[str, Any]]) -> None:
    """One line through the ``pinext`` logger, after the progress bar: how many points raised
    warnings, and the distinct ones (they are in each row's ``warnings`` column)."""
    said = [row for row in rows if row.get("warnings")]
    if not said:
        return
    distinct = list(dict.fromkeys(w for row in said for w in row["warnings"].split("\n")))
    shown = "; ".join(distinct[:3]) + (
        f"; and {len(distinct) - 3} more" if len(distinct) > 3 else ""
    )
    LOGGER.warning(
        "%d of %d points raised warnings (see the 'warnings' column): %s",
        len(said),
        len(rows),
        shown,
    )


def _restart(client: Any, worker: str) -> None:
    """Restart the worker left running a timed-out point (its thread cannot be stopped)."""
    try:
        client.restart_workers([worker], raise_for_error=False)
    except Exception:  # noqa: BLE001 - a worker that cannot restart is replaced by Dask
        pass
