"""``pinext demo``: the flexible arm of Celentano (2008), the writing task of
Vukobratović & Potkonjak against three environments, and elastic DC drives; results, plots and a
browser animation in ``./out/``."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ._format import table
from .robots import robot_path

#: A section of the summary: title, column names, rows.
Section = tuple[str, list[str], list[list[str]]]


def flexible_arm(out: Path, quick: bool) -> Section:
    """Celentano (2008) §5.2: frequencies for nu = 5, 10 against Euler-Bernoulli theory, then a
    slew."""
    from .flexible import FlexibleLink, natural_frequencies
    from .robot import load_urdf
    from .simulation import Schedule, simulate

    length, side, young = 2.0, 0.01, 1e11
    inertia, mu = side**4 / 12, 7876 * side**2
    theory = (
        np.sqrt(young * inertia / mu) * np.pi / (32 * length**2) * (4 * np.arange(1, 6) + 1) ** 2
    )
    rows = [["Euler-Bernoulli (70)", *(f"{f:.4g}" for f in theory)]]
    for nu in (5, 10):
        link = FlexibleLink("bar", nu, young, inertia)
        robot = load_urdf(robot_path("flexible_arm"), flexible=[link])
        freqs = natural_frequencies(robot)[1:6]
        rows.append([f"{nu} sublinks", *(f"{f:.4g}" for f in freqs)])
    hub = np.zeros(robot.nv)
    hub[0] = 2.0
    torque = Schedule([0.0, 0.3, 0.6], [hub, -hub, 0 * hub], kind="zoh")
    traj = simulate(robot, 0.6 if quick else 1.5, control=torque, output_dt=1 / 60)
    traj.save(out / "flexible_slew.npz")
    rows.append(
        [
            f"slew {traj.t[-1]:.1f} s: hub {traj.q[-1, 0]:.4f} rad, energy balance "
            f"{traj.energy_balance().max_relative():.1e}"
        ]
    )
    header = ["model", "f1 [Hz]", "f2 [Hz]", "f3 [Hz]", "f4 [Hz]", "f5 [Hz]"]
    return "Flexible arm (Celentano 2008, §5.2): 2 m steel bar, natural frequencies", header, rows


def writing_task(out: Path, quick: bool) -> Section:
    """Vukobratović & Potkonjak §20.5: approach, impact, write with a prescribed pressure; three
    environments."""
    from .tasks import run_writing_task

    rows = []
    labels = {
        "rigid": "rigid table",
        "compliant": "compliant massive table (c)",
        "spring": "external spring (d)",
    }
    for env, label in labels.items():
        traj = run_writing_task(env, 1.2 if quick else 3.0, output_dt=1e-3)
        traj.save(out / f"writing_{env}.npz")
        impacts = [e for e in traj.events if e.name.startswith("contact")]
        force = traj.outputs["contact.force"].reshape(len(traj), -1)[:, 0]
        contact = traj.phase_index >= (
            traj.phase_index[np.searchsorted(traj.t, impacts[0].t)] if impacts else 1
        )
        impulse = float(np.sum(impacts[0].info.get("impulse", 0.0))) if impacts else 0.0
        balance = traj.energy_balance()
        rows.append(
            [
                label,
                f"{impacts[0].t:.9f}" if impacts else "-",
                f"{impulse:.4f}",
                f"{np.median(force[contact]) if contact.any() else 0.0:.3f}",
                f"{balance.jump_losses[-1]:.4f}",
                f"{balance.max_relative():.1e}",
            ]
        )
    header = [
        "environment",
        "contact at [s]",
        "impulse [N.s]",
        "median force [N]",
        "impact loss [J]",
        "energy balance",
    ]
    return (
        "Writing task (Vukobratović & Potkonjak, §20.5): approach, impact, write at 10 N",
        header,
        rows,
    )


def elastic_drives(out: Path, quick: bool) -> Section:
    """Vukobratović & Potkonjak Fig. 20.10a: DC motors behind harmonic-drive springs track a
    motion."""
    from .drives import harmonic_drives
    from .planning import rest_to_rest, track_rest_to_rest
    from .robot import load_urdf
    from .simulation import System
    from .sweep.studies import MOTION

    robot = load_urdf(robot_path("six_dof_arm"), extensions=False)
    drives = harmonic_drives(list(robot.model.names)[1:7])
    system = System(robot, drives=drives)
    duration = 0.6 if quick else 1.5
    q0, dq = MOTION  # within the arm's velocity limits over 0.8 duration (>= 0.48 s)
    traj, _ = track_rest_to_rest(system, q0, dq, duration, rtol=1e-8, atol=1e-10, output_dt=2e-3)
    traj.save(out / "elastic_drives.npz")
    error = np.abs(traj.q - rest_to_rest(traj.t, q0, dq, 0.8 * duration)).max()
    spring = np.abs(traj.outputs["drives.spring_torque"]).max(axis=0)
    loss = traj.outputs["drives.copper_loss"].sum(axis=1)
    rows = [
        [
            f"{1e3 * error:.3f}",
            " ".join(f"{s:.1f}" for s in spring),
            f"{np.abs(traj.outputs['drives.voltage']).max():.1f}",
            f"{np.trapezoid(loss, traj.t):.2f}",
            f"{traj.energy_balance().max_relative():.1e}",
        ]
    ]
    header = [
        "max tracking error [mrad]",
        "max spring torque per joint [N.m]",
        "max |u| [V]",
        "copper losses [J]",
        "energy balance",
    ]
    return (
        "Elastic DC drives (Vukobratović & Potkonjak, Fig. 20.10a), six_dof_arm, feedforward + PD",
        header,
        rows,
    )


def run_demo(out: Path, quick: bool = False) -> int:
    """Run every scenario, print the summary table, write results to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    scenarios = (writing_task, flexible_arm, elastic_drives)
    for i, scenario in enumerate(scenarios, 1):
        # progress first: a scenario takes seconds (the first one also compiles kernels)
        print(f"[{i}/{len(scenarios)}] {scenario.__name__.replace('_', ' ')} ...", flush=True)
        title, header, rows = scenario(out, quick)
        print(f"{title}\n{table(rows, header)}\n", flush=True)
    from .visualization import demo_outputs

    print("writing plots and the browser playback ...", flush=True)
    for path in demo_outputs(out) or ():
        print(f"wrote {path}")
    print(f"written to {out.resolve()} in {time.perf_counter() - started:.1f} s")
    return 0
