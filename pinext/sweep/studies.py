"""Ready studies: top-level functions ``study(**point) -> dict[str, float]`` for
:func:`pinext.sweep`.

Each builds its System from scratch on the worker (nothing but the point crosses the
network), simulates or analyses it, and returns scalars. :data:`STUDIES` lists them by the
name that ``pinext sweep SPEC.toml`` uses.

* :func:`modal` — natural frequencies of a flexible link against the number of sublinks and
  the material (Celentano 2008, §5).
* :func:`drive_tracking` — peak tracking error, copper losses and peak voltage of elastic DC
  drives against the gear ratio and the transmission stiffness (Vukobratović & Potkonjak,
  §20.4, Fig. 20.10a).
* :func:`impact` — impulse, impact loss and peak contact force against the approach speed and
  the environment's mass, stiffness and damping (Vukobratović & Potkonjak, §20.5.3).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..validation import integer, real


def robot_path(robot: str) -> Path:
    """A URDF path, or the name of one of the project's robots (``six_dof_arm``, ...)."""
    path = Path(robot)
    if path.suffix == ".urdf" and path.is_file():
        return path
    from ..robots import robot_path as packaged

    return packaged(robot)


def modal(
    sublinks: int = 10,
    young_modulus: float = 1.0e11,
    density: float = 7876.0,
    side: float = 0.01,
    modes: int = 3,
    robot: str = "flexible_arm",
    link: str = "bar",
) -> dict[str, float]:
    """Natural frequencies of a link of square section split into ``sublinks`` (Celentano 2008).

    The link becomes ``sublinks + 1`` rigid sublinks joined by elastic joints of stiffness
    ``E I / (L / ν)`` with ``I = side⁴ / 12`` and mass per length ``density · side²``; the
    frequencies are those of the linearised chain (:func:`pinext.natural_frequencies`), the
    rigid-body (zero) modes left out.

    Args:
        sublinks: Number of elastic joints ν.
        young_modulus: E [Pa].
        density: Mass density [kg/m^3].
        side: Side of the square section [m].
        modes: Number of frequencies returned (NaN where the chain has fewer).
        robot: URDF path or project robot name.
        link: The flexible link.

    Returns:
        ``f1 ... f<modes>`` [Hz].
    """
    from ..flexible import FlexibleLink, natural_frequencies
    from ..robot import load_urdf

    bar = FlexibleLink(
        link,
        integer("sublinks", sublinks, low=1),
        float(young_modulus),
        side**4 / 12,
        mass_per_length=float(density) * side**2,
    )
    frequencies = natural_frequencies(load_urdf(robot_path(robot), flexible=[bar]))
    elastic = frequencies[frequencies > 1e-6 * max(frequencies.max(), 1.0)]
    return {f"f{i + 1}": float(elastic[i]) if i < elastic.size else math.nan for i in range(modes)}


#: Start and displacement of the six_dof_arm's rest-to-rest motion in :func:`drive_tracking`
#: and the demo's elastic drives [rad]. Its peak speeds, ``35/16 |dq| / move_time``
#: (:func:`pinext.planning.rest_to_rest`), keep within the arm's velocity limits (3, 3, 3, 6,
#: 6, 6 rad/s) for a motion of 0.48 s or longer (0.8 of the shortest shipped duration, 0.6 s):
#: shoulder_pan 2.3 and wrist_3 3.6 rad/s there, with 24 % left for the tracking error.
MOTION = (np.array([0.0, 0.6, -1.0, 0.0, 0.5, 0.0]), np.array([0.5, 0.3, -0.4, 0.6, 0.4, -0.8]))


