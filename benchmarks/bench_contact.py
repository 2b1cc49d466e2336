"""Benchmark: the writing task (3 s): wall time, events, RHS calls, impact-time error."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pinext.contact import run_writing_task  # noqa: E402
from tests._contact_models import impact_time_reference  # noqa: E402


def main() -> None:
    print(
        f"{'environment':12s} {'wall [s]':>9s} {'events':>7s} {'rhs calls':>10s} "
        f"{'rhs [us]':>9s} {'impact error [s]':>17s} {'energy residual':>16s}"
    )
    t_ref = None
    for environment in ("rigid", "compliant", "spring"):
        start = time.perf_counter()
        traj = run_writing_task(environment, 3.0)
        wall = time.perf_counter() - start
        stats = traj.meta["stats"]
        if t_ref is None:
            t_ref = impact_time_reference(traj)  # the approach is the same for all three
        error = traj.events[0].t - t_ref
        print(
            f"{environment:12s} {wall:9.2f} {len(traj.events):7d} {stats['nfev']:10d} "
            f"{1e6 * stats['wall_time'] / stats['nfev']:9.1f} {error:17.2e} "
            f"{traj.energy_balance().max_relative():16.1e}"
        )


if __name__ == "__main__":
    main()
