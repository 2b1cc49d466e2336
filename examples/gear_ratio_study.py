"""Gear ratio × transmission stiffness of the six_dof_arm's elastic drives on Dask: heat map
of the peak tracking error (Vukobratović & Potkonjak §20.4.1, Fig. 20.10a)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pinext as px
from pinext.cli import table
from pinext.sweep.studies import drive_tracking

OUT = Path("out")
QUICK = {"ratio": [50.0, 100.0, 160.0], "stiffness": [5.0e3, 2.0e4, 8.0e4], "duration": [0.6]}
FULL = {
    "ratio": [30.0, 50.0, 80.0, 100.0, 120.0, 160.0, 200.0, 250.0],
    "stiffness": [2.5e3, 5.0e3, 1.0e4, 2.0e4, 4.0e4, 8.0e4],
    "duration": [1.5],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="8 × 6 grid of 1.5 s runs")
    parser.add_argument("--scheduler", default=None, help="Dask scheduler address")
    parser.add_argument("--workers", type=int, default=None, help="local worker processes")
    args = parser.parse_args()
    try:
        px.sweep.require()
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit(
            'this example needs the sweep extra: pip install "pinext[sweep]"'
        ) from None

    OUT.mkdir(exist_ok=True)
    df = px.sweep(
        drive_tracking,
        FULL if args.full else QUICK,
        client=args.scheduler,
        workers=args.workers,
        path=OUT / "gear_ratio_study",  # rerun: finished points are read back, not recomputed
    )
    rows = [
        [
            f"{r.ratio:g}",
            f"{r.stiffness:.3g}",
            f"{1e6 * r.peak_tracking_error:.2f}" if r.status == "ok" else r.error,
            f"{r.copper_loss:.2f}",
            f"{r.peak_voltage:.1f}",
        ]
        for r in df.itertuples()
    ]
    print(
        table(
            rows,
            ["ratio", "stiffness [N.m/rad]", "peak error [urad]", "copper [J]", "peak |u| [V]"],
        )
    )
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    px.sweep.plot(df, "ratio", "stiffness", hue="peak_tracking_error", ax=axes[0])
    px.sweep.plot(df, "ratio", "stiffness", hue="copper_loss", ax=axes[1])
    axes[0].set_title("peak tracking error [rad]")
    axes[1].set_title("copper losses [J]")
    axes[0].set_ylabel("transmission stiffness [N.m/rad]")
    fig.suptitle("six_dof_arm, DC motors behind elastic transmissions, feedforward + PD")
    fig.tight_layout()
    fig.savefig(OUT / "gear_ratio_study.png", dpi=120)
    print(f"wrote {OUT / 'gear_ratio_study.png'} and the dataset {OUT / 'gear_ratio_study'}/")


if __name__ == "__main__":
    main()