def drive_tracking(
    ratio: float = 100.0,
    stiffness: float = 2.0e4,
    duration: float = 0.6,
    damping: float | None = None,
    robot: str = "six_dof_arm",
    method: str = "Radau",
) -> dict[str, float]:
    """A 6-DOF arm with elastic DC drives tracks a rest-to-rest motion (Fig. 20.10a).

    Every joint gets :data:`pinext.drives.HARMONIC_DRIVE_MOTOR` behind an
    :class:`pinext.ElasticTransmission` of the given ratio, stiffness and damping (default
    ``5e-4 s · stiffness``, the proportion of the harmonic-drive presets). The motion of
    :data:`MOTION` runs in ``0.8 · duration`` with the computed-torque feedforward and
    motor-side PD of :func:`pinext.track_rest_to_rest`.

    Args:
        ratio: Gear ratio N [-].
        stiffness: Transmission stiffness c [N.m/rad].
        duration: Simulated time [s].
        damping: Transmission damping [N.m.s/rad].
        robot: URDF path or project robot name (its first six joints are driven).
        method: Integration method of :func:`pinext.simulate`. Radau's steps do not shrink
            with the stiffness (DOP853 takes 5 times as many for c = 8e4 N.m/rad).

    Returns:
        ``peak_tracking_error`` [rad] (largest joint error), ``copper_loss`` [J] (R i²
        integrated), ``peak_voltage`` [V], ``peak_spring_torque`` [N.m] and
        ``energy_balance`` (relative residual of the energy audit).
    """
    from ..drives import HARMONIC_DRIVE_MOTOR, Drive, ElasticTransmission
    from ..planning import rest_to_rest, track_rest_to_rest
    from ..robot import load_urdf
    from ..simulation import System

    arm = load_urdf(robot_path(robot), extensions=False)
    damping = 5e-4 * stiffness if damping is None else damping
    transmission = ElasticTransmission(float(ratio), float(stiffness), float(damping))
    drives = {j: Drive(HARMONIC_DRIVE_MOTOR, transmission) for j in list(arm.model.names)[1:7]}
    q0, dq = MOTION
    traj, _ = track_rest_to_rest(
        System(arm, drives=drives),
        q0,
        dq,
        duration,
        rtol=1e-8,
        atol=1e-10,
        output_dt=2e-3,
        method=method,
    )
    error = np.abs(traj.q[:, :6] - rest_to_rest(traj.t, q0, dq, 0.8 * duration)).max()
    copper = traj.outputs["drives.copper_loss"].sum(axis=1)
    return {
        "peak_tracking_error": float(error),
        "copper_loss": float(np.trapezoid(copper, traj.t)),
        "peak_voltage": float(np.abs(traj.outputs["drives.voltage"]).max()),
        "peak_spring_torque": float(np.abs(traj.outputs["drives.spring_torque"]).max()),
        "energy_balance": float(traj.energy_balance().max_relative()),
    }


