"""Bad input from real users: each row is a mistake that used to give garbage or a deep
traceback and now raises a pinext error naming the argument, file or element at fault.

A row is (id, make, expected exception, message fragment): ``make(tmp_path)`` produces the bad
input and runs what the user ran.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import pinext as px
from pinext.cli import build_parser
from pinext.exceptions import (
    ExtensionError,
    FileFormatError,
    IntegrationError,
    InvalidParameter,
    PinextError,
)
from tests.conftest import pendulum_urdf

MOTOR = 'torque_constant="0.05" back_emf_constant="0.05" rotor_inertia="1e-5"'


def _urdf(tmp_path: Path, text: str | None = None, name: str = "arm.urdf") -> Path:
    path = tmp_path / name
    path.write_text(text if text is not None else pendulum_urdf(n=2))
    return path


def _robot(tmp_path: Path) -> px.Robot:
    return px.load_urdf(_urdf(tmp_path))


def _with_block(tmp_path: Path, block: str) -> Path:
    return _urdf(
        tmp_path, pendulum_urdf(n=2).replace("</robot>", f"<pinext>{block}</pinext></robot>")
    )


def _replace_first(tmp_path: Path, old: str, new: str) -> Path:
    text = pendulum_urdf(n=2)
    assert old in text
    return _urdf(tmp_path, text.replace(old, new, 1))


def _sidecar(tmp_path: Path, content: str | bytes) -> Path:
    path = _urdf(tmp_path)
    sidecar = path.with_name(path.stem + ".pinext.toml")
    if isinstance(content, bytes):
        sidecar.write_bytes(content)
    else:
        sidecar.write_text(content)
    return path


def _massless_leaf(tmp_path: Path) -> px.Robot:
    """The two-link pendulum with a massless last link: joint j1 moves nothing."""
    text = pendulum_urdf(n=2)
    start = text.rindex("<inertial>")
    stop = text.index("</inertial>", start) + len("</inertial>")
    zero = 'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"'
    text = text[:start] + f'<inertial><mass value="0"/><inertia {zero}/></inertial>' + text[stop:]
    with pytest.warns(RuntimeWarning, match="joint 'j1' moves nothing"):
        return px.load_urdf(_urdf(tmp_path, text))


def _point_mass_on_three_axes(tmp_path: Path) -> px.Robot:
    """Three revolute joints about one point turning a point mass (mass, no rotational
    inertia) off every axis: it moves in two directions, not three, so M is singular while
    every diagonal entry is positive."""
    zero = 'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"'
    links = "".join(
        f'<link name="l{i}"><inertial><origin xyz="0.1 0.2 0.3"/><mass value="{mass}"/>'
        f"<inertia {zero}/></inertial></link>"
        for i, mass in ((1, 0), (2, 0), (3, 1))
    )
    joints = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
        f'<axis xyz="{axis}"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>'
        for i, parent, axis in ((1, "base", "1 0 0"), (2, "l1", "0 1 0"), (3, "l2", "0 0 1"))
    )
    text = f'<robot name="point"><link name="base"/>{links}{joints}</robot>'
    with pytest.warns(RuntimeWarning, match="mass matrix is singular"):
        return px.load_urdf(_urdf(tmp_path, text))


def _cli(*argv: str) -> int:
    """Run a pinext command without main()'s error printing, so the exception shows."""
    args = build_parser().parse_args([str(a) for a in argv])
    return args.func(args)


def _saved(tmp_path: Path) -> Path:
    return px.simulate(_robot(tmp_path), 0.05, output_dt=0.01).save(tmp_path / "run.npz")


def _rewritten(tmp_path: Path, header: dict | None = None, **arrays) -> Path:
    """A saved trajectory with some arrays or header keys replaced."""
    path = _saved(tmp_path)
    with np.load(path) as npz:
        content = {k: npz[k] for k in npz.files}
    old = json.loads(str(content["header"]))
    old.update(header or {})
    content.update(arrays, header=np.array(json.dumps(old)))
    np.savez(path, **content)
    return path


def _first_samples(tmp_path: Path) -> dict:
    with np.load(_saved(tmp_path)) as npz:
        return {k: npz[k] for k in ("t", "x")}


def _nan_in_x(tmp_path: Path) -> Path:
    x = _first_samples(tmp_path)["x"].copy()
    x[2, 1] = np.nan
    return _rewritten(tmp_path, x=x)


def _short_t(tmp_path: Path) -> Path:
    return _rewritten(tmp_path, t=_first_samples(tmp_path)["t"][:-1])


