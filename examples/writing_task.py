"""The three-phase writing task (approach, impact, writing) against three tables."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pinext.tasks import run_writing_task  # noqa: E402


def main() -> None:
    out = Path("out")
    out.mkdir(exist_ok=True)
    fig, axes = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    for environment in ("rigid", "compliant", "spring"):
        traj = run_writing_task(environment, 3.0, output_dt=1e-3)
        traj.save(out / f"writing_{environment}.npz")
        impact = next(e for e in traj.events if e.name.startswith("contact"))
        print(
            f"{environment:9s} contact at t = {impact.t:.12f} s, "
            f"impulse {impact.info.get('impulse')}, events {len(traj.events)}, "
            f"energy balance {traj.energy_balance().max_relative():.2e}"
        )
        axes[0].plot(traj.t, traj.outputs["contact.force"][:, 0], label=environment)
        axes[1].plot(traj.t, traj.outputs["contact.gap"][:, 0] * 1e3, label=environment)
    axes[0].set_ylabel("normal force [N]")
    axes[1].set_ylabel("gap [mm]")
    axes[1].set_xlabel("t [s]")
    axes[0].legend()
    fig.savefig(out / "writing_task.png", dpi=120)
    print(f"wrote {out / 'writing_task.png'}")


if __name__ == "__main__":
    main()