def impact(
    speed: float = 0.5,
    mass: float = 2.0,
    stiffness: float = 2.0e4,
    damping: float = 100.0,
    contact_stiffness: float = 0.0,
    contact_damping: float = 0.0,
    duration: float = 0.05,
    robot: str = "six_dof_arm",
    frame: str = "pen_tip",
    table_height: float = 0.2,
) -> dict[str, float]:
    """A pen tip hits a table at ``speed`` and stays pressed by gravity compensation.

    The arm starts 1 mm above the table with the pen pointing down and the tip moving
    straight down at ``speed``; the controller compensates gravity only. The table is a
    :class:`pinext.DynamicEnvironment`: model (c), a mass on a spring and damper, which the
    tip hits in a plastic impact (Vukobratović & Potkonjak (20.95)–(20.97), in the consistent
    form of :func:`pinext.plastic_impact`), or with ``contact_stiffness > 0`` model (d), a
    massless layer in front of it (no impact, a force peak instead).

    Args:
        speed: Approach speed of the tip [m/s].
        mass: Environment mass m_e [kg] (``inf`` for an immobile table).
        stiffness: Environment spring k [N/m].
        damping: Environment damper b [N.s/m].
        contact_stiffness: k_c of model (d) [N/m]; 0 for model (c).
        contact_damping: c_c of model (d) [N.s/m].
        duration: Simulated time [s].
        robot: URDF path or project robot name with the frame ``frame``.
        frame: The tip frame.
        table_height: Height of the table surface [m].

    Returns:
        ``impulse`` [N.s] (0 without an impact), ``impact_loss`` [J] (kinetic energy lost in
        the impact), ``peak_force`` [N] (contact force after the impact),
        ``contact_time`` [s] (until lift-off, or ``duration``) and ``energy_balance``.
    """
    import pinocchio as pin

    from ..contact import Contact, DynamicEnvironment, plane
    from ..robot import load_urdf
    from ..simulation import System, simulate
    from ..tasks import start_configuration

    speed = real("speed", speed, unit="[m/s] (the tip's approach speed)", low=0.0)
    table_height = real("table_height", table_height, unit="[m]")
    arm = load_urdf(robot_path(robot), extensions=False)
    model = arm.model
    fid = arm.frame_id(frame)
    q0 = start_configuration(model, np.array([0.55, -0.1, table_height + 1e-3]))
    data = model.createData()
    pin.framesForwardKinematics(model, data, q0)
    jacobian = pin.computeFrameJacobian(model, data, q0, fid, pin.LOCAL_WORLD_ALIGNED)
    v0 = np.linalg.lstsq(jacobian, np.r_[0.0, 0.0, -speed, 0.0, 0.0, 0.0], rcond=None)[0]
    environment = DynamicEnvironment(
        float(mass),
        float(stiffness),
        float(damping),
        contact_stiffness=float(contact_stiffness) if contact_stiffness > 0 else None,
        contact_damping=float(contact_damping),
    )
    contact = Contact(plane(frame, (0.0, 0.0, table_height)), stabilization=30.0, name="table")
    system = System(arm, contacts=[contact], environment=environment)
    gravity_data = model.createData()

    def gravity(t: float, x: np.ndarray) -> np.ndarray:
        return pin.computeGeneralizedGravity(model, gravity_data, x[: model.nq])

    traj = simulate(
        system, duration, q0=q0, v0=v0, control=gravity, rtol=1e-8, atol=1e-10, output_dt=1e-4
    )
    hits = [e for e in traj.events if e.name.startswith("contact")]
    lifts = [e for e in traj.events if e.name.startswith("lift-off")]
    impulse = float(np.sum(hits[0].info.get("impulse", 0.0))) if hits else 0.0
    loss = float(sum(e.info.get("energy_loss", 0.0) for e in hits))
    force = traj.outputs["contact.force"].reshape(len(traj), -1)[:, 0]
    start = hits[0].t if hits else 0.0
    end = lifts[0].t if lifts else traj.t[-1]
    return {
        "impulse": impulse,
        "impact_loss": loss,
        "peak_force": float(np.abs(force).max()),
        "contact_time": float(end - start),
        "energy_balance": float(traj.energy_balance().max_relative()),
    }


class ReadyStudy(NamedTuple):
    """A ready study as ``pinext sweep SPEC.toml`` names it."""

    function: Callable[..., dict[str, float]]
    """The study."""
    response: str
    """The result drawn by default."""
    results: tuple[str, ...] = ()
    """The names of the study's results (what ``[plot] response`` may name)."""


#: Name -> ready study, for ``pinext sweep``.
STUDIES: dict[str, ReadyStudy] = {
    "drive_tracking": ReadyStudy(
        drive_tracking,
        "peak_tracking_error",
        (
            "peak_tracking_error",
            "copper_loss",
            "peak_voltage",
            "peak_spring_torque",
            "energy_balance",
        ),
    ),
    "impact": ReadyStudy(
        impact,
        "impulse",
        ("impulse", "impact_loss", "peak_force", "contact_time", "energy_balance"),
    ),
    "modal": ReadyStudy(modal, "f1", tuple(f"f{i}" for i in range(1, 21))),
}
