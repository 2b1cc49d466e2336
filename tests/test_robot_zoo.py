"""Every URDF of example-robot-data, from its neutral pose and from 20 seeded random poses
inside its limits, 2 s under gravity with joint limits, ``<mimic>`` couplings and URDF joint
friction on, on both simulation paths (slow: ``PINEXT_SLOW=1`` or ``-m slow``).

Each run obeys :func:`tests.models.assert_sound_run` (limits hold to 1e-9 for every joint that
started inside, the energy balances to 1e-8, no repeated empty event). The only accepted
error is a named defect of the model, raised when it is loaded or assembled or its neutral
start is closed and checked (an invalid URDF, a non-positive inertia, massless links under a
coupling, links with mass and no rotational inertia that make the mass matrix singular); an
error during a run fails. When
robot has run, its row goes to ``docs/robot_zoo_rows.json`` (one per robot and path, so that
the paths may run in separate sessions: ``PINEXT_PATHS=compiled``); when the file holds every
robot on both paths, the table ``docs/robot_zoo_table.md`` (included by docs/robot_zoo.md) is
written from it, so that the page cannot drift from what the test saw.
"""

from __future__ import annotations

import json
import signal
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import PinextError
from pinext.robots import robots_dir
from pinext.robots.example_robot_data import ROBOTS
from pinext.simulation.arguments import as_initial_state
from tests.models import assert_sound_run, random_pose

FOLDER = robots_dir()
URDFS = sorted(FOLDER.rglob("*.urdf")) if FOLDER is not None else []
_STEMS = [p.stem for p in URDFS]
#: Each file's name in the rows and the table: its stem, with its package where two share one.
NAMES = {
    p: p.stem
    if _STEMS.count(p.stem) == 1
    else f"{p.relative_to(FOLDER).parts[0].removesuffix('_description')}/{p.stem}"
    for p in URDFS
}
FREE_FLYER = {str(FOLDER / rel) for rel, ff in ROBOTS.values() if ff} if FOLDER else set()
DURATION = 2.0  # [s]
POSES = 20  # seeded random poses per robot, besides the neutral one
GUARD = 600  # [s] per run: a hang guard, not a speed target
DOCS = Path(__file__).resolve().parents[1] / "docs"
TABLE, ROWS_FILE = DOCS / "robot_zoo_table.md", DOCS / "robot_zoo_rows.json"


def _rows() -> dict[str, dict]:
    return json.loads(ROWS_FILE.read_text()) if ROWS_FILE.is_file() else {}


def _keep(row: dict) -> None:
    rows = _rows()
    rows[f"{row['robot']}/{row['path']}"] = row
    ROWS_FILE.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")


class Hang(Exception):
    """A run went past the guard."""


def _guarded(step):
    def alarm(signum, frame):
        raise Hang(f"more than {GUARD} s")

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(GUARD)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return step()
    finally:
        signal.alarm(0)


def _model_defect(path: Path):
    """(robot, None), or (None, the pinext error that names the model's defect)."""
    root = "freeflyer" if str(path) in FREE_FLYER else "fixed"
    try:
        robot = _guarded(
            lambda: px.load_urdf(path, package_dirs=[str(path.parents[2])], root_joint=root)
        )
        system = _guarded(lambda: px.System(robot))
        # a singular mass matrix at the start (massless links under a coupling; links with
        # mass and no rotational inertia): found by closing the start and by simulate's checks
        _guarded(lambda: as_initial_state(system, px.close_loops(system, pin.neutral(robot.model))))
    except PinextError as err:
        assert str(err), "a pinext error must say what was wrong"
        return None, err
    return robot, None


@pytest.mark.slow
@pytest.mark.parametrize("path", URDFS, ids=[NAMES[p] for p in URDFS])
def test_every_robot_from_neutral_and_random_poses(path, simulation_path):
    robot, defect = _model_defect(path)
    row: dict = {"robot": NAMES[path], "path": simulation_path}
    if defect is not None:
        row["defect"] = f"{type(defect).__name__}: {str(defect).splitlines()[0]}"
        _keep(row)
        return
    model = robot.model
    row |= {"nq": model.nq, "nv": model.nv, "runs": 0, "events": 0, "wall": []}
    poses = [pin.neutral(model)] + [
        random_pose(model, np.random.default_rng(seed)) for seed in range(POSES)
    ]
    for k, q0 in enumerate(poses):
        system = px.System(robot)
        start = time.perf_counter()
        traj = _guarded(
            lambda system=system, q0=q0: px.simulate(
                system, DURATION, x0=px.close_loops(system, q0), progress=False
            )
        )
        row["wall"].append(time.perf_counter() - start)
        assert traj.t[-1] == pytest.approx(DURATION), f"pose {k}"
        assert_sound_run(model, traj)
        row["runs"] += 1
        row["events"] += len(traj.events)
    _keep(row)


@pytest.mark.slow
def test_the_zoo_table_is_written_from_the_rows():
    """After the robots (this test comes last in the module): the table from the rows, with
    the runs not recorded yet named under it."""
    rows = _rows()
    missing = [
        f"{NAMES[p]}/{w}"
        for p in URDFS
        for w in ("compiled", "python")
        if f"{NAMES[p]}/{w}" not in rows
    ]
    lines = [
        f"Every URDF of example-robot-data ({len(URDFS)} files): from `pin.neutral` and {POSES} "
        f"seeded random poses inside the limits, {DURATION:g} s under gravity, joint limits, "
        "`<mimic>` and URDF joint friction on, on the compiled and the Python path. Written by "
        "`tests/test_robot_zoo.py` (`PINEXT_SLOW=1`); wall times on the machine of that run.",
        "",
        "| URDF | nq / nv | compiled path | Python path |",
        "|---|---|---|---|",
    ]
    for path in URDFS:
        cells = []
        for which in ("compiled", "python"):
            row = rows.get(f"{NAMES[path]}/{which}")
            if row is None:
                cells.append("—")
            elif "defect" in row:
                cells.append(f"model defect: {row['defect'][:120]}")
            else:
                wall = np.array(row["wall"])
                cells.append(
                    f"{row['runs']} runs sound, {row['events']} events, median "
                    f"{np.median(wall):.2f} s, longest {wall.max():.1f} s"
                )
        first = rows.get(f"{NAMES[path]}/compiled") or rows.get(f"{NAMES[path]}/python") or {}
        size = f"{first['nq']} / {first['nv']}" if "nq" in first else "—"
        lines.append(f"| {NAMES[path]} | {size} | {cells[0]} | {cells[1]} |")
    defects = sorted({r["robot"] for r in rows.values() if "defect" in r})
    runs = sum(r.get("runs", 0) for r in rows.values())
    lines += [
        "",
        f"{runs} runs, all sound; {len(defects)} files stop with a named model defect"
        + (f" ({', '.join(defects)})." if defects else ".")
        + (
            f" Not recorded yet ({len(missing)} of {2 * len(URDFS)}): {', '.join(missing)}."
            if missing
            else ""
        ),
        "",
    ]
    TABLE.write_text("\n".join(lines), encoding="utf-8")
