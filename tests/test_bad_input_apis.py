"""Bad input to the second-wave APIs (loops, prescribed motion, free bodies, time stepping,
planning, design and sweep specifications): each row is a mistake that used to hang, give a
deep traceback, silent garbage or a message naming the wrong cause, and now raises a pinext
error naming the argument, file or element at fault and what is valid.

A row is (id, make, expected exception, message fragment), as in ``test_bad_input.py``:
``make(tmp_path)`` produces the bad input and runs what the user ran. Rows that used to hang
run in a forked child with a deadline, so that a regression fails instead of hanging.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.cli import build_parser
from pinext.exceptions import (
    ConstraintError,
    FileFormatError,
    IntegrationError,
    InvalidParameter,
    OutputExists,
    PinextError,
    SingularConfiguration,
)
from pinext.planning import RestToRest, Spline3m, drive_requirements, jacobian_control

from .test_bad_input import _urdf

BOTH_PATHS = False  # the rows refuse before any path runs; hang rows pin the compiled one


def _cli(*argv: str) -> int:
    """Run a pinext command without main()'s error printing, so the exception shows."""
    args = build_parser().parse_args([str(a) for a in argv])
    return args.func(args)


# -- models -----------------------------------------------------------------------------------
def _arm() -> px.Robot:
    return px.load_robot("six_dof_arm")


def _planar() -> px.Robot:
    return px.load_robot("planar3r")


