"""Writing "NM" on the compliant massive table while pressing with 10 N (hybrid motion–force
control), with the force error plotted; ``--elastic`` adds the same through elastic drives."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def pen_path(configurations: np.ndarray) -> np.ndarray:
    """The pen tip's (x, y) [m] at each configuration."""
    import pinocchio as pin

    from pinext.tasks import FRAME, writing_arm

    model = writing_arm().model
    data, fid = model.createData(), model.getFrameId(FRAME)
    out = []
    for q in configurations:
        pin.framesForwardKinematics(model, data, q)
        out.append(data.oMf[fid].translation[:2].copy())
    return np.array(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "output",
        nargs="?",
        default="out/force_controlled_writing.png",
        help="the figure to write (PNG, SVG, PDF)",
    )
    parser.add_argument("--duration", type=float, default=2.8, help="simulated time [s]")
    parser.add_argument(
        "--elastic",
        action="store_true",
        help="also through DC motors and elastic transmissions (slower: ~2 min)",
    )
    args = parser.parse_args(argv)
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("this example plots with matplotlib: pip install matplotlib") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pinext.tasks import run_force_controlled_writing

    runs = {"rigid gear motors": run_force_controlled_writing("compliant", args.duration)}
    if args.elastic:
        runs["elastic transmissions"] = run_force_controlled_writing(
            "compliant", args.duration, elastic=True
        )
    fig, (ax_force, ax_error, ax_path) = plt.subplots(1, 3, figsize=(15, 4.2))
    for label, traj in runs.items():
        task = traj.meta["task"]
        force = traj.outputs["contact.force"][:, 0]
        error = force - task["force"]
        closed = traj.outputs["contact.closed"][:, 0] > 0
        ax_force.plot(traj.t, force, label=label)
        ax_error.semilogy(traj.t[closed], np.abs(error[closed]) + 1e-16, label=label)
        rest = traj.t >= task["t_end"] + 0.2
        strokes = (traj.t >= task["t_write"]) & (traj.t <= task["t_end"])
        print(
            f"{label}: contact at t = {traj.events[0].t:.4f} s; force error while writing "
            f"{np.abs(error[strokes]).max(initial=0):.3g} N, at rest "
            f"{np.abs(error[rest]).max(initial=0):.3g} N; "
            f"energy balance {traj.energy_balance().max_relative():.1e}; "
            f"{traj.meta['stats']['nfev']} evaluations in {traj.meta['stats']['wall_time']:.1f} s"
        )
        xy = pen_path(traj.q[strokes][::10])
        ax_path.plot(xy[:, 1], xy[:, 0], label=label)
    ax_force.set_xlabel("t [s]")
    ax_force.set_ylabel("normal force [N]")
    ax_force.legend()
    for t, name in ((task["t_write"], "first stroke"), (task["t_end"], "last stroke ends")):
        ax_error.axvline(t, color="gray", lw=0.5)
        ax_error.text(t, 1e-11, name, rotation=90, fontsize=7)
    ax_error.axhline(0.01 * task["force"], color="gray", lw=0.5, ls="--")
    ax_error.set_xlabel("t [s]")
    ax_error.set_ylabel("|force − 10 N| [N] in contact (1 % dashed)")
    ax_path.set_xlabel("y [m]")
    ax_path.set_ylabel("x [m]")
    ax_path.set_aspect("equal")
    ax_path.set_title("pen tip while writing")
    fig.tight_layout()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
