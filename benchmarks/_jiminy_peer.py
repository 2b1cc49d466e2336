"""Jiminy as a peer: the URDF of a Pinocchio serial chain, the Jiminy interpreter, the run.

Jiminy (jiminy_py) cannot live in pinext's environment (it pins numpy < 2.3 and bundles its own
Pinocchio), so it runs in a venv of its own, created once on first use in
``~/.cache/pinext/jiminy-venv`` (or the interpreter named by ``PINEXT_JIMINY_PYTHON``), as a
subprocess executing ``benchmarks/_jiminy.py`` on a JSON spec. :func:`jiminy_curves` returns
per setting the sampled joint positions, the final state, the median wall time and Jiminy's step
and evaluation counts; a benchmark turns them into its (error, wall) curves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

JIMINY = "jiminy-py==1.8.13"
SCRIPT = Path(__file__).resolve().parent / "_jiminy.py"
VENV = Path.home() / ".cache" / "pinext" / "jiminy-venv"

_AXES = {"RX": (1.0, 0.0, 0.0), "RY": (0.0, 1.0, 0.0), "RZ": (0.0, 0.0, 1.0)}


def _fmt(values) -> str:
    return " ".join(f"{float(x):.17g}" for x in values)


def joint_axis(joint) -> tuple[float, float, float]:
    """The axis of a revolute Pinocchio joint (RX, RY, RZ or revolute unaligned)."""
    short = joint.shortname()
    for key, axis in _AXES.items():
        if short == f"JointModel{key}":
            return axis
    if short == "JointModelRevoluteUnaligned":
        return tuple(float(x) for x in joint.axis)  # type: ignore[return-value]
    raise ValueError(f"joint type {short}: only revolute joints (RX, RY, RZ, unaligned)")


def link_name(model: pin.Model, j: int) -> str:
    """The URDF link carried by joint ``j`` (``base`` for the universe)."""
    return "base" if j == 0 else f"L{j}_{model.names[j]}"


def rotor_link(j: int) -> str:
    """The URDF link of the rotor of joint ``j`` (see :func:`chain_urdf`)."""
    return f"rotor_link{j}"


def chain_urdf(model: pin.Model, rotors: bool = False) -> str:
    """A URDF of a Pinocchio tree with revolute joints, at full precision (``.17g``).

    One link per joint carrying ``model.inertias[j]`` (lever, mass, rotational inertia about the
    centre of mass in the joint frame; a URDF inertial with no rotation), one revolute joint per
    Pinocchio joint with its placement (xyz and rpy of ``model.jointPlacements[j]``), axis and
    ``model.damping`` (``<dynamics>``). The limits are written as +-1e300 (none, as in the other
    peers). ``rotors=True`` adds, for every joint ``j``, a leaf link ``rotor_link{j}`` without
    inertia on the parent link, hinged at the same placement and about the same axis by joint
    ``rotor{j}``: a motor rotor in joint-side coordinates, whose inertia is the armature."""
    parts = ['<?xml version="1.0"?>', '<robot name="chain">', '<link name="base"/>']
    for j in range(1, model.njoints):
        inertia = model.inertias[j]
        rot = inertia.inertia
        name = link_name(model, j)
        parts.append(
            f'<link name="{name}"><inertial><origin xyz="{_fmt(inertia.lever)}" rpy="0 0 0"/>'
            f'<mass value="{inertia.mass:.17g}"/><inertia ixx="{rot[0, 0]:.17g}" '
            f'ixy="{rot[0, 1]:.17g}" ixz="{rot[0, 2]:.17g}" iyy="{rot[1, 1]:.17g}" '
            f'iyz="{rot[1, 2]:.17g}" izz="{rot[2, 2]:.17g}"/></inertial></link>'
        )
        placement = model.jointPlacements[j]
        origin = (
            f'<origin xyz="{_fmt(placement.translation)}" '
            f'rpy="{_fmt(pin.rpy.matrixToRpy(placement.rotation))}"/>'
        )
        axis = f'<axis xyz="{_fmt(joint_axis(model.joints[j]))}"/>'
        limit = '<limit lower="-1e300" upper="1e300" effort="1e300" velocity="1e300"/>'
        parent = link_name(model, model.parents[j])
        damping = model.damping[model.joints[j].idx_v]
        parts.append(
            f'<joint name="{model.names[j]}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{name}"/>{origin}{axis}{limit}'
            f'<dynamics damping="{damping:.17g}" friction="0"/></joint>'
        )
        if rotors:
            parts.append(f'<link name="{rotor_link(j)}"/>')
            parts.append(
                f'<joint name="rotor{j}" type="revolute"><parent link="{parent}"/>'
                f'<child link="{rotor_link(j)}"/>{origin}{axis}{limit}</joint>'
            )
    parts.append("</robot>")
    return "\n".join(parts)


def rotation_stiffness(model: pin.Model, j: int, value: float) -> list[float]:
    """A 6-vector (linear, angular) for Jiminy's viscoelastic coupling: ``value`` about the axis
    of joint ``j`` (axis-aligned joints; the coupling's stiffness is per component)."""
    axis = np.abs(np.array(joint_axis(model.joints[j])))
    if np.count_nonzero(axis) != 1:
        raise ValueError("couplings are written for axis-aligned revolute joints only")
    return [0.0, 0.0, 0.0, *(value * axis).tolist()]


def jiminy_python() -> str | None:
    """The interpreter with jiminy_py: ``PINEXT_JIMINY_PYTHON``, else the venv in the cache,
    created (and jiminy-py installed) on first use; None, with a message, if that fails."""
    given = os.environ.get("PINEXT_JIMINY_PYTHON")
    if given:
        return given
    python = VENV / "bin" / "python"
    if python.exists():
        ok = subprocess.run([str(python), "-c", "import jiminy_py"], capture_output=True)
        if ok.returncode == 0:
            return str(python)
    print(f"  creating a venv for Jiminy in {VENV}, once ({JIMINY})", flush=True)
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        subprocess.run([base, "-m", "venv", str(VENV)], check=True, capture_output=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", JIMINY],
            check=True,
            capture_output=True,
            timeout=1800,
        )
    except (subprocess.SubprocessError, OSError) as error:
        detail = getattr(error, "stderr", b"") or b""
        last = detail.decode(errors="replace").strip().splitlines()[-1:] or [str(error)]
        print(f"  Jiminy skipped: could not create its venv ({last[0]})")
        return None
    return str(python)


def jiminy_curves(spec: dict) -> dict | None:
    """Run ``spec`` (see ``_jiminy.py``) under the Jiminy interpreter; its JSON answer, or None
    (with a one-line message) when Jiminy is unavailable or the run failed."""
    python = jiminy_python()
    if python is None:
        return None
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    try:
        done = subprocess.run(
            [python, str(SCRIPT)], input=json.dumps(spec), capture_output=True, text=True, env=env
        )
    except OSError as error:
        print(f"  Jiminy skipped: cannot run {python} ({error})")
        return None
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["no message"]
        print(f"  Jiminy skipped: the Jiminy run failed ({last[0]})")
        return None
    return json.loads(done.stdout)


def rk4_settings(dts) -> list[dict]:
    """Fixed-step RK4 settings (evaluations not counted: 4 per step)."""
    return [
        {"label": f"RK4 dt {dt:.2e}", "solver": "runge_kutta_4", "dt": dt, "count": False}
        for dt in dts
    ]


def dopri_settings(rtols, atol_factor: float) -> list[dict]:
    """DOPRI5 settings, atol = rtol * atol_factor (the convention of the pinext runs)."""
    return [
        {
            "label": f"DOPRI5 rtol {rtol:.0e}",
            "solver": "runge_kutta_dopri",
            "rtol": rtol,
            "atol": rtol * atol_factor,
        }
        for rtol in rtols
    ]


def jiminy_peer_curves(
    out: dict, error, rows: list, curves: dict, row, names=("Jiminy RK4", "Jiminy DOPRI5")
) -> list[float]:
    """Fill ``curves[name]`` with (error, wall) points and ``rows`` with ``row(name, setting,
    err, result)`` from a Jiminy answer; ``error(result)`` gives a run's error. Returns the walls
    per dynamics evaluation [s] of the runs that finished."""
    per_eval = []
    for name in names:
        curves[name] = []
    for result in out["results"]:
        name = names[0] if result["label"].startswith("RK4") else names[1]
        err = np.inf if result["failed"] else float(error(result))
        if not np.isfinite(err):
            err = np.inf
        curves[name].append((err, result["wall"]))
        if not result["failed"] and result.get("evals"):
            per_eval.append(result["wall"] / result["evals"])
        rows.append(row(name, result, err))
    return per_eval