def _layout_outside(tmp_path: Path) -> Path:
    layout = {"q": [0, 2], "v": [2, 40], "input_work": [4, 5], "dissipated_energy": [5, 6]}
    return _rewritten(tmp_path, header={"layout": layout})


def _header_without(tmp_path: Path, key: str) -> Path:
    path = _saved(tmp_path)
    with np.load(path) as npz:
        content = {k: npz[k] for k in npz.files}
    header = json.loads(str(content["header"]))
    del header[key]
    content["header"] = np.array(json.dumps(header))
    np.savez(path, **content)
    return path


def _truncated(tmp_path: Path) -> Path:
    path = _saved(tmp_path)
    path.write_bytes(path.read_bytes()[:300])
    return path


def _empty_npz(tmp_path: Path) -> Path:
    path = tmp_path / "empty.npz"
    np.savez(path)
    return path


def _npy(tmp_path: Path) -> Path:
    path = tmp_path / "array.npy"
    np.save(path, np.zeros(3))
    return path


Row = tuple[str, Callable[[Path], object], type[Exception], str]

ROWS: list[Row] = [
    # -- simulate's arguments ---------------------------------------------------------------
    ("t_final inf", lambda p: px.simulate(_robot(p), float("inf")), InvalidParameter, "t_final"),
    ("t_final text", lambda p: px.simulate(_robot(p), "1"), InvalidParameter, "t_final"),
    ("atol negative", lambda p: px.simulate(_robot(p), 0.1, atol=-1), InvalidParameter, "atol"),
    ("rtol negative", lambda p: px.simulate(_robot(p), 0.1, rtol=-1e-6), InvalidParameter, "rtol"),
    ("max_step 0", lambda p: px.simulate(_robot(p), 0.1, max_step=0), InvalidParameter, "max_step"),
    (
        "max_step negative",
        lambda p: px.simulate(_robot(p), 0.1, max_step=-0.1),
        InvalidParameter,
        "max_step",
    ),
    (
        "output_dt 0",
        lambda p: px.simulate(_robot(p), 1, output_dt=0),
        InvalidParameter,
        "output_dt",
    ),
    (
        "output_dt negative",
        lambda p: px.simulate(_robot(p), 1, output_dt=-0.1),
        InvalidParameter,
        "output_dt",
    ),
    ("q0 text", lambda p: px.simulate(_robot(p), 0.1, q0=["a"]), InvalidParameter, "q0"),
    (
        "x0 wrong size",
        lambda p: px.simulate(_robot(p), 0.1, x0=np.zeros(5)),
        InvalidParameter,
        "accepted sizes: 4 [q, v]",
    ),
    (
        "control of t only",
        lambda p: px.simulate(_robot(p), 0.1, control=lambda t: np.zeros(2)),
        InvalidParameter,
        "u(t, x)",
    ),
    (
        "control wrong length",
        lambda p: px.simulate(_robot(p), 0.1, control=lambda t, x: np.zeros(3)),
        InvalidParameter,
        "shape (3,)",
    ),
    (
        "control scalar for two joints",
        lambda p: px.simulate(_robot(p), 0.1, control=lambda t, x: 1.0),
        InvalidParameter,
        "a scalar",
    ),
    (
        "control list of wrong length",
        lambda p: px.simulate(_robot(p), 0.1, control=lambda t, x: [1.0, 2.0, 3.0]),
        InvalidParameter,
        "list of length 3",
    ),
    (
        "massless moving link",
        lambda p: px.simulate(_massless_leaf(p), 0.1),
        InvalidParameter,
        "link 'l1' has zero mass and inertia",
    ),
    (
        "point mass turned about itself",
        lambda p: px.simulate(_point_mass_on_three_axes(p), 0.1),
        InvalidParameter,
        "joints 'j1', 'j2', 'j3': one combination of their accelerations moves no inertia",
    ),
    # -- URDF and extension files -----------------------------------------------------------
    (
        "izz nan",
        lambda p: px.load_urdf(_replace_first(p, 'izz="1e-4"', 'izz="nan"')),
        FileFormatError,
        "<link name='l0'><inertial><inertia izz>",
    ),
    (
        "mass nan",
        lambda p: px.load_urdf(_replace_first(p, '<mass value="1.0"/>', '<mass value="nan"/>')),
        FileFormatError,
        "<link name='l0'><inertial><mass value>",
    ),
    (
        "resistance text in <pinext>",
        lambda p: px.load_urdf(
            _with_block(p, f'<drive joint="j0"><motor resistance="one" {MOTOR}/></drive>')
        ),
        ExtensionError,
        "arm.urdf: drives.j0: drive of joint 'j0': motor parameter 'resistance'",
    ),
    (
        "resistance with unit in sidecar",
        lambda p: px.load_urdf(
            _sidecar(
                p,
                '[drives.j0.motor]\nresistance = "1.2 Ohm"\ntorque_constant = 0.05\n'
                "back_emf_constant = 0.05\nrotor_inertia = 1e-5\n",
            )
        ),
        ExtensionError,
        "arm.pinext.toml: drives.j0: drive of joint 'j0': motor parameter 'resistance'",
    ),
    (
        "binary sidecar",
        lambda p: px.load_urdf(_sidecar(p, b"\xff\xfe\x00\x01\x80\x81 binary")),
        FileFormatError,
        "arm.pinext.toml: TOML: not a UTF-8 text file",
    ),
    (
        "environment stiffness nan",
        lambda p: px.load_urdf(
            _with_block(p, '<environment mass="5" stiffness="nan" damping="20"/>')
        ),
        ExtensionError,
        "environment: environment stiffness must be a finite number",
    ),
    (
        "environment stiffness nan in Python",
        lambda p: px.DynamicEnvironment(5.0, float("nan"), 20.0),
        InvalidParameter,
        "environment stiffness",
    ),
    (
        "unknown root joint",
        lambda p: px.load_urdf(_with_block(p, '<root_joint type="hovering"/>')),
        FileFormatError,
        "root_joint: unknown root joint 'hovering'; valid: fixed, freeflyer, planar",
    ),
    # -- saved trajectories -----------------------------------------------------------------
    (
        "wrong format tag",
        lambda p: px.Trajectory.load(_rewritten(p, header={"format": "pinext-trajectory-9"})),
        FileFormatError,
        "header.format",
    ),
    ("t shorter than x", lambda p: px.Trajectory.load(_short_t(p)), FileFormatError, "x: expected"),
    ("nan in x", lambda p: px.Trajectory.load(_nan_in_x(p)), FileFormatError, "x: non-finite"),
    (
        "layout outside x",
        lambda p: px.Trajectory.load(_layout_outside(p)),
        FileFormatError,
        "header.layout.v: [2, 40] points outside x",
    ),
    (
        "header without layout",
        lambda p: px.Trajectory.load(_header_without(p, "layout")),
        FileFormatError,
        "header: missing key(s) layout",
    ),
    (
        "truncated npz",
        lambda p: px.Trajectory.load(_truncated(p)),
        FileFormatError,
        "run.npz: npz: unreadable archive",
    ),
    (
        "empty npz",
        lambda p: px.Trajectory.load(_empty_npz(p)),
        FileFormatError,
        "empty.npz: npz: not a pinext trajectory: missing array(s) header",
    ),
    (
        "npy instead of npz",
        lambda p: px.Trajectory.load(_npy(p)),
        FileFormatError,
        "array.npy: file: a single .npy array",
    ),
    # -- the command line -------------------------------------------------------------------
    (
        "check --samples 0",
        lambda p: _cli("check", _urdf(p), "--samples", "0"),
        InvalidParameter,
        "samples",
    ),
    (
        "view a URDF",
        lambda p: _cli("view", _urdf(p)),
        FileFormatError,
        "arm.urdf: file: an XML file (a URDF?), not a pinext trajectory",
    ),
]


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


def test_integration_error_reports_the_last_accepted_state(tmp_path, monkeypatch):
    """A solver failure mid-phase reports where the solver stopped, not the phase's start."""
    from pinext.simulation import dop853

    robot = _robot(tmp_path)
    x_start = np.array([0.5, 0.2, 0.0, 0.0])
    x_last = np.array([0.4, 0.25, -1.0, 0.3, 0.0, 0.0])

    def failing(fun, t_span, y0, **kwargs):
        from types import SimpleNamespace

        return SimpleNamespace(
            t=np.array([0.0, 0.02]),
            y=np.column_stack([y0, x_last]),
            t_events=None,
            y_events=None,
            status=-1,
            message="step size becomes too small",
            nfev=10,
            stiff=False,
        )

    monkeypatch.setattr(dop853, "solve", failing)
    monkeypatch.setenv("PINEXT_NO_COMPILED", "1")  # the Python path's solver is replaced
    with pytest.raises(IntegrationError, match="step size becomes too small") as caught:
        px.simulate(robot, 0.1, q0=x_start[:2], v0=x_start[2:])
    assert caught.value.time == 0.02
    np.testing.assert_array_equal(caught.value.state, x_last)
