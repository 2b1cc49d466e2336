"""The ``pinext`` command: demo, info, simulate, check, view, sweep."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .exceptions import PinextError


def table(rows: Sequence[Sequence[object]], header: Sequence[str] | None = None) -> str:
    """Format rows as an aligned plain-text table."""
    cells = [[str(c) for c in row] for row in ([header] if header else []) + list(rows)]
    if not cells:
        return ""
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(max(map(len, cells)))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in cells]
    if header:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _load(args: argparse.Namespace):
    from .robot import load_urdf

    return load_urdf(args.urdf, extensions=args.extensions)


def cmd_info(args: argparse.Namespace) -> int:
    """Print joints, transmissions, elastic DOFs, drives and the state layout of a URDF."""
    import pinocchio as pin

    from .simulation import System

    robot = _load(args)
    model = robot.model
    print(f"robot {model.name}: {args.urdf}")
    rows = []
    for jid in range(1, model.njoints):
        joint = model.joints[jid]
        sl = slice(joint.idx_v, joint.idx_v + joint.nv)
        stiff = robot.joint_stiffness[sl]
        rows.append(
            [
                model.names[jid],
                joint.shortname(),
                f"{joint.nq}/{joint.nv}",
                model.names[model.parents[jid]],
                f"{stiff.max():.4g}" if stiff.any() else "-",
                f"{robot.joint_damping[sl].max():.4g}" if robot.joint_damping[sl].any() else "-",
            ]
        )
    print(table(rows, ["joint", "type", "nq/nv", "parent", "stiffness", "damping"]))
    print()
    if robot.transmissions:
        print(
            table(
                [
                    [t.name, t.joint, f"{t.reduction:g}", t.kind.split("/")[-1]]
                    for t in robot.transmissions.values()
                ],
                ["transmission", "joint", "reduction", "type"],
            )
        )
    else:
        print("transmissions: none")
    print()
    if robot.drives:
        print(table([[j, repr(d)] for j, d in robot.drives.items()], ["drive", "model"]))
        print()
    elastic = robot.elastic_dofs()
    print(
        f"elastic DOFs: {elastic.size}"
        + (
            f" (flexible links: {', '.join(f.link for f in robot.flexible)})"
            if robot.flexible
            else ""
        )
    )
    print(f"total mass: {pin.computeTotalMass(model):.6g} kg")
    print(table(System(robot).describe(), ["system", "value"]))
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulate a URDF from rest (or a given q0) under gravity and save the trajectory."""
    from .simulation import simulate

    robot = _load(args)
    q0 = np.array(args.q0, dtype=float) if args.q0 else None
    traj = simulate(
        robot,
        args.duration,
        q0=q0,
        method=args.method,
        progress=not args.quiet,
        output_dt=args.output_dt,
    )
    path = traj.save(args.out)
    balance = traj.energy_balance()
    print(
        table(
            [
                ["samples", len(traj)],
                ["events", len(traj.events)],
                ["final time [s]", f"{traj.t[-1]:.6g}"],
                ["energy balance (relative)", f"{balance.max_relative():.2e}"],
                ["written", path],
            ],
            ["simulate", "value"],
        )
    )
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Cross-check pinext's formulations against Pinocchio on the user's robot."""
    from .check import check_model

    robot = _load(args)
    report = check_model(robot.model, seed=args.seed, samples=args.samples, name=robot.name)
    print(report.table())
    return 0 if report.passed else 1


def cmd_view(args: argparse.Namespace) -> int:
    """Play a saved trajectory in the browser, or export it as a self-contained HTML file."""
    from .visualization import view

    view(args.result, html=args.html)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the main demo and write its outputs to the output folder."""
    from .demo import run_demo

    return run_demo(Path(args.out), quick=args.quick)


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run a parameter study on Dask from a TOML file; Parquet dataset, plot and summary."""
    from .sweep.spec import run_spec

    return run_spec(
        args.spec,
        scheduler=args.scheduler,
        workers=args.workers,
        out=args.out,
        progress=not args.quiet,
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``pinext`` command."""
    from . import __version__

    parser = argparse.ArgumentParser(prog="pinext", description=__doc__)
    parser.add_argument("--version", action="version", version=f"pinext {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help=cmd_demo.__doc__)
    demo.add_argument("--out", default="out", help="output folder (default: ./out)")
    demo.add_argument("--quick", action="store_true", help="shorter runs (for tests)")
    demo.set_defaults(func=cmd_demo)

    for name, func in (("info", cmd_info), ("simulate", cmd_simulate), ("check", cmd_check)):
        p = sub.add_parser(name, help=func.__doc__)
        p.add_argument("urdf", help="the URDF file")
        p.add_argument(
            "--extensions", default=None, help="sidecar TOML file (default: <stem>.pinext.toml)"
        )
        p.set_defaults(func=func)
        if name == "simulate":
            p.add_argument("--duration", type=float, required=True, help="simulated time [s]")
            p.add_argument("--out", required=True, help="output .npz file")
            p.add_argument("--q0", type=float, nargs="+", help="initial configuration")
            p.add_argument("--method", default="DOP853", help="integration method")
            p.add_argument("--output-dt", type=float, default=None, help="sample period [s]")
            p.add_argument("--quiet", action="store_true", help="no progress bar")
        if name == "check":
            p.add_argument("--seed", type=int, default=0, help="random seed of the states")
            p.add_argument("--samples", type=int, default=5, help="number of random states")

    view = sub.add_parser("view", help=cmd_view.__doc__)
    view.add_argument("result", help="a .npz trajectory written by pinext")
    view.add_argument("--html", default=None, help="write a self-contained HTML file instead")
    view.set_defaults(func=cmd_view)

    sweep = sub.add_parser("sweep", help=cmd_sweep.__doc__)
    sweep.add_argument("spec", help="the study: ready study, robot, parameter grid (TOML)")
    sweep.add_argument("--scheduler", default=None, help="Dask scheduler address (tcp://host:8786)")
    sweep.add_argument("--workers", type=int, default=None, help="local worker processes")
    sweep.add_argument("--out", default=None, help="output folder (default: out/sweep_<spec>)")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    sweep.set_defaults(func=cmd_sweep)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pinext`` command."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PinextError as err:
        print(f"pinext: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
