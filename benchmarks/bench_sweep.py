"""Studies on Dask: 64 slews of the flexible arm (ν = 10, 1 s), serial against a LocalCluster.

Run: ``python benchmarks/bench_sweep.py [--workers 2] [--repeats 3] [--large 10000]``.
Every figure is measured in this run on this machine:

* the serial loop (the study called 64 times in this process) and the same 64 points through
  :func:`pinext.sweep` on a LocalCluster of ``--workers`` processes, medians of ``--repeats``;
* the per-task overhead ``h = (W T_W - Σ t_i) / n``: worker time not spent in the study
  (scheduling, serialisation, the idle tail), from the study times ``t_i`` that the workers
  report;
* the client/scheduler cost per task ``s``, from a study that does nothing;
* what the machine gives ``W`` processes at the time (a pure-Python loop run alone and on
  every worker at once): on a shared machine this, not Dask, bounds the speed-up;
* on paper, the speed-up with N workers, ``S(N) = n t / (T_0 + n max((t + h) / N, s))``.

``--large N`` also runs N points of the modal study through a Parquet dataset (the largest
study tried).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import pinext as px
from pinext.sweep.engine import usable_cpus

ARM = Path(__file__).resolve().parents[1] / "urdf" / "flexible_arm.urdf"
N_RUNS = 64


def slew(torque: float) -> dict[str, float]:
    """The flexible arm (ν = 10) slewed for 1 s: ``torque`` [N.m] for 0.3 s, then braked."""
    bar = px.FlexibleLink("bar", 10, 1e11, 0.01**4 / 12)
    robot = px.load_urdf(ARM, flexible=[bar])
    hub = np.zeros(robot.nv)
    hub[0] = torque
    schedule = px.Schedule([0.0, 0.3, 0.6], [hub, -hub, 0 * hub], kind="zoh")
    traj = px.simulate(robot, 1.0, control=schedule, rtol=1e-8, atol=1e-10)
    return {"hub_angle": float(traj.q[-1, 0]), "tip_rate": float(traj.v[-1, -1])}


def spin(n: int = 10_000_000) -> float:
    """Wall time [s] of a pure-Python loop: the CPU share a process gets right now."""
    start = time.perf_counter()
    total = 0
    for i in range(n):
        total += i
    return time.perf_counter() - start


def nothing(i: int) -> dict[str, float]:
    """A study that costs nothing: what remains is pinext's and Dask's cost per point."""
    return {"i": float(i)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--large", type=int, default=0, help="points of a large modal study")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from distributed import Client

    points = [{"torque": float(t)} for t in np.linspace(0.5, 2.0, N_RUNS)]
    W = args.workers
    load_before = os.getloadavg()[0]

    start = time.perf_counter()
    cluster = px.sweep.local_cluster(W)
    client = Client(cluster, set_as_default=False)
    client.wait_for_workers(W)
    startup = time.perf_counter() - start
    try:
        px.sweep(slew, points[: 2 * W], client=client, progress=False)  # workers import pinext
        serial, per_run = [], []
        parallel, overhead, study_time, efficiency = [], [], [], []
        ceiling = []
        for _ in range(args.repeats):  # serial and parallel in turn: both see the same load
            # What W processes get from this machine now: W x (one spin) / (W spins at once).
            alone = spin()
            together = statistics.median(client.run(spin).values())
            ceiling.append(W * alone / together)
            start = time.perf_counter()
            for point in points:
                begin = time.perf_counter()
                slew(**point)
                per_run.append(time.perf_counter() - begin)
            serial.append(time.perf_counter() - start)
            start = time.perf_counter()
            df = px.sweep(slew, points, client=client, progress=False)
            elapsed = time.perf_counter() - start
            assert (df["status"] == "ok").all()
            parallel.append(elapsed)
            overhead.append((W * elapsed - df["wall_time"].sum()) / N_RUNS)
            efficiency.append(df["wall_time"].sum() / (W * elapsed))
            study_time.append(df["wall_time"].median())
        n_trivial = 1024
        trivial = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            px.sweep(nothing, {"i": list(range(n_trivial))}, client=client, progress=False)
            trivial.append((time.perf_counter() - start) / n_trivial)
        large = None
        if args.large:
            grid = px.sweep.latin_hypercube(
                {"young_modulus": (5e10, 2.5e11), "density": (2500.0, 8000.0)}, args.large, 1
            )
            grid = [{"sublinks": 10, **p} for p in grid]
            with tempfile.TemporaryDirectory() as folder:
                start = time.perf_counter()
                df = px.sweep(px.sweep.studies.modal, grid, client=client, path=folder)
                large = (args.large, time.perf_counter() - start, df["wall_time"].sum())
                assert (df["status"] == "ok").all() and len(px.sweep.read(folder)) == args.large
    finally:
        client.close()
        cluster.close()

    # One worker alone: does a run on a Dask worker cost what it costs in this process?
    with px.sweep.local_cluster(1) as single, Client(single, set_as_default=False) as client:
        px.sweep(slew, points[:1], client=client, progress=False)
        df = px.sweep(slew, points[:8], client=client, progress=False)
        lone_worker = df["wall_time"].median()

    t_serial = statistics.median(serial)
    t = statistics.median(per_run)
    t_parallel = statistics.median(parallel)
    h = statistics.median(overhead)
    s = statistics.median(trivial)
    t_worker = statistics.median(study_time)
    print(f"{N_RUNS} slews of the flexible arm (nu = 10, 1 s), medians of {args.repeats} repeats")
    print(
        f"  machine: {usable_cpus()} CPUs, load average {load_before:.1f} before "
        f"and {os.getloadavg()[0]:.1f} after (other processes share the CPUs)"
    )
    print(f"  serial loop            {t_serial:8.2f} s   ({t * 1e3:.0f} ms per run)")
    print(f"  LocalCluster, {W} procs  {t_parallel:8.2f} s   speed-up {t_serial / t_parallel:.2f}")
    print(
        f"  per repeat: serial {', '.join(f'{x:.1f}' for x in serial)} s; "
        f"cluster {', '.join(f'{x:.1f}' for x in parallel)} s"
    )
    speedups = [a / b for a, b in zip(serial, parallel, strict=True)]
    relative = statistics.median(x / c for x, c in zip(speedups, ceiling, strict=True))
    print(
        f"  CPU available to {W} processes (spin test, per repeat): "
        f"{', '.join(f'{c:.2f}' for c in ceiling)} x one process; "
        f"speed-up / that ceiling: {relative:.0%}"
    )
    print(f"  cluster start-up       {startup:8.2f} s   (once per study with client=None)")
    print(
        f"  study time on workers  {t_worker * 1e3:8.0f} ms per run (serial: {t * 1e3:.0f} ms); "
        f"workers busy {statistics.median(efficiency):.0%} of the time"
    )
    print(f"  one worker alone       {lone_worker * 1e3:8.0f} ms per run (median of 8)")
    print(f"  per-task overhead h    {h * 1e3:8.1f} ms   (worker time outside the study)")
    print(f"  client+scheduler s     {s * 1e3:8.2f} ms per task ({1 / s:.0f} tasks/s, no-op study)")
    print("expected speed-up with N workers (on paper, this study, n = 64 and n = 10000):")
    print("  S(N) = n t / (T_0 + n max((t + h) / N, s)),  T_0 = cluster start-up")
    for n in (64, 10_000):
        row = []
        for workers in (2, 4, 8, 16, 32, 64, 128):
            total = startup + n * max((t + h) / workers, s)
            row.append(f"N={workers}: {n * t / total:5.1f}")
        print(f"  n = {n:5d}  " + "  ".join(row))
    print(f"  the scheduler saturates beyond N = (t + h) / s = {(t + h) / s:.0f} workers")
    if large:
        n, wall, busy = large
        print(
            f"large study: {n} points of the modal study (nu = 10) with a Parquet dataset: "
            f"{wall:.1f} s wall, {busy:.1f} s of study time, {wall / n * 1e3:.2f} ms per point"
        )


if __name__ == "__main__":
    main()
