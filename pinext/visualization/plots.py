"""Plots of pinext trajectories and analyses (matplotlib, headless-safe).

Every function returns a :class:`matplotlib.figure.Figure` whose axes carry labels with units;
:func:`save` writes it as PNG and SVG. The figures are built with the object API
(``matplotlib.figure.Figure``), so no GUI backend is ever needed.

* :func:`joint_trajectories` — q and v of chosen joints [rad, rad/s or m, m/s];
* :func:`motor_trajectories` — motor angles, velocities, currents, voltages of the drives;
* :func:`link_vs_motor` — link angle against motor angle / N and their difference (the
  deflection of an elastic transmission, Vukobratović & Potkonjak (20.98));
* :func:`contact_force` — contact forces with one colour band per phase and impact markers;
* :func:`energy_audit` — stored energy, input work, dissipation, impact losses and the
  residual of ``Trajectory.energy_balance()``;
* :func:`modal_convergence` — natural frequencies against the number of sublinks, with a
  reference (Celentano 2008, §5.2, (70));
* :func:`mode_shapes` — transverse mode shapes of a flexible link along the beam;
* :func:`bode` — magnitude and phase of linear models' frequency responses
  (:func:`pinext.frequency_response`), with their resonances and anti-resonances marked;
* :func:`torque_speed` — motor operating points in the torque–speed plane with the voltage
  limit lines :math:`\\tau = C_M (\\pm u_{max} - C_E \\omega)/R` (Vukobratović & Potkonjak,
  (20.62)–(20.64)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..exceptions import InvalidParameter, NameNotFound
from ._figures import _figure, save
from .bode import bode

__all__ = [
    "bode",
    "contact_force",
    "contact_friction",
    "energy_audit",
    "joint_trajectories",
    "link_vs_motor",
    "modal_convergence",
    "mode_shapes",
    "motor_trajectories",
    "save",
    "torque_speed",
]

_PHASE_COLORS = ["#dbe9f6", "#fde0c5", "#d9f0d3", "#f2d7ee", "#fff3bf", "#e0e0e0"]


def _joint_columns(trajectory: Any, joints: Sequence[str] | None) -> list[tuple[str, int, int]]:
    """(name, q column, v column) of one-DOF joints (default: every joint with nq = nv = 1)."""
    names = list(trajectory.meta.get("joint_names") or [])
    nq, nv = trajectory.q.shape[1], trajectory.v.shape[1]
    if not names or nq != nv or len(names) != nv:
        names = names if len(names) == nv and nq == nv else [f"v{i}" for i in range(nv)]
        if nq != nv:
            return [(n, -1, i) for i, n in enumerate(names) if joints is None or n in joints]
    if joints is None:
        return [(n, i, i) for i, n in enumerate(names)]
    out = []
    for joint in joints:
        if joint not in names:
            raise NameNotFound("joint", joint, names)
        out.append((joint, names.index(joint), names.index(joint)))
    return out


def _units(trajectory: Any) -> tuple[str, str]:
    kinds = trajectory.meta.get("joint_units")
    return ("rad or m", "rad/s or m/s") if kinds == "mixed" else ("rad", "rad/s")


def joint_trajectories(trajectory: Any, joints: Sequence[str] | None = None) -> Figure:
    """Joint positions and velocities against time.

    Args:
        trajectory: A :class:`pinext.Trajectory`.
        joints: Joint names (default: all one-DOF joints; nq ≠ nv shows velocities only).
    """
    cols = _joint_columns(trajectory, joints)
    qu, vu = _units(trajectory)
    fig, (ax_q, ax_v) = _figure(2, 1)
    for name, iq, iv in cols:
        if iq >= 0:
            ax_q.plot(trajectory.t, trajectory.q[:, iq], label=name)
        ax_v.plot(trajectory.t, trajectory.v[:, iv], label=name)
    ax_q.set_ylabel(f"joint position q [{qu}]")
    ax_v.set_ylabel(f"joint velocity v [{vu}]")
    ax_v.set_xlabel("time t [s]")
    ax_q.set_title(f"Joint trajectories: {trajectory.meta.get('robot', '')}")
    if len(cols) <= 10:
        ax_q.legend(fontsize=7, ncols=min(len(cols), 4), loc="best")
    return fig


def _drive_labels(trajectory: Any, n: int, component: str) -> list[str]:
    labels = trajectory.meta.get(component) or trajectory.meta.get("drives")
    if isinstance(labels, Mapping):
        labels = list(labels)
    if isinstance(labels, Sequence) and not isinstance(labels, str) and len(labels) == n:
        return [str(x) for x in labels]
    return [f"drive {k}" for k in range(n)]


def _output(trajectory: Any, name: str) -> np.ndarray:
    if name not in trajectory.outputs:
        raise NameNotFound("output", name, sorted(trajectory.outputs))
    values = np.asarray(trajectory.outputs[name], dtype=float)
    return values.reshape(len(trajectory.t), -1)


def motor_trajectories(trajectory: Any, component: str = "drives") -> Figure:
    """Motor angle, velocity, current and voltage of every drive against time.

    Args:
        trajectory: A :class:`pinext.Trajectory` of a System with drives.
        component: Name of the drive component (output prefix).
    """
    rows = [
        ("motor_angle", "motor angle θ [rad]"),
        ("motor_velocity", "motor velocity ω [rad/s]"),
        ("current", "current i [A]"),
        ("voltage", "voltage u [V]"),
    ]
    rows = [(k, label) for k, label in rows if f"{component}.{k}" in trajectory.outputs]
    if not rows:
        raise NameNotFound("output", f"{component}.motor_angle", sorted(trajectory.outputs))
    fig, axes = _figure(len(rows), 1, height=2.2)
    n = _output(trajectory, f"{component}.{rows[0][0]}").shape[1]
    labels = _drive_labels(trajectory, n, component)
    for ax, (key, label) in zip(axes, rows, strict=True):
        values = _output(trajectory, f"{component}.{key}")
        for k in range(values.shape[1]):
            if np.isfinite(values[:, k]).any():
                ax.plot(trajectory.t, values[:, k], label=labels[k])
        ax.set_ylabel(label)
    axes[-1].set_xlabel("time t [s]")
    axes[0].set_title("Motor trajectories")
    axes[0].legend(fontsize=7, ncols=min(n, 4))
    return fig


def link_vs_motor(
    trajectory: Any,
    joint: str | int = 0,
    *,
    reduction: float | None = None,
    component: str = "drives",
    drive: int | None = None,
) -> Figure:
    """Link angle q and motor angle θ/N of one drive, and the transmission deflection.

    .. math:: \\delta = \\theta / N - q \\qquad \\text{(Vukobratović \\& Potkonjak, (20.98))}

    Args:
        trajectory: A :class:`pinext.Trajectory` of a System with drives.
        joint: Joint name or index in v of the driven joint.
        reduction: Reduction ratio N (default ``meta["reductions"][joint]`` or 1).
        component: Name of the drive component.
        drive: Column of the drive in the drive outputs (default: the joint's position in
            ``meta["drives"]``, else 0).
    """
    cols = _joint_columns(trajectory, None)
    names = [c[0] for c in cols]
    if isinstance(joint, str):
        if joint not in names:
            raise NameNotFound("joint", joint, names)
        iq = cols[names.index(joint)][1]
        name = joint
    else:
        iq, name = int(joint), names[int(joint)] if int(joint) < len(names) else str(joint)
    drives = trajectory.meta.get("drives") or []
    if drive is None:
        drive = list(drives).index(name) if name in drives else 0
    if reduction is None:
        reduction = float((trajectory.meta.get("reductions") or {}).get(name, 1.0))
    theta = _output(trajectory, f"{component}.motor_angle")[:, drive]
    q = trajectory.q[:, iq]
    fig, (ax, ax_d) = _figure(2, 1)
    ax.plot(trajectory.t, q, label=f"link angle q ({name})")
    ax.plot(trajectory.t, theta / reduction, "--", label=f"motor angle θ/N (N = {reduction:g})")
    ax.set_ylabel("angle [rad]")
    ax.legend(fontsize=8)
    ax.set_title("Link vs motor angle")
    ax_d.plot(trajectory.t, theta / reduction - q, color="C3")
    ax_d.set_ylabel("deflection θ/N − q [rad]")
    ax_d.set_xlabel("time t [s]")
    return fig


def _phase_bands(ax: Any, trajectory: Any) -> None:
    """One colour band per phase, labelled once per phase name."""
    colors: dict[str, str] = {}
    for phase in getattr(trajectory, "phases", []):
        first = phase.name not in colors
        color = colors.setdefault(phase.name, _PHASE_COLORS[len(colors) % len(_PHASE_COLORS)])
        ax.axvspan(
            phase.t_start,
            phase.t_end,
            color=color,
            alpha=0.6,
            lw=0,
            label=f"phase: {phase.name}" if first else None,
        )


def contact_force(trajectory: Any, component: str = "contact") -> Figure:
    """Contact forces against time, with phase bands and impact markers.

    Args:
        trajectory: A :class:`pinext.Trajectory` with ``<component>.force`` outputs.
        component: Name of the contact component.
    """
    force = _output(trajectory, f"{component}.force")
    fig, axes = _figure(1, 1, height=3.2)
    ax = axes[0]
    _phase_bands(ax, trajectory)
    for k in range(force.shape[1]):
        ax.plot(
            trajectory.t,
            force[:, k],
            color=f"C{k}",
            lw=1.5,
            label=f"force {k}" if force.shape[1] > 1 else "normal force F",
        )
    impacts = [e for e in trajectory.events if "impulse" in (e.info or {})]
    for e in impacts:
        impulse = float(np.sum(np.asarray(e.info["impulse"], dtype=float)))
        ax.axvline(e.t, color="k", ls=":", lw=1)
        ax.plot(
            [e.t], [0.0], marker="v", color="k", ms=8, label="impact" if e is impacts[0] else None
        )
        ax.annotate(
            f"P = {impulse:.3g} N.s",
            (e.t, 0.0),
            textcoords="offset points",
            xytext=(4, 8),
            fontsize=8,
        )
    ax.set_xlabel("time t [s]")
    ax.set_ylabel("contact force F [N]")
    ax.set_title("Contact force")
    ax.legend(fontsize=8, loc="best")
    return fig


def contact_friction(trajectory: Any, contact: str, mu: float | None = None) -> Figure:
    """Normal force λ_n, tangential force |λ_t| and the cone limit μ λ_n of a frictional
    contact against time, shaded where it sticks (green) and slips (orange).

    Coulomb's law holds when |λ_t| ≤ μ λ_n, with equality while slipping.

    Args:
        trajectory: A :class:`pinext.Trajectory` with the outputs of the contact's
            component ``friction:<contact>`` (``normal_force``, ``friction_force``, ``state``).
        contact: The contact's name.
        mu: Coulomb's μ (default: the contact's, from the trajectory's scene metadata).
    """
    prefix = f"friction:{contact}"
    normal = _output(trajectory, f"{prefix}.normal_force")[:, 0]
    tangential = np.linalg.norm(_output(trajectory, f"{prefix}.friction_force"), axis=1)
    if mu is None:
        items = trajectory.meta.get(f"scene.{prefix}") or [{}]
        if "friction" not in items[0]:
            raise InvalidParameter(
                f"no friction coefficient for contact '{contact}' in the trajectory's metadata; "
                "pass mu="
            )
        mu = float(items[0]["friction"])
    t = np.asarray(trajectory.t)
    fig, axes = _figure(1, 1, height=3.2)
    ax = axes[0]
    key = f"{prefix}.state"
    if key in trajectory.outputs:
        state = _output(trajectory, key)[:, 0]
        for value, color, label in ((1.0, "#d9f0d3", "stick"), (2.0, "#fde0c5", "slip")):
            on = state == value
            if on.any():
                ax.fill_between(
                    t,
                    0,
                    1,
                    where=on,
                    color=color,
                    transform=ax.get_xaxis_transform(),
                    label=label,
                    step="mid",
                )
    ax.plot(t, normal, color="C0", lw=1.5, label="normal force λ_n")
    ax.plot(t, tangential, color="C3", lw=1.5, label="tangential force |λ_t|")
    ax.plot(t, mu * normal, color="k", ls="--", lw=1, label=f"cone limit μ λ_n (μ = {mu:g})")
    for e in trajectory.events:
        if (e.info or {}).get("contact") == contact:
            ax.axvline(e.t, color="k", ls=":", lw=1)
    ax.set_xlabel("time t [s]")
    ax.set_ylabel("force [N]")
    ax.set_title(f"Contact '{contact}': forces and friction cone")
    ax.legend(fontsize=8, loc="best")
    return fig


def energy_audit(trajectory: Any) -> Figure:
    """Energy terms and the balance residual (``Trajectory.energy_balance``).

    Top: stored energies by term, total, input work, dissipated energy and impact losses [J];
    with time stepping also the scheme's numerical dissipation and explicit-evaluation
    error. Bottom: residual ``E - E0 - W_in + D + losses + D_num - S_expl`` [J] (zero up to the
    integration tolerance).
    """
    balance = trajectory.energy_balance()
    t = balance.t
    fig, (ax, ax_r) = _figure(2, 1, height=2.8)
    for name, values in trajectory.energy_terms().items():
        if np.abs(values).max(initial=0.0) > 0:
            ax.plot(t, values, lw=1, label=f"{name}")
    ax.plot(t, balance.energy, "k", lw=2, label="stored E")
    ax.plot(t, balance.input_work, "--", label="input work W")
    ax.plot(t, balance.dissipated, ":", label="dissipated D")
    if np.abs(balance.jump_losses).max(initial=0.0) > 0:
        ax.plot(t, balance.jump_losses, "-.", label="impact losses")
    if np.abs(balance.numerical_dissipation).max(initial=0.0) > 0:
        ax.plot(t, balance.numerical_dissipation, ":", label="numerical dissipation")
    if np.abs(balance.explicit_error).max(initial=0.0) > 0:
        ax.plot(t, balance.explicit_error, "-.", label="explicit error")
    ax.set_ylabel("energy [J]")
    ax.set_title(f"Energy audit (max relative residual {balance.max_relative():.1e})")
    ax.legend(fontsize=7, ncols=3)
    ax_r.plot(t, balance.residual, color="C3")
    ax_r.set_ylabel("residual [J]")
    ax_r.set_xlabel("time t [s]")
    return fig


def modal_convergence(
    sublinks: Sequence[int],
    frequencies: np.ndarray,
    reference: Sequence[float] | None = None,
    *,
    title: str = "Modal convergence",
) -> Figure:
    """Natural frequencies against the number of sublinks ν, and their error to a reference.

    Args:
        sublinks: The ν values, shape (n,).
        frequencies: Shape (n, m): the first m natural frequencies [Hz] for each ν.
        reference: Shape (m,): reference frequencies [Hz] (e.g. Euler–Bernoulli (70)).
        title: Figure title.
    """
    nu = np.asarray(sublinks)
    freqs = np.atleast_2d(np.asarray(frequencies, dtype=float))
    if freqs.shape[0] != nu.size:
        raise InvalidParameter(
            f"frequencies must have one row per sublink count: {freqs.shape} vs {nu.size}"
        )
    rows = 2 if reference is not None else 1
    fig, axes = _figure(rows, 1, height=2.8)
    for i in range(freqs.shape[1]):
        axes[0].plot(nu, freqs[:, i], "o-", color=f"C{i}", label=f"mode {i + 1}")
        if reference is not None:
            axes[0].axhline(reference[i], color=f"C{i}", ls="--", lw=0.8)
    axes[0].set_ylabel("natural frequency f [Hz]")
    axes[0].set_yscale("log")
    axes[0].set_title(title + (" (dashed: reference)" if reference is not None else ""))
    axes[0].legend(fontsize=7, ncols=3)
    if reference is not None:
        error = np.abs(freqs / np.asarray(reference, dtype=float)[None, :] - 1.0)
        for i in range(freqs.shape[1]):
            axes[1].loglog(nu, 100 * error[:, i], "o-", color=f"C{i}")
        axes[1].set_ylabel("relative error [%]")
    axes[-1].set_xlabel("number of sublinks ν [-]")
    return fig


def _beam_points(robot: Any, link: str) -> list[int]:
    model = robot.model
    frames = [f.name for f in model.frames]
    sub = sorted(
        (n for n in frames if n.startswith(f"{link}_sublink_")),
        key=lambda n: int(n.rsplit("_", 1)[1]),
    )
    if not sub:
        raise NameNotFound("flexible link", link, [getattr(f, "link", "") for f in robot.flexible])
    ids = [model.getFrameId(n) for n in sub]
    last = model.frames[ids[-1]].parentJoint
    tips = [
        i
        for i, f in enumerate(model.frames)
        if f.parentJoint == last and i not in ids and f.placement.translation.any()
    ]
    if tips:
        ids.append(max(tips, key=lambda i: np.linalg.norm(model.frames[i].placement.translation)))
    return ids


def mode_shapes(
    robot: Any,
    modes: Sequence[int] = (1, 2, 3),
    *,
    link: str | None = None,
    result: Any = None,
    locked_joints: Sequence[str] = (),
    q: np.ndarray | None = None,
) -> Figure:
    """Transverse mode shapes of a flexible link, drawn along the undeformed beam.

    Each shape is the displacement of the sublink nodes (and the tip) under a small motion
    along the mode, normal to the beam, normalised to a largest value of 1.

    Args:
        robot: A :class:`pinext.Robot` with a flexible link.
        modes: Mode numbers (1 = first nonzero-frequency mode).
        link: The flexible link (default the first one).
        result: A :class:`pinext.flexible.modal.ModalResult` (default computed with
            :func:`pinext.mode_shapes`).
        locked_joints: Passed to :func:`pinext.mode_shapes` when ``result`` is None.
        q: Configuration of the linearisation (default neutral).
    """
    import pinocchio as pin

    from ..flexible import mode_shapes as compute

    if link is None:
        if not robot.flexible:
            raise InvalidParameter("the robot has no flexible link")
        link = robot.flexible[0].link
    if result is None:
        result = compute(robot, q, locked_joints=locked_joints)
    model = robot.model
    data = model.createData()
    q0 = result.q
    ids = _beam_points(robot, link)
    pin.framesForwardKinematics(model, data, q0)
    base = np.array([data.oMf[i].translation for i in ids])
    axis = base[-1] - base[0]
    length = float(np.linalg.norm(axis))
    axis /= max(length, 1e-12)
    s = (base - base[0]) @ axis
    elastic = np.flatnonzero(result.frequencies > 0)
    fig, axes = _figure(1, 1, height=3.2)
    ax = axes[0]
    eps = 1e-6
    for mode in modes:
        if mode < 1 or mode > elastic.size:
            raise InvalidParameter(f"mode {mode} does not exist; valid: 1..{elastic.size}")
        col = elastic[mode - 1]
        qm = pin.integrate(model, q0, eps * result.shapes[:, col])
        pin.framesForwardKinematics(model, data, qm)
        disp = np.array([data.oMf[i].translation for i in ids]) - base
        disp -= np.outer(disp @ axis, axis)
        _, _, vt = np.linalg.svd(disp)
        w = disp @ vt[0]
        w /= np.abs(w).max() or 1.0
        if w[-1] < 0:
            w = -w
        ax.plot(s, w, "o-", label=f"mode {mode}: {result.frequencies[col]:.3g} Hz")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlabel("position along the beam x [m]")
    ax.set_ylabel("normalised deflection w [-]")
    ax.set_title(f"Mode shapes of '{link}'")
    ax.legend(fontsize=8)
    return fig


def torque_speed(
    trajectory: Any,
    drives: Sequence[int] | None = None,
    *,
    motors: Mapping[int, Any] | None = None,
    component: str = "drives",
) -> Figure:
    """Operating points (motor velocity, motor torque) of the drives along a trajectory.

    Without drive outputs the joint velocities and torque inputs are used. With a
    :class:`pinext.DCMotor` per drive (``motors``) that has a voltage limit, the limit lines

    .. math:: \\tau = C_M (\\pm u_{max} - C_E\\,\\omega) / R

    are drawn (Vukobratović & Potkonjak, (20.62)–(20.64), steady state, L i̇ = 0).

    Args:
        trajectory: A :class:`pinext.Trajectory`.
        drives: Drive columns to plot (default all).
        motors: Drive column -> DCMotor, for the limit lines.
        component: Name of the drive component.
    """
    if f"{component}.motor_velocity" in trajectory.outputs:
        speed = _output(trajectory, f"{component}.motor_velocity")
        torque = _output(trajectory, f"{component}.motor_torque")
        labels = _drive_labels(trajectory, speed.shape[1], component)
        xlabel, ylabel = "motor velocity ω [rad/s]", "motor torque τ_m [N.m]"
    else:
        speed = trajectory.v
        torque = _output(trajectory, "input")
        if torque.shape[1] != speed.shape[1]:
            raise InvalidParameter("the trajectory has neither drive outputs nor torque inputs")
        labels = [c[0] for c in _joint_columns(trajectory, None)] or [
            f"joint {k}" for k in range(speed.shape[1])
        ]
        xlabel, ylabel = "joint velocity v [rad/s]", "joint torque τ [N.m]"
    cols = range(speed.shape[1]) if drives is None else drives
    fig, axes = _figure(1, 1, height=3.6, width=6.0)
    ax = axes[0]
    for k in cols:
        ax.plot(speed[:, k], torque[:, k], ".", ms=3, color=f"C{k % 10}", label=labels[k])
        motor = (motors or {}).get(k)
        limit = getattr(motor, "voltage_limit", None)
        if motor is not None and limit:
            w = np.linspace(-1.2, 1.2, 50) * max(
                np.abs(speed[:, k]).max(), limit / max(motor.back_emf_constant, 1e-12)
            )
            for sign in (1.0, -1.0):
                ax.plot(
                    w,
                    motor.torque_constant
                    * (sign * limit - motor.back_emf_constant * w)
                    / motor.resistance,
                    "--",
                    color=f"C{k % 10}",
                    lw=0.8,
                    label=f"{labels[k]}: ±u_max" if sign > 0 else None,
                )
    ax.axhline(0.0, color="k", lw=0.5)
    ax.axvline(0.0, color="k", lw=0.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title("Torque–speed operating points")
    ax.legend(fontsize=7, ncols=2)
    return fig
