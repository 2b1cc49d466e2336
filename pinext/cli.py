"""The ``pinext`` command: demo, info, simulate, check, view, design, optimize, sweep."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np

from ._format import table
from .exceptions import InvalidParameter, PinextError
from .validation import real


def _looks_like_path(text: str) -> bool:
    suffix = Path(text).suffix.lower()
    return Path(text).exists() or "/" in text or "\\" in text or suffix in (".urdf", ".xml")


def _load(args: argparse.Namespace):
    """The robot of a command: a URDF path, or an example-robot-data name (``ur5``)."""
    from .robot import load_urdf
    from .robots import load_robot

    options = dict(package_dirs=args.package_dirs, root_joint=args.root_joint)
    if _looks_like_path(args.robot):
        return load_urdf(args.robot, extensions=args.extensions, **options)
    return load_robot(args.robot, extensions=args.extensions, **options)


def _torques(robot, system, pairs: Sequence[str]) -> np.ndarray | None:
    """Constant joint torques from ``JOINT=VALUE`` pairs (other joints: zero)."""
    from .exceptions import InvalidParameter, NameNotFound

    if not pairs:
        return None
    if not system.torque_inputs:
        raise InvalidParameter(
            f"--torque sets joint torques, but robot '{robot.name}' has drives "
            f"({', '.join(system.drives)}) whose inputs are voltages; simulate it in Python "
            "with control=..."
        )
    tau = np.zeros(system.n_inputs)
    model = robot.model
    joints = [n for j, n in enumerate(model.names) if j > 0 and model.joints[j].nv > 0]
    for pair in pairs:
        joint, sep, text = pair.partition("=")
        if not sep:
            raise InvalidParameter(f"--torque expects JOINT=VALUE [N.m or N], got {pair!r}")
        if joint not in joints:
            raise NameNotFound("joint", joint, joints)
        jid = model.getJointId(joint)
        try:
            values = [float(w) for w in text.replace(",", " ").split()]
        except ValueError:
            values = []
        nv = model.joints[jid].nv
        if len(values) != nv:
            raise InvalidParameter(
                f"--torque {joint}= expects {nv} number(s) [N.m or N], got {text!r}"
            )
        start = model.joints[jid].idx_v
        tau[start : start + nv] = values
    return tau


def cmd_info(args: argparse.Namespace) -> int:
    """Print joints, transmissions, elastic DOFs, drives and the state layout of a URDF."""
    import pinocchio as pin

    from .simulation import System

    robot = _load(args)
    model = robot.model
    print(f"robot {model.name}: {robot.path or args.robot}")
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
    system = System(robot)
    print(table(system.describe(), ["system", "value"]))
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulate a robot from rest (or a given q0) under gravity and constant torques; save the
    trajectory (.npz for pinext view, .csv for a spreadsheet)."""
    from .simulation import System, simulate

    out = _output_path("--out", args.out, "result.npz")
    # the flags as the user typed them (simulate would name its own arguments, t_final and
    # output_dt), checked before the robot is loaded
    duration = real("--duration", args.duration, unit="[s] (simulated time)", low=0, strict=True)
    if args.output_dt is not None:  # (omitted: the solver's steps)
        real("--output-dt", args.output_dt, unit="[s] (sample period)", low=0, strict=True)
    robot = _load(args)
    system = System(robot)
    traj = simulate(
        system,
        duration,
        q0=args.q0,
        control=_torques(robot, system, args.torque),
        method=args.method,
        progress=not args.quiet,
        output_dt=args.output_dt,
    )
    if out.suffix.lower() == ".csv":
        path = traj.to_csv(out)
    else:  # written under the name given (a name without suffix gets .npz)
        path = traj.save(out if out.suffix else out.with_name(f"{out.name}.npz"))
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

    if args.html is not None:
        _output_path("--html", args.html, "replay.html")
    view(args.result, html=args.html, package_dirs=args.package_dirs)
    return 0


def _output_path(option: str, value: str, example: str) -> Path:
    """An output file named on the command line, refused before any work when it names an
    existing folder."""
    path = Path(value)
    if path.is_dir():
        raise InvalidParameter(
            f"{option} {value!r} is a folder; give a file name, e.g. {option} "
            f"{str(path / example)!r}"
        )
    return path


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
        force=args.force,
    )


def cmd_design(args: argparse.Namespace) -> int:
    """Check drives and links of a design specification (TOML); write an HTML report."""
    from .planning.design import run_design

    result = run_design(args.spec, html=args.html, force=args.force)
    print(table(result.report.summary(), result.report.SUMMARY_HEADER))
    print()
    print(result.check.table())
    print(f"\nreport: {result.html}")
    return 0 if result.check.passed else 1


