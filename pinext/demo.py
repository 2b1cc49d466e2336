"""``pinext demo``: the flexible arm of seed 001, the writing task of seed 000 against three
environments, and elastic DC drives; results, plots and a browser animation in ``./out/``."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .cli import table

#: The project's robot descriptions (a checkout of the repository).
URDF_DIR = Path(__file__).resolve().parents[1] / "urdf"


def flexible_arm(out: Path, quick: bool) -> list[list[str]]:
    """Seed 001 §5.2: frequencies for nu = 5, 10 against Euler-Bernoulli theory, then a slew."""
    from .flexible import FlexibleLink, natural_frequencies
    from .robot import load_urdf
    from .simulation import Schedule, simulate

    length, side, young = 2.0, 0.01, 1e11
    inertia, mu = side**4 / 12, 7876 * side**2
    theory = np.sqrt(young * inertia / mu) * np.pi / (32 * length**2) * (4 * np.arange(1, 6) + 1) ** 2
    rows = [["flexible arm", "Euler-Bernoulli (70) [Hz]", " ".join(f"{f:.4g}" for f in theory)]]
    for nu in (5, 10):
        link = FlexibleLink("bar", nu, young, inertia)
        robot = load_urdf(URDF_DIR / "flexible_arm.urdf", flexible=[link])
        freqs = natural_frequencies(robot)[1:6]
        rows.append(["", f"sublinks nu = {nu} [Hz]", " ".join(f"{f:.4g}" for f in freqs)])
    hub = np.zeros(robot.nv)
    hub[0] = 2.0
    torque = Schedule([0.0, 0.3, 0.6], [hub, -hub, 0 * hub], kind="zoh")
    traj = simulate(robot, 0.6 if quick else 1.5, control=torque, output_dt=1 / 60)
    traj.save(out / "flexible_slew.npz")
    rows.append(["", "slew: hub angle [rad]", f"{traj.q[-1, 0]:.4f}"])
    rows.append(["", "slew: energy balance (rel.)", f"{traj.energy_balance().max_relative():.1e}"])
    return rows


def run_demo(out: Path, quick: bool = False) -> int:
    """Run every scenario, print the summary table, write results to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows: list[list[str]] = []
    for scenario in (flexible_arm,):
        rows += scenario(out, quick)
    print(table(rows, ["scenario", "quantity", "value"]))
    print(f"\nwritten to {out.resolve()} in {time.perf_counter() - started:.1f} s")
    return 0
