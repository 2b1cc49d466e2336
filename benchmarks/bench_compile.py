"""What a new user waits for the compiled engine: CPU seconds of compilation on an empty cache.

Each scene kind runs in a new process, one after the other, all sharing one kernel cache that
starts empty (``NUMBA_CACHE_DIR`` in a folder of its own): the first row is the first
``simulate`` a new user runs, each later row what one more scene kind costs once the kernels
before it are cached. A last row runs the first scene again (everything cached: the load
alone). The CPU time is the child process's (user + system), so another job on the machine
lengthens the wall time but not the figure; the wall time is printed beside it.

The engine issue's targets (2 cores, empty cache): the first simulate ≤ 60 s of CPU, each
later new scene kind ≤ 5 s.

Run: ``python benchmarks/bench_compile.py`` (add ``--scenes pendulum,bounce`` for a subset,
``--markdown FILE`` to write the table).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The scenes, in the order a new user meets them: each a script run in a new process.
SCENES: dict[str, str] = {
    "six_dof_arm (first simulate)": """
import pinext as px
px.simulate(px.load_robot("six_dof_arm"), 0.3, progress=False)
""",
    "bounce on a table": """
import pinext as px
robot = px.load_robot("six_dof_arm")
table = px.plane("tool", (0.0, 0.0, 0.3))  # the tool falls onto a table 0.3 m high
system = px.System(robot, contacts=[px.Contact(table, restitution=0.5)])
px.simulate(system, 0.5, progress=False)
""",
    "Radau": """
import pinext as px
px.simulate(px.load_robot("six_dof_arm"), 0.3, method="Radau", progress=False)
""",
    "controller at 1 kHz": """
import pinext as px
system = px.System(px.load_robot("six_dof_arm"))
px.simulate(system, 0.3, control=lambda t, q, v, sensors: -0.1 * v, progress=False)
""",
    "time stepping": """
import pinext as px
px.simulate(px.load_robot("six_dof_arm"), 0.3, method="timestepping", dt=1e-3, progress=False)
""",
    "time stepping, elastic drives": """
import numpy as np
import pinext as px
from pinext.drives import harmonic_drives
joints = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]
system = px.System(px.load_robot("six_dof_arm"), drives=harmonic_drives(joints))
px.simulate(system, 0.3, method="timestepping", dt=1e-3, control=np.ones(6), progress=False)
""",
    "six_dof_arm again (cached)": """
import pinext as px
px.simulate(px.load_robot("six_dof_arm"), 0.3, progress=False)
""",
}


def run(script: str, cache: Path) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, error text or "") of ``script`` in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "NUMBA_CACHE_DIR": str(cache), "PINEXT_NO_COMPILED": "0"},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    error = "" if done.returncode == 0 else done.stderr.strip().splitlines()[-1]
    return cpu, wall, error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", help="comma-separated prefixes of the scenes to run")
    parser.add_argument("--markdown", help="write the table to this Markdown file")
    args = parser.parse_args()
    chosen = list(SCENES)
    if args.scenes:
        prefixes = [p.strip() for p in args.scenes.split(",")]
        chosen = [name for name in SCENES if any(name.startswith(p) for p in prefixes)]
    import numba

    import pinext

    lines = [
        f"Compilation on an empty cache (pinext {pinext.__version__}, Numba {numba.__version__}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the start, "
        f"{time.strftime('%Y-%m-%d')})",
        "",
        "| scene (in this order, one cache) | CPU [s] | wall [s] |",
        "|---|---:|---:|",
    ]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory(prefix="pinext-cache-") as cache:
        for name in chosen:
            cpu, wall, error = run(SCENES[name], Path(cache))
            row = f"| {name} | {cpu:.1f} | {wall:.1f} |" + (f" failed: {error}" if error else "")
            print(row, flush=True)
            lines.append(row)
    if args.markdown:
        Path(args.markdown).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
