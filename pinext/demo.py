"""``pinext demo``: the flexible arm of seed 001, the writing task of seed 000 against three
environments, and elastic DC drives; results, plots and a browser animation in ``./out/``."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .cli import table

#: A section of the summary: title, column names, rows.
Section = tuple[str, list[str], list[list[str]]]

#: The project's robot descriptions (a checkout of the repository).
URDF_DIR = Path(__file__).resolve().parents[1] / "urdf"


def flexible_arm(out: Path, quick: bool) -> Section:
    """Seed 001 §5.2: frequencies for nu = 5, 10 against Euler-Bernoulli theory, then a slew."""
    from .flexible import FlexibleLink, natural_frequencies
    from .robot import load_urdf
    from .simulation import Schedule, simulate

    length, side, young = 2.0, 0.01, 1e11
    inertia, mu = side**4 / 12, 7876 * side**2
    theory = np.sqrt(young * inertia / mu) * np.pi / (32 * length**2) * (4 * np.arange(1, 6) + 1) ** 2
    rows = [["Euler-Bernoulli (70)", *(f"{f:.4g}" for f in theory)]]
    for nu in (5, 10):
        link = FlexibleLink("bar", nu, young, inertia)
        robot = load_urdf(URDF_DIR / "flexible_arm.urdf", flexible=[link])
        freqs = natural_frequencies(robot)[1:6]
        rows.append([f"{nu} sublinks", *(f"{f:.4g}" for f in freqs)])
    hub = np.zeros(robot.nv)
    hub[0] = 2.0
    torque = Schedule([0.0, 0.3, 0.6], [hub, -hub, 0 * hub], kind="zoh")
    traj = simulate(robot, 0.6 if quick else 1.5, control=torque, output_dt=1 / 60)
    traj.save(out / "flexible_slew.npz")
    rows.append([f"slew {traj.t[-1]:.1f} s: hub {traj.q[-1, 0]:.4f} rad, energy balance "
                 f"{traj.energy_balance().max_relative():.1e}"])
    header = ["model", "f1 [Hz]", "f2 [Hz]", "f3 [Hz]", "f4 [Hz]", "f5 [Hz]"]
    return "Flexible arm (seed 001 §5.2): 2 m steel bar, natural frequencies", header, rows


def writing_task(out: Path, quick: bool) -> Section:
    """Seed 000 §20.5: approach, impact, write with a prescribed pressure; three environments."""
    from .contact import run_writing_task

    rows = []
    labels = {"rigid": "rigid table", "compliant": "compliant massive table (c)",
              "spring": "external spring (d)"}
    for env, label in labels.items():
        traj = run_writing_task(env, 1.2 if quick else 3.0, output_dt=1e-3)
        traj.save(out / f"writing_{env}.npz")
        impacts = [e for e in traj.events if e.name.startswith("contact")]
        force = traj.outputs["contact.force"].reshape(len(traj), -1)[:, 0]
        contact = traj.phase_index >= (traj.phase_index[np.searchsorted(traj.t, impacts[0].t)] if impacts else 1)
        impulse = float(np.sum(impacts[0].info.get("impulse", 0.0))) if impacts else 0.0
        balance = traj.energy_balance()
        rows.append([
            label,
            f"{impacts[0].t:.9f}" if impacts else "-",
            f"{impulse:.4f}",
            f"{np.median(force[contact]) if contact.any() else 0.0:.3f}",
            f"{balance.jump_losses[-1]:.4f}",
            f"{balance.max_relative():.1e}",
        ])
    header = ["environment", "contact at [s]", "impulse [N.s]", "median force [N]",
              "impact loss [J]", "energy balance"]
    return "Writing task (seed 000 §20.5): approach, impact, write at 10 N", header, rows


def run_demo(out: Path, quick: bool = False) -> int:
    """Run every scenario, print the summary table, write results to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for scenario in (writing_task, flexible_arm):
        title, header, rows = scenario(out, quick)
        print(f"{title}\n{table(rows, header)}\n")
    print(f"written to {out.resolve()} in {time.perf_counter() - started:.1f} s")
    return 0