def _ball() -> px.Robot:
    """A ball on a vertical slider (one DOF, z), its centre frame 'ball'."""
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelPZ(), pin.SE3.Identity(), "z")
    model.appendBodyToJoint(j, pin.Inertia.FromSphere(1.0, 0.05), pin.SE3.Identity())
    model.addFrame(pin.Frame("ball", j, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    return px.Robot.from_model(model)


def _four_bar() -> tuple[px.System, np.ndarray]:
    urdf = Path(__file__).resolve().parents[1] / "examples" / "four_bar.urdf"
    system = px.System(px.load_urdf(urdf))
    return system, px.close_loops(system, np.array([0.0, 1.5, 1.5]))


def _box_system(**contact) -> px.System:
    """A free box with four corner contacts on the ground plane."""
    robot = px.free_body(pin.Model(), "box", 1.5, np.diag([0.006, 0.0125, 0.0162]))
    model = robot.model
    jid = model.getJointId("box_joint")
    for i, (sx, sy) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
        corner = pin.SE3(np.eye(3), np.array([0.15 * sx, 0.1 * sy, -0.05]))
        model.addFrame(pin.Frame(f"corner{i}", jid, 0, corner, pin.FrameType.OP_FRAME))
    robot = px.Robot.from_model(model)
    contacts = [px.Contact(px.plane(f"corner{i}"), **contact) for i in range(4)]
    return px.System(robot, contacts=contacts)


def _box_robot() -> px.Robot:
    """The box of :func:`_box_system` with its corners as the robot's ``[[contacts]]`` (the
    way a URDF's extension file gives them): time stepping takes them from there."""
    import dataclasses

    from pinext.urdf_extensions import Extensions

    robot = _box_system().robot
    contacts = [{"frame": f"corner{i}", "surface": "ground"} for i in range(4)]
    return dataclasses.replace(robot, extensions=Extensions(contacts=contacts))


def _box_q(z: float) -> np.ndarray:
    return np.array([0.0, 0.0, z, 0.0, 0.0, 0.0, 1.0])


def _crank(law, **options) -> px.System:
    system, _ = _four_bar()
    return px.System(system.robot, components=[px.Prescribed("crank_joint", law, **options)])


def _crank_run(law, **rates) -> px.Trajectory:
    """The four-bar's crank driven by ``law`` (numbers are offsets from the closed start)."""
    system, x0 = _four_bar()
    theta0 = float(x0[0])

    def position(t: float):
        value = law(t)
        return theta0 + value if isinstance(value, float) else value

    crank = px.Prescribed("crank_joint", position, **rates)
    return px.simulate(px.System(system.robot, components=[crank]), 0.01, x0=x0)


def _stretched_path(t: float):
    """A path for the planar arm's tip that starts at full stretch (x = 1.2 m)."""
    return np.array([1.2 - 0.1 * t, 0.0]), np.array([-0.1, 0.0]), np.zeros(2)


def _planar_tip() -> str:
    model = _planar().model
    return model.frames[model.nframes - 1].name


def _stretched_jacobian_control(**options):
    robot = _planar()
    return jacobian_control(
        robot, _planar_tip(), _stretched_path, np.zeros(robot.model.nq), **options
    )


def _drive_motion(dq=(0.5,) * 6, duration=1.0) -> RestToRest:
    return RestToRest(np.zeros(6), np.array(dq), duration)


# -- specification files ----------------------------------------------------------------------
ARM_URDF = px.robot_path("six_dof_arm")


def _design(
    tmp_path: Path,
    *,
    top: str = "",
    motion: str | None = "rest_to_rest",
    q0: str = "[0, 0, 0, 0, 0, 0]",
    dq: str = "[0.5, 0.5, 0.5, 0.5, 0.5, 0.5]",
    duration: str = "1.0",
    samples: str = "51",
    tail: str = "",
) -> Path:
    """A design specification of the six-DOF arm with one entry changed."""
    text = f'robot = "{ARM_URDF}"\nextensions = false\nsamples = {samples}\n{top}\n'
    if motion is not None:
        text += f'[motion]\nlaw = "{motion}"\nq0 = {q0}\ndq = {dq}\nduration = {duration}\n'
    path = tmp_path / "design.toml"
    path.write_text(text + tail + "\n")
    return path


def _sweep_spec(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "study.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


MODAL_GRID = 'study = "modal"\n[grid]\nsublinks = [2, 3]\n'


def _foreign_parquet(tmp_path: Path) -> Path:
    import pandas as pd

    folder = tmp_path / "results"
    folder.mkdir()
    pd.DataFrame({"a": [1.0, 2.0]}).to_parquet(folder / "part-0.parquet")
    return folder


def _square(x: float) -> dict[str, float]:
    return {"y": x * x}


class _LockedStudy:
    """A study holding a lock: it cannot be sent to a worker process."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()

    def __call__(self, x: float) -> dict[str, float]:
        with self.lock:
            return {"y": x}


Row = tuple[str, Callable[[Path], object], type[Exception], str]

NAN = float("nan")
INF = float("inf")

ROWS: list[Row] = [
    # -- loops ------------------------------------------------------------------------------
    (
        "hinge axis of two entries",
        lambda p: px.Loop("a", "b", "hinge", axis=[1, 0]),
        InvalidParameter,
        "axis",
    ),
    (
        "hinge axis nan",
        lambda p: px.Loop("a", "b", "hinge", axis=[NAN, 0, 1]),
        InvalidParameter,
        "axis",
    ),
    (
        "loop stabilization negative",
        lambda p: px.Loop("a", "b", stabilization=-50),
        InvalidParameter,
        "stabilization",
    ),
    (
        "loop stabilization nan",
        lambda p: px.Loop("a", "b", stabilization=NAN),
        InvalidParameter,
        "stabilization",
    ),
    (
        "loop placement 4x4 nan",
        lambda p: px.Loop("a", "b", placement=np.full((4, 4), NAN)),
        InvalidParameter,
        "placement",
    ),
    (
        "close_loops nan q",
        lambda p: px.close_loops(_four_bar()[0], np.full(3, NAN)),
        InvalidParameter,
        "q",
    ),
    (
        "close_loops wrong-size q",
        lambda p: px.close_loops(_four_bar()[0], np.zeros(5)),
        InvalidParameter,
        "shape (3,)",
    ),
    # -- assembled systems and free bodies --------------------------------------------------
    (
        "assemble placement as a list",
        lambda p: px.assemble({"a": _planar(), "b": _planar()}, placements={"b": [0, 1]}),
        InvalidParameter,
        "placements['b']",
    ),
    (
        "assemble placement nan",
        lambda p: px.assemble(
            {"a": _planar(), "b": _planar()},
            placements={"b": pin.SE3(np.eye(3), np.array([NAN, 0, 0]))},
        ),
        InvalidParameter,
        "placements['b']",
    ),
    (
        "assemble placement not a rotation",
        lambda p: px.assemble({"a": _planar(), "b": _planar()}, placements={"b": 2 * np.eye(4)}),
        InvalidParameter,
        "rotation",
    ),
    (
        "free_body placement as a list",
        lambda p: px.free_body(_planar(), "load", 1.0, placement=[0, 0, 1, 2]),
        InvalidParameter,
        "placement",
    ),
    (
        "free_body inertia breaks the triangle inequality",
        lambda p: px.free_body(_planar(), "load", 1.0, np.diag([1.0, 0.1, 0.1])),
        InvalidParameter,
        "triangle inequality",
    ),
    (
        "free_body mass inf",
        lambda p: px.free_body(_planar(), "load", INF),
        InvalidParameter,
        "mass",
    ),
    (
        "free_body mass text",
        lambda p: px.free_body(_planar(), "load", "1"),
        InvalidParameter,
        "mass",
    ),
    ("free_body empty name", lambda p: px.free_body(_planar(), "", 1.0), InvalidParameter, "name"),
    # -- prescribed motion --------------------------------------------------------------------
    (
        "prescribed velocity a number",
        lambda p: px.Prescribed("j", lambda t: t, velocity=1.0),
        InvalidParameter,
        "velocity",
    ),
    (
        "prescribed law returns text",
        lambda p: _crank_run(lambda t: "fast"),
        InvalidParameter,
        "prescribed:crank_joint",
    ),
    (
        "prescribed law returns a pair",
        lambda p: _crank_run(lambda t: (0.0, 1.0)),
        InvalidParameter,
        "prescribed:crank_joint",
    ),
    (
        "prescribed law returns 3 joint values",
        lambda p: _crank_run(lambda t: np.array([[0.1, 0.2, 0.3]] * 3)),
        InvalidParameter,
        "prescribed:crank_joint",
    ),
    (
        "prescribed law nan",
        lambda p: _crank_run(lambda t: NAN),
        InvalidParameter,
        "prescribed:crank_joint",
    ),
    (
        "two prescribed on one joint",
        lambda p: px.System(
            _four_bar()[0].robot,
            components=[
                px.Prescribed("crank_joint", lambda t: 0.0),
                px.Prescribed("crank_joint", lambda t: 1.0, name="again"),
            ],
        ),
        InvalidParameter,
        "crank_joint",
    ),
    # -- contacts -------------------------------------------------------------------------------
    (
        "plane normal nan",
        lambda p: px.plane("ball", normal=[NAN, 0, 1]),
        InvalidParameter,
        "normal",
    ),
    (
        "plane normal zero",
        lambda p: px.plane("ball", normal=[0, 0, 0]),
        InvalidParameter,
        "normal",
    ),
    (
        "rest_velocity nan",
        lambda p: px.Contact(px.plane("ball"), rest_velocity=NAN),
        InvalidParameter,
        "rest_velocity",
    ),
    (
        "friction text",
        lambda p: px.Contact(px.plane("ball"), friction="0.3"),
        InvalidParameter,
        "friction",
    ),
    (
        "friction inf",
        lambda p: px.Contact(px.plane("ball"), friction=INF),
        InvalidParameter,
        "friction",
    ),
    (
        "restitution nan",
        lambda p: px.Contact(px.plane("ball"), restitution=NAN),
        InvalidParameter,
        "restitution",
    ),
    (
        "contact stabilization negative",
        lambda p: px.Contact(px.plane("ball"), stabilization=-5),
        InvalidParameter,
        "stabilization",
    ),
    (
        "joint_friction yes",
        lambda p: px.System(_planar(), joint_friction="yes"),
        InvalidParameter,
        "joint_friction",
    ),
    # -- simulate's options ---------------------------------------------------------------------
    (
        "rtol 0 with Radau",
        lambda p: px.simulate(_planar(), 0.1, rtol=0, method="Radau"),
        InvalidParameter,
        "rtol",
    ),
    (
        "rtol 1",
        lambda p: px.simulate(_planar(), 0.1, rtol=1, atol=1),
        InvalidParameter,
        "rtol",
    ),
    (
        "method unknown",
        lambda p: px.simulate(_planar(), 0.1, method="rk4"),
        InvalidParameter,
        "method",
    ),
    (
        "time stepping dt larger than t_final",
        lambda p: px.simulate(_box_system(), 0.5, q0=_box_q(0.05), method="timestepping", dt=2),
        InvalidParameter,
        "dt",
    ),
    (
        "time stepping dt nan",
        lambda p: px.simulate(_box_system(), 0.5, q0=_box_q(0.05), method="timestepping", dt=NAN),
        InvalidParameter,
        "dt",
    ),
    # -- flexible robots: rigid-size vectors are expanded, others named -------------------------
    (
        "flexible q0 neither rigid nor full size",
        lambda p: px.simulate(px.load_robot("flexible_arm"), 0.01, q0=np.zeros(3)),
        InvalidParameter,
        "rigid model",
    ),
    # -- planning ---------------------------------------------------------------------------
    (
        "jacobian_control singular without damping",
        lambda p: _stretched_jacobian_control(t=np.linspace(0, 1, 5), rows=(0, 1)),
        SingularConfiguration,
        "singular configuration",
    ),
    (
        "jacobian_control rows empty",
        lambda p: _stretched_jacobian_control(t=np.linspace(0, 1, 5), rows=()),
        InvalidParameter,
        "rows",
    ),
    (
        "jacobian_control nan in t",
        lambda p: _stretched_jacobian_control(t=np.array([0.0, NAN, 1.0]), rows=(0, 1)),
        InvalidParameter,
        "t",
    ),
    (
        "jacobian_control nan in the path",
        lambda p: jacobian_control(
            _planar(),
            _planar_tip(),
            lambda t: (np.array([NAN, 0.0]), np.zeros(2), np.zeros(2)),
            np.array([0.1, 0.5, 0.5]),
            t=np.linspace(0, 1, 5),
            rows=(0, 1),
        ),
        InvalidParameter,
        "path",
    ),
    (
        "jacobian_control wrong-size q0",
        lambda p: jacobian_control(
            _planar(),
            _planar_tip(),
            _stretched_path,
            np.zeros(5),
            t=np.linspace(0, 1, 5),
            rows=(0, 1),
        ),
        InvalidParameter,
        "q0",
    ),
    (
        "drive_requirements nan motion",
        lambda p: drive_requirements(_arm(), _drive_motion(dq=(NAN,) * 6)),
        InvalidParameter,
        "dq",
    ),
    (
        "RestToRest duration inf",
        lambda p: RestToRest(np.zeros(2), np.ones(2), INF),
        InvalidParameter,
        "duration",
    ),
    (
        "drive_requirements free flyer",
        lambda p: drive_requirements(
            px.free_body(_planar(), "load", 1.0, np.eye(3) * 0.01),
            RestToRest(np.zeros(10), np.ones(10), 1.0),
        ),
        InvalidParameter,
        "free",
    ),
    (
        "drive_requirements section_modulus negative",
        lambda p: drive_requirements(
            px.load_robot("flexible_arm"),
            RestToRest(np.zeros(1), np.ones(1), 1.0),
            section_modulus={"bar": -1e-7},
        ),
        InvalidParameter,
        "section_modulus",
    ),
    (
        "drive_requirements samples text",
        lambda p: drive_requirements(_arm(), _drive_motion(), samples="many"),
        InvalidParameter,
        "samples",
    ),
    (
        "spline at nan",
        lambda p: Spline3m([0.0, 0.5, 1.0, 1.5], [[0.0], None, None, [1.0]])(NAN),
        InvalidParameter,
        "t",
    ),
    (
        "spline knot row of one value for two joints",
        lambda p: Spline3m([0.0, 0.5, 1.0, 1.5], [[0.0, 0.0], None, None, [1.0]]),
        InvalidParameter,
        "positions",
    ),
    # -- sweeps ---------------------------------------------------------------------------------
    ("sweep of an empty grid", lambda p: px.sweep(_square, {}), InvalidParameter, "no points"),
    (
        "latin_hypercube seed text",
        lambda p: px.sweep.latin_hypercube({"x": (0.0, 1.0)}, 4, seed="a"),
        InvalidParameter,
        "seed",
    ),
    (
        "sweep timeout negative",
        lambda p: px.sweep(_square, {"x": [1.0]}, timeout=-1),
        InvalidParameter,
        "timeout",
    ),
    (
        "sweep of a study that does not pickle",
        lambda p: px.sweep(_LockedStudy(), {"x": [1.0]}, progress=False),
        InvalidParameter,
        "pickle",
    ),
    (
        "sweep over a foreign parquet folder",
        lambda p: px.sweep(_square, {"x": [1.0]}, path=_foreign_parquet(p), progress=False),
        FileFormatError,
        "status",
    ),
    (
        "pinext sweep binary spec",
        lambda p: _cli("sweep", _sweep_spec(p, b"\xff\xfe\x00\x01 binary")),
        FileFormatError,
        "UTF-8",
    ),
    (
        "pinext sweep --out names a file",
        lambda p: _cli("sweep", _sweep_spec(p, MODAL_GRID), "--out", _urdf(p), "--quiet"),
        InvalidParameter,
        "--out",
    ),
    (
        "pinext sweep plot response unknown",
        lambda p: _cli(
            "sweep", _sweep_spec(p, MODAL_GRID + '[plot]\nresponse = "nope"\n'), "--quiet"
        ),
        FileFormatError,
        "plot.response",
    ),
    # -- design specifications ------------------------------------------------------------------
    (
        "design motion a word",
        lambda p: _cli("design", _design(p, top='motion = "fast"', motion=None)),
        FileFormatError,
        "motion",
    ),
    (
        "design q0 of wrong length",
        lambda p: _cli("design", _design(p, q0="[0, 0]")),
        FileFormatError,
        "motion.q0",
    ),
    (
        "design q0 text",
        lambda p: _cli("design", _design(p, q0='"zero"')),
        FileFormatError,
        "motion.q0",
    ),
    (
        "design dq of wrong length",
        lambda p: _cli("design", _design(p, dq="[0.5, 0.5]")),
        FileFormatError,
        "motion.dq",
    ),
    (
        "design duration inf",
        lambda p: _cli("design", _design(p, duration="inf")),
        FileFormatError,
        "motion.duration",
    ),
    (
        "design dq nan",
        lambda p: _cli("design", _design(p, dq="[nan, 0.5, 0.5, 0.5, 0.5, 0.5]")),
        FileFormatError,
        "motion.dq",
    ),
    (
        "design samples negative",
        lambda p: _cli("design", _design(p, samples="-5")),
        FileFormatError,
        "samples",
    ),
    (
        "design samples text",
        lambda p: _cli("design", _design(p, samples='"many"')),
        FileFormatError,
        "samples",
    ),
    (
        "design samples 1e8",
        lambda p: _cli("design", _design(p, samples="1e8")),
        FileFormatError,
        "samples",
    ),
    (
        "design html a folder",
        lambda p: _cli("design", _design(p, top=f'html = "{p}"')),
        FileFormatError,
        "html",
    ),
    (
        "design html overwrites a file it did not write",
        lambda p: _cli("design", _design(p, top=f'html = "{_urdf(p).name}"')),
        OutputExists,
        "--force",
    ),
    (
        "design gravity no",
        lambda p: _cli("design", _design(p, top='gravity = "no"')),
        FileFormatError,
        "gravity",
    ),
    (
        "design unknown key",
        lambda p: _cli("design", _design(p, top="sampels = 5")),
        FileFormatError,
        "sampels",
    ),
    (
        "design unknown motion key",
        lambda p: _cli("design", _design(p, tail="durration = 2")),
        FileFormatError,
        "durration",
    ),
    (
        "design winding temperature negative",
        lambda p: _cli("design", _design(p, tail="[limits.elbow]\nmax_winding_temperature = -100")),
        FileFormatError,
        "max_winding_temperature",
    ),
]


class Finished(PinextError):
    """Raised by a hang row whose input is valid: it finished (within the deadline)."""


def _finished(traj: px.Trajectory) -> None:
    raise Finished(f"finished at t = {traj.t[-1]:g} s")


#: Rows that used to hang (or take minutes); each runs in a forked child with this deadline [s]
#: (the refusals take well under a second, but a fresh machine first compiles the simulation
#: kernels, which takes minutes on two busy cores).
DEADLINE = float(os.environ.get("PINEXT_HANG_DEADLINE", "300"))

HANG_ROWS: list[Row] = [
    (
        "time stepping 5 000 000 000 steps",
        lambda p: px.simulate(_box_system(), 0.5, q0=_box_q(0.05), method="timestepping", dt=1e-10),
        InvalidParameter,
        "5 000 000 000 steps",
    ),
    (
        "2000 sublinks",
        lambda p: px.load_robot(
            "flexible_arm", flexible=[px.FlexibleLink("bar", 2000, 1e11, 1e-9)]
        ),
        InvalidParameter,
        "sublinks",
    ),
    (
        "pinext sweep 3e6 points",
        lambda p: _cli(
            "sweep",
            _sweep_spec(
                p,
                'study = "modal"\n[grid]\nsublinks = [2, 3, 4]\n'
                f"young_modulus = {np.linspace(1e10, 2e11, 1000).tolist()}\n"
                f"second_moment_of_area = {np.linspace(1e-10, 1e-8, 1000).tolist()}\n",
            ),
            "--quiet",
        ),
        InvalidParameter,
        "3 000 000 points",
    ),
    (
        "pinext sweep unreachable scheduler",
        lambda p: _cli(
            "sweep", _sweep_spec(p, MODAL_GRID), "--scheduler", "tcp://127.0.0.1:9", "--quiet"
        ),
        InvalidParameter,
        "scheduler",
    ),
    (
        "time stepping box below the floor",
        lambda p: px.simulate(_box_robot(), 0.1, q0=_box_q(-0.5), method="timestepping", dt=1e-3),
        InvalidParameter,
        "below",
    ),
    (
        "prescribed position step",
        lambda p: _crank_run(
            lambda t: 0.0 if t < 0.005 else 1.0,
            velocity=lambda t: 0.0,
            acceleration=lambda t: 0.0,
        ),
        InvalidParameter,
        "jump",
    ),
    (
        "prescribed position step, rates by central differences",
        lambda p: _crank_run(lambda t: 0.0 if t < 0.005 else 1.0),
        InvalidParameter,
        "prescribed:crank_joint: the position law jumps by 1 [rad or m] at t = 0.005 s",
    ),
    (
        "prescribed position step at the start",
        lambda p: _crank_run(lambda t: 0.0 if t < 0.0 else 1.0),
        InvalidParameter,
        "prescribed:crank_joint: the position law jumps by 1 [rad or m] at t = 0 s",
    ),
    (
        "prescribed law starts away from the closed start state",
        lambda p: _crank_run(lambda t: 1.0),
        ConstraintError,
        "'prescribed:crank_joint' sets crank_joint 1 away from the start state",
    ),
    (
        "3-D point contact on a 1-DOF ball",
        lambda p: px.simulate(
            px.System(_ball(), contacts=[px.Contact(px.point_contact("ball"))]), 0.1
        ),
        ConstraintError,
        "ball",
    ),
    (
        "rtol 1 and atol 1 on the compiled path",
        lambda p: px.simulate(_arm(), 2.0, q0=np.full(6, 0.5), rtol=1, atol=1),
        InvalidParameter,
        "rtol",
    ),
    (
        "elastic transmission 1e15 on the flexible arm",
        lambda p: _finished(px.simulate(_elastic_arm(1e15), 1.0)),
        Finished,
        "t = 1",
    ),
    (
        "young modulus 1e25 on the flexible arm",
        lambda p: px.simulate(
            px.load_robot("flexible_arm", flexible=[px.FlexibleLink("bar", 3, 1e25, 8e-10)]), 1.0
        ),
        InvalidParameter,
        "steps",
    ),
    (
        "a study that never returns",
        lambda p: _sweep_with_a_sleeping_point(p),
        InvalidParameter,
        "timeout",
    ),
]


def _elastic_arm(stiffness: float) -> px.Robot:
    motor = px.DCMotor(1.0, 0.05, 0.05, 1e-5)
    drive = px.Drive(motor, px.ElasticTransmission(50.0, stiffness))
    return px.load_robot("flexible_arm", drives={"hub": drive})


_SLEEPER = """
import time

import pinext as px


def sleeper(x):
    if x > 0:
        time.sleep(3600)
    return {"y": x}


if __name__ == "__main__":
    df = px.sweep(sleeper, {"x": [0.0, 1.0]}, timeout=2, progress=False)
    print(sorted(zip(df["x"], df["status"], strict=True)))
"""


def _sweep_with_a_sleeping_point(tmp_path: Path) -> None:
    """A sweep whose second point sleeps for an hour, in a fresh interpreter (a child forked
    from a test process that has run Dask before may inherit its locks held and deadlock);
    raises the row's expected error when that point is recorded as timed out."""
    script = tmp_path / "sleeper.py"
    script.write_text(_SLEEPER, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        timeout=0.9 * DEADLINE,  # killed before the forked child's deadline: no orphan
    )
    if "[(0.0, 'ok'), (1.0, 'timeout')]" in done.stdout:
        raise InvalidParameter("timeout recorded")
    raise AssertionError(f"statuses: {done.stdout}\n{done.stderr}")


@pytest.mark.parametrize(
    ("make", "error", "fragment"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_bad_input_raises_a_pinext_error_naming_it(tmp_path, make, error, fragment):
    assert issubclass(error, PinextError)
    with pytest.raises(error) as caught:
        make(tmp_path)
    assert fragment in str(caught.value), str(caught.value)


def _in_child(make: Callable[[Path], object], tmp_path: Path, deadline: float):
    """``make(tmp_path)`` in a forked child: (exception type, message), or None if it returned;
    the child is killed after ``deadline`` seconds (then the test fails, it does not hang)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        try:
            make(tmp_path)
            result = None
        except BaseException as err:  # noqa: BLE001 - reported to the parent
            result = (type(err), str(err), traceback.format_exc())
        with os.fdopen(write, "wb") as out:
            pickle.dump(result, out)
        os._exit(0)
    os.close(write)

    def expired(*_):
        os.kill(pid, signal.SIGKILL)

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, deadline)
    try:
        with os.fdopen(read, "rb") as inp:
            data = inp.read()
        os.waitpid(pid, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    if not data:
        pytest.fail(f"no answer within {deadline:g} s: the input still hangs")
    return pickle.loads(data)


@pytest.fixture(scope="module")
def compiled_kernels():
    """The compiled kernels the rows' runs use (the elastic drive's Radau included), made
    in this process before any deadline starts; the forked child inherits them. A deadline
    bounds a hang, not the one-time compilation, which took more than 300 s of a cold
    cache on a slow, loaded CI machine."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        px.simulate(_elastic_arm(1e15), 0.1, progress=False)


@pytest.mark.parametrize(
    ("make", "error", "fragment"),
    [row[1:] for row in HANG_ROWS],
    ids=[row[0] for row in HANG_ROWS],
)
def test_input_that_used_to_hang_is_refused_or_finishes(
    tmp_path, make, error, fragment, compiled_kernels
):
    answer = _in_child(make, tmp_path, DEADLINE)
    assert answer is not None, "no error raised"
    kind, message, trace = answer
    assert issubclass(kind, error), trace
    assert fragment in message, message


def test_damped_jacobian_control_held_at_a_singularity_warns():
    """Silent garbage before: from the stretched pose the damped solution stayed at q = 0 for
    the whole path; now the run says the frame ended off the path and why."""
    with pytest.warns(RuntimeWarning, match="off the path") as caught:
        motion = _stretched_jacobian_control(t=np.linspace(0, 1, 5), rows=(0, 1), damping=0.1)
    np.testing.assert_allclose(motion.q[-1], 0.0, atol=1e-9)  # the arm never moved
    assert "singular configuration" in str(caught[0].message)


def test_rigid_size_vectors_of_a_flexible_robot_are_expanded():
    """A flexible link adds DOFs; q0, v0 and a torque control of the rigid model's size are
    expanded with zero deflection (the elastic joints at rest, no torque on them)."""
    robot = px.load_robot("flexible_arm")
    assert (robot.rigid_model.nq, robot.model.nq) == (1, 6)
    rigid = px.simulate(robot, 0.01, q0=[0.3], v0=[1.0], control=[0.5], output_dt=0.005)
    full = px.simulate(
        robot,
        0.01,
        q0=np.r_[0.3, np.zeros(5)],
        v0=np.r_[1.0, np.zeros(5)],
        control=np.r_[0.5, np.zeros(5)],
        output_dt=0.005,
    )
    np.testing.assert_array_equal(rigid.x, full.x)
    law = px.simulate(robot, 0.01, q0=[0.3], control=lambda t, x: [0.5], output_dt=0.005)
    np.testing.assert_allclose(
        law.q[-1],
        px.simulate(robot, 0.01, q0=[0.3], control=[0.5], output_dt=0.005).q[-1],
        rtol=0,
        atol=1e-12,
    )


def test_placements_as_matrices_and_translations_are_accepted():
    """``assemble`` and ``free_body`` take a pin.SE3, a (4, 4) homogeneous matrix or a
    translation (3,) [m]; the three give the same model."""
    a, b = _planar(), _planar()
    shift = np.array([0.0, 0.5, 1.0])
    frames = []
    for where in (
        pin.SE3(np.eye(3), shift),
        np.block([[np.eye(3), shift[:, None]], [np.zeros((1, 3)), 1.0]]),
        shift,
    ):
        model = px.assemble({"a": a, "b": b}, placements={"b": where}).model
        frames.append(model.jointPlacements[model.getJointId("b/" + b.model.names[1])])
    for frame in frames[1:]:
        assert frame.isApprox(frames[0], 1e-15)
    body = px.free_body(a, "load", 1.0, placement=shift).model
    assert np.array_equal(body.jointPlacements[body.getJointId("load_joint")].translation, shift)


def test_constraint_residual_covers_every_closed_constraint():
    """Before: ``constraint_residual()`` raised ``KeyError: 'contact.residual'`` on a System
    with loops and no contact. Now it covers the loops (the four-bar's one loop here, so the
    default equals the loop's own), and a name without residual lists those with one."""
    system, x0 = _four_bar()
    traj = px.simulate(system, 0.05, x0=x0, output_dt=0.01)
    loops = [k[: -len(".residual")] for k in traj.outputs if k.endswith(".residual")]
    assert len(loops) == 1
    np.testing.assert_array_equal(traj.constraint_residual(), traj.constraint_residual(loops[0]))
    assert traj.constraint_residual().max() < 1e-8
    with pytest.raises(px.exceptions.NameNotFound, match=loops[0]):
        traj.constraint_residual("contact")


# -- issue 59: the newest APIs (task space, controllers, supports, drives, files, CLI) -------
def _ur5() -> px.Robot:
    try:
        return px.load_robot("ur5")
    except px.exceptions.RobotNotFound:
        pytest.skip("example-robot-data not installed (pip install '.[robots]')")


def _ur5_wrist_singular() -> np.ndarray:
    """The UR5 with wrist_2 = 0: wrist_1 and wrist_3 aligned, J M⁻¹ Jᵀ of rank 5."""
    return np.array([0.0, -1.0, 1.0, 0.3, 0.0, 0.2])


def _solo12_zero_quaternion() -> tuple[px.Robot, np.ndarray]:
    robot = px.load_robot("solo12")
    q = pin.neutral(robot.model)
    q[3:7] = 0.0
    return robot, q


def _arm_task(**options):
    robot = _arm()
    return px.task_space_dynamics(robot, np.full(6, 0.3), np.zeros(6), "pen_tip", **options)


def _arm_system() -> px.System:
    return px.System(_arm())


def _pose_target() -> pin.SE3:
    return pin.SE3(np.eye(3), np.array([0.4, 0.0, 0.3]))


def _impedance(target=None, stiffness=500.0, **options):
    from pinext.control import ImpedanceController

    target = _pose_target() if target is None else target
    return ImpedanceController(_arm_system(), "pen_tip", target, stiffness, **options)


def _cartesian(**changes):
    from pinext.control import CartesianPD, QuinticPath

    path = QuinticPath.of([0.4, 0.0, 0.3], [(0.0, 1.0, (0.0, 0.1, 0.0))])
    args = dict(path=path, rotation=np.eye(3), kp=[500.0] * 3, dp=[20.0] * 3, kr=10.0, dr=1.0)
    args.update(dq=0.5)
    args.update(changes)
    return CartesianPD(_arm_system(), "pen_tip", **args)


def _joint_pd(reference=None, **options):
    reference = np.zeros(6) if reference is None else reference
    return px.control.JointPD(_arm(), reference, kp=50.0, kd=5.0, **options)


def _elastic_six_dof() -> px.System:
    motor = px.DCMotor(1.0, 0.05, 0.05, 1e-5)
    drives = {
        name: px.Drive(motor, px.ElasticTransmission(50.0, 2e4)) for name in _arm().model.names[1:]
    }
    return px.System(_arm(), drives=drives)


def _hybrid(force=5.0, **options):
    from pinext.control import HybridForceMotionController

    return HybridForceMotionController(_arm_system(), "pen_tip", _pose_target(), force, **options)


def _short_trajectory() -> px.Trajectory:
    return px.simulate(_planar(), 0.01, output_dt=0.005, progress=False)


def _saved_trajectory(tmp_path: Path) -> Path:
    return _short_trajectory().save(tmp_path / "result.npz")


ISSUE_59_ROWS: list[Row] = [
    # -- task_space_dynamics --------------------------------------------------------------------
    (
        "task space nan q",
        lambda p: px.task_space_dynamics(_arm(), np.full(6, NAN), np.zeros(6), "pen_tip"),
        InvalidParameter,
        "q must be finite",
    ),
    ("task space damping text", lambda p: _arm_task(damping="0.1"), InvalidParameter, "damping"),
    (
        "task space threshold negative",
        lambda p: _arm_task(threshold=-1),
        InvalidParameter,
        "threshold",
    ),
    (
        "task space pseudo_inverse no",
        lambda p: _arm_task(pseudo_inverse="no"),
        InvalidParameter,
        "pseudo_inverse",
    ),
    (
        "task space data of another model",
        lambda p: _arm_task(data=_planar().model.createData()),
        InvalidParameter,
        "data belongs to another model",
    ),
    ("task space data not a Data", lambda p: _arm_task(data="data"), InvalidParameter, "data"),
    (
        "task space zero quaternion",
        lambda p: px.task_space_dynamics(*_solo12_zero_quaternion(), np.zeros(18), "FL_FOOT"),
        InvalidParameter,
        "quaternion",
    ),
    (
        "task space UR5 wrist singularity damping 0",
        lambda p: px.task_space_dynamics(
            _ur5(), _ur5_wrist_singular(), np.zeros(6), "tool0", damping=0.0
        ),
        SingularConfiguration,
        "ratio of the smallest to the largest singular value",
    ),
    # -- constraint_projection ------------------------------------------------------------------
    (
        "constraint_projection of a Robot",
        lambda p: px.constraint_projection(_four_bar()[0].robot, np.zeros(3), np.zeros(3)),
        InvalidParameter,
        "pinext.System",
    ),
    (
        "constraint_projection nan q",
        lambda p: px.constraint_projection(_four_bar()[0], np.full(3, NAN), np.zeros(3)),
        InvalidParameter,
        "q must be finite",
    ),
    # -- controllers ----------------------------------------------------------------------------
    (
        "impedance target returns None",
        lambda p: _impedance(target=lambda t: None),
        InvalidParameter,
        "target(t) must return",
    ),
    (
        "impedance target nan",
        lambda p: _impedance(target=pin.SE3(np.eye(3), np.array([NAN, 0.0, 0.3]))),
        InvalidParameter,
        "target",
    ),
    (
        "impedance target function nan twist",
        lambda p: _impedance(target=lambda t: (_pose_target(), np.full(6, NAN), np.zeros(6))),
        InvalidParameter,
        "twist",
    ),
    (
        "impedance stiffness nan",
        lambda p: _impedance(stiffness=NAN),
        InvalidParameter,
        "stiffness must be finite",
    ),
    (
        "impedance stiffness text",
        lambda p: _impedance(stiffness="stiff"),
        InvalidParameter,
        "stiffness",
    ),
    (
        "impedance damping_ratio text",
        lambda p: _impedance(damping_ratio="1"),
        InvalidParameter,
        "damping_ratio",
    ),
    (
        "impedance reference_damping negative",
        lambda p: _impedance(reference_damping=-1.0),
        InvalidParameter,
        "reference_damping",
    ),
    (
        "JointPD gravity_compensation no",
        lambda p: _joint_pd(gravity_compensation="no"),
        InvalidParameter,
        "gravity_compensation",
    ),
    (
        "JointPD schedule nan",
        lambda p: _joint_pd(px.Schedule([0.0, 1.0], [np.zeros(6), np.full(6, NAN)])),
        InvalidParameter,
        "Schedule values must be finite",
    ),
    (
        "JointPD reference function nan",
        lambda p: _joint_pd(lambda t: np.full(6, NAN)),
        InvalidParameter,
        "non-finite q",
    ),
    (
        "JointPD kp nan",
        lambda p: px.control.JointPD(_arm(), np.zeros(6), kp=NAN, kd=1.0),
        InvalidParameter,
        "kp",
    ),
    (
        "ComputedTorque feedforward_step negative",
        lambda p: px.control.ComputedTorque(
            _elastic_six_dof(), lambda t: np.zeros(6), 10.0, 1.0, feedforward_step=-1e-3
        ),
        InvalidParameter,
        "feedforward_step",
    ),
    (
        "CartesianPD rotation 2x2",
        lambda p: _cartesian(rotation=np.eye(2)),
        InvalidParameter,
        "rotation",
    ),
    (
        "CartesianPD rotation zeros",
        lambda p: _cartesian(rotation=np.zeros((3, 3))),
        InvalidParameter,
        "rotation",
    ),
    (
        "CartesianPD path a tuple",
        lambda p: _cartesian(path=([0.4, 0.0, 0.3], [])),
        InvalidParameter,
        "path must be a QuinticPath",
    ),
    ("CartesianPD kr nan", lambda p: _cartesian(kr=NAN), InvalidParameter, "kr"),
    ("CartesianPD dq negative", lambda p: _cartesian(dq=-50.0), InvalidParameter, "dq"),
    ("CartesianPD kp negative", lambda p: _cartesian(kp=[-1.0, 1.0, 1.0]), InvalidParameter, "kp"),
    (
        "QuinticPath delta nan",
        lambda p: px.control.QuinticPath.of([0.0, 0.0, 0.0], [(0.0, 1.0, (NAN, 0.0, 0.0))]),
        InvalidParameter,
        "delta",
    ),
    (
        "QuinticPath t1 nan",
        lambda p: px.control.QuinticPath.of([0.0, 0.0, 0.0], [(0.0, NAN, (0.1, 0.0, 0.0))]),
        InvalidParameter,
        "t1",
    ),
    (
        "hybrid force_damping 0",
        lambda p: _hybrid(force_damping=0.0),
        InvalidParameter,
        "HybridForceMotionController: force_damping",
    ),
    (
        "hybrid force 1e9",
        lambda p: _hybrid(1e9),
        InvalidParameter,
        "HybridForceMotionController: force = 1e+09",
    ),
    (
        "hybrid force text",
        lambda p: _hybrid("ten"),
        InvalidParameter,
        "force",
    ),
    # -- supports, contacts, drives -------------------------------------------------------------
    (
        "add_support xyz of two entries",
        lambda p: px.add_support(_arm(), {"stiffness": {"z": 1e5}, "xyz": [0, 0]}),
        InvalidParameter,
        "xyz",
    ),
    (
        "ElasticSupport z nan",
        lambda p: px.ElasticSupport({"z": NAN}),
        InvalidParameter,
        "stiffness['z']",
    ),
    (
        "ElasticSupport text",
        lambda p: px.ElasticSupport({"z": "stiff"}),
        InvalidParameter,
        "stiffness['z']",
    ),
    (
        "Contact tool_stiffness text",
        lambda p: px.Contact(px.plane("ball"), tool_stiffness="5e5"),
        InvalidParameter,
        "tool_stiffness",
    ),
    (
        "Contact tool_damping nan",
        lambda p: px.Contact(px.plane("ball"), tool_stiffness=5e5, tool_damping=NAN),
        InvalidParameter,
        "tool_damping",
    ),
    (
        "Gear restitution elastic",
        lambda p: px.Gear(50.0, backlash=0.01, restitution="elastic"),
        InvalidParameter,
        "restitution",
    ),
    (
        "Gear efficiency text",
        lambda p: px.Gear(50.0, efficiency="high"),
        InvalidParameter,
        "efficiency",
    ),
    (
        "torque_speed_envelope fast",
        lambda p: px.DCMotor(1.0, 0.05, 0.05, 1e-5, voltage_limit=24.0).torque_speed_envelope(
            "fast"
        ),
        InvalidParameter,
        "speed",
    ),
    (
        "torque_speed_envelope nan",
        lambda p: px.DCMotor(1.0, 0.05, 0.05, 1e-5, voltage_limit=24.0).torque_speed_envelope(
            [0.0, NAN]
        ),
        InvalidParameter,
        "speed",
    ),
    # -- simulate and trajectories --------------------------------------------------------------
    (
        "time stepping output_dt nan",
        lambda p: px.simulate(
            _box_system(), 0.5, q0=_box_q(0.05), method="timestepping", dt=1e-3, output_dt=NAN
        ),
        InvalidParameter,
        "output_dt",
    ),
    (
        "time stepping output_dt negative",
        lambda p: px.simulate(
            _box_system(), 0.5, q0=_box_q(0.05), method="timestepping", dt=1e-3, output_dt=-0.01
        ),
        InvalidParameter,
        "output_dt",
    ),
    (
        "control_period 1e-9",
        lambda p: px.simulate(_arm(), 1.0, control=_joint_pd(), control_period=1e-9),
        InvalidParameter,
        "shortest sensible period",
    ),
    (
        "control_period 1e-9 time stepping",
        lambda p: px.simulate(
            _box_system(),
            0.5,
            q0=_box_q(0.05),
            method="timestepping",
            dt=1e-3,
            control=lambda t, x: np.zeros(6),
            control_period=1e-9,
        ),
        InvalidParameter,
        "control_period",
    ),
    (
        "continuous control turns nan",
        lambda p: px.simulate(
            _planar(),
            0.05,
            control=lambda t, x: np.zeros(3) if t < 0.01 else np.full(3, NAN),
            progress=False,
        ),
        IntegrationError,
        "control(t, x)",
    ),
    (
        "Trajectory.save to a folder",
        lambda p: _short_trajectory().save(p),
        InvalidParameter,
        "is a folder",
    ),
    (
        "pinext view --html a folder",
        lambda p: _cli("view", _saved_trajectory(p), "--html", p),
        InvalidParameter,
        "--html",
    ),
    (
        "pinext simulate --out a folder",
        lambda p: _cli("simulate", "planar3r", "--duration", "0.01", "--out", p, "--quiet"),
        InvalidParameter,
        "--out",
    ),
    (
        "pinext sweep sublinks text",
        lambda p: _cli(
            "sweep", _sweep_spec(p, 'study = "modal"\n[grid]\nsublinks = ["two"]\n'), "--quiet"
        ),
        FileFormatError,
        "grid.sublinks",
    ),
    (
        "pinext sweep impact speed nan",
        lambda p: _cli(
            "sweep", _sweep_spec(p, 'study = "impact"\n[grid]\nspeed = [nan, 0.5]\n'), "--quiet"
        ),
        FileFormatError,
        "grid.speed",
    ),
    (
        "impact study speed nan",
        lambda p: px.sweep.studies.impact(speed=NAN),
        InvalidParameter,
        "speed must be a finite number",
    ),
    (
        "modal study sublinks text",
        lambda p: px.sweep.studies.modal(sublinks="two"),
        InvalidParameter,
        "sublinks must be an integer",
    ),
    # -- planning -------------------------------------------------------------------------------
    (
        "jacobian_control gain negative",
        lambda p: _stretched_jacobian_control(t=np.linspace(0, 1, 5), rows=(0, 1), gain=-100),
        InvalidParameter,
        "gain",
    ),
    (
        "jacobian_control path turns nan",
        lambda p: jacobian_control(
            _planar(),
            _planar_tip(),
            lambda t: (np.array([0.8 if t < 0.5 else NAN, 0.3]), np.zeros(2), np.zeros(2)),
            np.array([0.1, 0.5, 0.5]),
            t=np.linspace(0, 1, 5),
            rows=(0, 1),
            damping=0.1,
        ),
        InvalidParameter,
        "path(",
    ),
    (
        "drive_requirements nan sample",
        lambda p: drive_requirements(
            _arm(), (np.linspace(0, 1, 5), np.r_[np.zeros((4, 6)), np.full((1, 6), NAN)])
        ),
        InvalidParameter,
        "not finite at t = 1 s",
    ),
    # -- prescribed laws ------------------------------------------------------------------------
    (
        "prescribed law returns an array of three",
        lambda p: _crank_run(lambda t: np.zeros(3)),
        InvalidParameter,
        "ambiguous",
    ),
    (
        "prescribed law returns a list of three",
        lambda p: _crank_run(lambda t: [0.3, 7.0, -2.0]),
        InvalidParameter,
        "ambiguous",
    ),
    (
        "prescribed law holds q with a velocity",
        lambda p: _crank_run(lambda t: (_four_bar()[1][0] + 0.0 * t, 7.0, -2.0)),
        InvalidParameter,
        "is not the rate of its position",
    ),
]


@pytest.mark.parametrize(
    ("make", "error", "fragment"),
    [row[1:] for row in ISSUE_59_ROWS],
    ids=[row[0] for row in ISSUE_59_ROWS],
)
def test_bad_input_to_the_newest_apis_names_it(tmp_path, make, error, fragment):
    assert issubclass(error, PinextError)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error) as caught:
            make(tmp_path)
    assert fragment in str(caught.value), str(caught.value)


def test_trajectory_save_writes_the_exact_path_given(tmp_path):
    """Before: ``save("x.txt")`` wrote ``x.txt.npz`` and returned a path that did not exist.
    Now the archive is written under the name given, whatever its suffix, and loads back."""
    traj = _short_trajectory()
    path = traj.save(tmp_path / "run.txt")
    assert path == tmp_path / "run.txt" and path.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.txt"]
    back = px.Trajectory.load(path)
    np.testing.assert_array_equal(back.x, traj.x)


def test_cli_simulate_names_the_file_it_wrote(tmp_path, capsys):
    """Before: ``--out o.txt`` printed "written o.txt" and wrote ``o.txt.npz``."""
    out = tmp_path / "o.txt"
    assert _cli("simulate", "planar3r", "--duration", "0.01", "--out", out, "--quiet") == 0
    assert out.is_file() and not (tmp_path / "o.txt.npz").exists()
    assert str(out) in capsys.readouterr().out


_UNGUARDED = """
import pinext as px


def square(x):
    return {"y": x * x}


df = px.sweep(square, {"x": [1.0, 2.0]}, progress=False, workers=1)
"""


def test_a_sweep_outside_a_main_guard_is_refused_before_any_worker_starts(tmp_path):
    """Before: six Dask tracebacks ending in "Nanny failed to start". Now the script's
    call is refused in the parent, naming the script's line and the fix."""
    script = tmp_path / "study.py"
    script.write_text(_UNGUARDED, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode != 0
    assert f"{script}:9" in done.stderr and 'if __name__ == "__main__":' in done.stderr
    assert "InvalidParameter" in done.stderr and "Nanny" not in done.stderr


def test_prescribed_law_with_consistent_rates_runs():
    """The tuple (q, qd, qdd) of a law whose rates are those of its position is accepted (the
    rate check of the first evaluation lets it through), and the crank follows it."""
    system, x0 = _four_bar()
    theta0 = float(x0[0])

    def law(t: float) -> tuple[float, float, float]:
        return theta0 + 0.5 * 3.0 * t * t, 3.0 * t, 3.0

    crank = px.Prescribed("crank_joint", law)
    traj = px.simulate(px.System(system.robot, components=[crank]), 0.01, x0=x0, output_dt=0.01)
    assert abs(traj.q[-1, 0] - law(0.01)[0]) < 1e-9