def cmd_optimize(args: argparse.Namespace) -> int:
    """Optimal design of a specification with [variables] and [objective] (TOML)."""
    from .planning.design import output_path
    from .planning.optimize import optimize
    from .planning.optimize_report import write_design_spec, write_optimize_html

    spec = Path(args.spec)
    html = output_path(
        Path(args.html or f"out/{spec.stem}_optimal.html"), "--html", spec, force=args.force
    )
    client = None
    if args.scheduler:
        from .sweep import require

        require()
        from distributed import Client

        client = Client(args.scheduler)
    try:
        result = optimize(
            spec, seed=args.seed, workers=args.workers, client=client, path=args.store
        )
    finally:
        if client is not None:
            client.close()
    print(result.table())
    from .visualization import export_html

    print(f"\nreport: {write_optimize_html(result, html, playback=export_html)}")
    if args.write_spec:
        print(f"design specification: {write_design_spec(result, args.write_spec)}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with suggestions: a misspelled command, option or choice gets the closest
    valid ones (``--durration`` -> did you mean ``--duration``?)."""

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        # A misspelled option is reported before a missing required one (argparse's order is
        # the reverse: "--durration 1" would say "--duration is required").
        words = sys.argv[1:] if args is None else list(args)
        if not any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            valid = {s for a in self._actions for s in a.option_strings}
            for word in words:
                if word == "--":
                    break
                if word.startswith("--") and word.split("=")[0] not in valid:
                    self.error(f"unrecognized arguments: {word}")
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        valid_options = [s for a in self._actions for s in a.option_strings]
        hint = ""
        wrong = re.search(r"unrecognized arguments: (.*)", message)
        choice = re.search(r"invalid choice: '?([^' ]*)'? \(choose from (.*)\)", message)
        if wrong:
            guesses = []
            for word in wrong.group(1).split():
                flag = word.split("=")[0]
                if flag.startswith("-"):
                    guesses += difflib.get_close_matches(flag, valid_options, n=1, cutoff=0.6)
            hint = f" (did you mean {', '.join(guesses)}?)" if guesses else ""
        elif choice:
            options = [c.strip(" '\"") for c in choice.group(2).split(",")]
            guesses = difflib.get_close_matches(choice.group(1), options, n=2, cutoff=0.5)
            hint = f" (did you mean {' or '.join(guesses)}?)" if guesses else ""
        super().error(message + hint)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``pinext`` command."""
    from . import __version__

    parser = _Parser(prog="pinext", description=__doc__, allow_abbrev=False)
    parser.add_argument("--version", action="version", version=f"pinext {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = sub.add_parser("demo", help=cmd_demo.__doc__, allow_abbrev=False)
    demo.add_argument("--out", default="out", help="output folder (default: ./out)")
    demo.add_argument("--quick", action="store_true", help="shorter runs (for tests)")
    demo.set_defaults(func=cmd_demo)

    from .simulation.simulate import METHODS
    from .urdf_extensions import ROOT_JOINTS

    for name, func in (("info", cmd_info), ("simulate", cmd_simulate), ("check", cmd_check)):
        p = sub.add_parser(name, help=func.__doc__, allow_abbrev=False)
        p.add_argument(
            "robot", help="a URDF file, or an example-robot-data name (ur5, panda, talos, ...)"
        )
        p.add_argument(
            "--extensions", default=None, help="sidecar TOML file (default: <stem>.pinext.toml)"
        )
        p.add_argument(
            "--package-dirs", nargs="+", default=None, help="folders of package:// meshes"
        )
        p.add_argument(
            "--root-joint",
            choices=ROOT_JOINTS,
            default=None,
            help="joint between world and root link (default: the file's, else fixed)",
        )
        p.set_defaults(func=func)
        if name == "simulate":
            p.add_argument("--duration", type=float, required=True, help="simulated time [s]")
            p.add_argument("--out", required=True, help="output file: .npz, or .csv for a table")
            p.add_argument("--q0", type=float, nargs="+", help="initial configuration")
            p.add_argument(
                "--torque",
                action="append",
                default=[],
                metavar="JOINT=VALUE",
                help="constant joint torque [N.m or N] (repeat for several joints)",
            )
            p.add_argument(
                "--method",
                default="DOP853",
                choices=(*METHODS, "momentum"),
                help="integration method (Radau for stiff models)",
            )
            p.add_argument("--output-dt", type=float, default=None, help="sample period [s]")
            p.add_argument("--quiet", action="store_true", help="no progress bar")
        if name == "check":
            p.add_argument("--seed", type=int, default=0, help="random seed of the states")
            p.add_argument("--samples", type=int, default=5, help="number of random states")

    view = sub.add_parser("view", help=cmd_view.__doc__, allow_abbrev=False)
    view.add_argument("result", help="a .npz trajectory written by pinext")
    view.add_argument("--html", default=None, help="write a self-contained HTML file instead")
    view.add_argument(
        "--package-dirs",
        nargs="+",
        default=None,
        help="folders of package:// meshes (searched before $ROS_PACKAGE_PATH and "
        "example-robot-data)",
    )
    view.set_defaults(func=cmd_view)

    design = sub.add_parser("design", help=cmd_design.__doc__)
    design.add_argument("spec", help="the design specification (TOML)")
    design.add_argument("--html", default=None, help="HTML report (default: from the spec)")
    design.add_argument(
        "--force", action="store_true", help="overwrite a file that is not a pinext report"
    )
    design.set_defaults(func=cmd_design)
    opt = sub.add_parser("optimize", help=cmd_optimize.__doc__)
    opt.add_argument("spec", help="a design specification with [variables], [objective] (TOML)")
    opt.add_argument("--html", default=None, help="report (default: out/<spec>_optimal.html)")
    opt.add_argument("--write-spec", default=None, help="write the chosen design as a spec")
    opt.add_argument("--store", default=None, help="evaluations file (JSON lines): resumable")
    opt.add_argument("--seed", type=int, default=0, help="seed of differential evolution")
    opt.add_argument("--workers", type=int, default=None, help="local worker processes")
    opt.add_argument("--scheduler", default=None, help="Dask scheduler address")
    opt.add_argument("--force", action="store_true", help="overwrite a non-pinext file")
    opt.set_defaults(func=cmd_optimize)
    sweep = sub.add_parser("sweep", help=cmd_sweep.__doc__)
    sweep.add_argument("spec", help="the study: ready study, robot, parameter grid (TOML)")
    sweep.add_argument("--scheduler", default=None, help="Dask scheduler address (tcp://host:8786)")
    sweep.add_argument("--workers", type=int, default=None, help="local worker processes")
    sweep.add_argument("--out", default=None, help="output folder (default: out/sweep_<spec>)")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    sweep.add_argument(
        "--force", action="store_true", help="run a study of more than 100 000 points"
    )
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
