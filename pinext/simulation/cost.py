"""The cost of a run, measured at its start: the stiff element that sets it, and a probe that
refuses a run whose pace would take longer than :data:`pinext.validation.LONG_RUN`.

A stiff element (an elastic transmission, a joint spring, an elastic support, a control
law's gains) of stiffness c on an inertia m gives the linearised system a mode at
``ω = √(c/m)``. What it costs depends on more than ω: an explicit method needs
``t ω / 6.1`` steps for its stability (:mod:`.stiffness`), any method resolves the mode
once the motion excites it, and the spring's force ``c (q_1 − q_2)`` carries the rounding
of its coordinates, ``c ε |q|``, an acceleration noise ``ω² ε |q|`` that the error
estimate reads as error: the steps shrink until ``h ω² ε |q|`` is within ``atol``.
Measured on the six-DOF arm's elbow (a DC motor behind an undamped transmission, rtol 1e-10,
atol 1e-12): c = 1e9 N.m/rad (ω = 2.1e5 /s) takes steps of 1e-9 … 6e-8 s at the start where
its stability allows 3e-5 s, and c = 1e12 steps below 1e-10 s (the stability bound: 9e-7 s),
for either DOP853 or Radau. The steps follow the tolerances, the rounding and the excitation
more than the spectrum, so a model of them from the spectrum alone is off by orders of
magnitude; :class:`CostProbe` measures them instead: the run's own pace over its first
:data:`PROBE_SECONDS` of integration, extrapolated to ``t_final``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation
from ..exceptions import InvalidParameter
from ..validation import duration_text
from .held_loop import dof_name

if TYPE_CHECKING:
    from .system import System

#: Wall time [s] of integration over which the probe measures the run's pace before it
#: extrapolates (the kernels' loading and compilation, before the first step, not counted).
PROBE_SECONDS = 0.3
#: Wall time [s] of integration after which the probe stops judging a steady pace: a
#: refusal comes within the first second of a run that is past its transients.
PROBE_END = 0.8
#: Wall time [s] after which a pace still growing is judged all the same, on the last
#: PROBE_SECONDS: a run let through while its steps grew would run on at the pace they
#: settle to (a stiff law's steps grew for its first second on one machine, then held a
#: pace of hours).
PROBE_LIMIT = 5.0
#: A pause [s] between two reports longer than this is not a step (a kernel compiled at a
#: first impact, a law's first call): the probe measures again from the report after it.
PAUSE = 0.5
#: How many such pauses start the window again: a run has a few compilations, while a run
#: whose every step takes longer than PAUSE (a slower machine, a stiffer scene) would never
#: be judged; after these its pauses count as its pace.
PAUSES = 3
#: A run whose pace over the last third of the probe's window is this many times its pace
#: over the first third is leaving a transient (the steps growing after a fast start, a
#: damped mode or an electrical time constant dying out): it is not judged on that window.
SPEEDING_UP = 1.25


class CostProbe:
    """The progress bar of a run, watched: over the first :data:`PROBE_SECONDS` of
    integration (from the loop's first report, after any compilation) the pace in simulated
    seconds per wall second; when it projects the run beyond :data:`pinext.validation.
    LONG_RUN`, :meth:`update` raises :class:`InvalidParameter` with the estimate, the stiff
    element (:func:`stiff_element`) and the ways out. It forwards to the tqdm bar it wraps
    (which the compiled loop and the right-hand sides call), and asks for reports at every
    evaluation that advances time while it judges (``step`` 0), at the bar's own rate
    after.

    Only a steady pace is judged, over the whole window: a run whose steps still grow (its
    pace over the window's last third :data:`SPEEDING_UP` times that over its first third)
    is judged again at the next report, on the last :data:`PROBE_SECONDS` once past
    :data:`PROBE_END`, until its pace holds (or :data:`PROBE_LIMIT`); a run that has
    integrated nothing (stuck at its start, every step rejected) is judged at
    :data:`PROBE_END`; a run that stalls in its last third (its first steps collapsing
    before they grow, an event handled, a law's slow sample) is judged at :data:`PROBE_END`,
    on its pace over the window, not on the stall. A pause longer than
    :data:`PAUSE` between two reports (a compilation, not a step) starts the window again,
    the first :data:`PAUSES` times."""

    def __init__(self, bar: Any, t_start: float, element: str, ways: str) -> None:
        self.bar, self.element, self.ways = bar, element, ways
        self.t_start = self.n = t_start  # (a disabled tqdm bar counts nothing)
        self.total = float(bar.total)
        self.window: list[tuple[float, float]] = []  # (wall time, simulated time) reports
        self.judging = True
        self.own_step = getattr(bar, "step", 0.0)
        self.pauses = 0
        self.opened = 0.0  # wall time the window opened (its first report, or after a pause)

    def __getattr__(self, name: str) -> Any:  # disable, close … are the bar's
        return getattr(self.bar, name)

    @property
    def step(self) -> float:
        """The least advance of simulated time [s] between reports of the right-hand side:
        while it judges, every evaluation reports, those behind the furthest time reached
        (a rejected step's) too, so that a run stuck at its start is seen."""
        return -np.inf if self.judging else self.own_step

    def update(self, advance: float) -> None:
        """Forward ``advance`` [s] to the bar (none for a report behind the furthest time);
        judge the pace while the probe lasts."""
        advance = max(advance, 0.0)
        self.bar.update(advance)
        self.n += advance
        if not self.judging:
            return
        now, window = time.perf_counter(), self.window
        if window and now - window[-1][0] > PAUSE and self.pauses < PAUSES:
            window.clear()
            self.pauses += 1
        if not window:
            self.opened = now
        if not window or now - window[-1][0] >= PAUSE / 10:  # a few hundred reports at most
            window.append((now, self.n))
        start = window[0][0]
        spent, done, left = now - start, self.n - window[0][1], self.total - self.n
        if spent < PROBE_SECONDS or (done <= 0 and spent <= PROBE_END):
            return  # nothing integrated yet (a Jacobian at one time): judged at PROBE_END
        one = next(report for report in window if report[0] >= start + spent / 3)
        two = next(report for report in window if report[0] >= start + 2 * spent / 3)
        first = (one[1] - window[0][1]) / max(one[0] - start, 1e-9)
        middle = (two[1] - one[1]) / max(two[0] - one[0], 1e-9)
        last = (self.n - two[1]) / max(now - two[0], 1e-9)
        if SPEEDING_UP * last < first and spent <= PROBE_END:
            return  # a stall after a fast start (the first steps collapsing, an event handled)
        # growing: SPEEDING_UP over two thirds, or its root over the last (after a stall)
        growing = last > SPEEDING_UP * first or last**2 > SPEEDING_UP * middle**2
        if growing and now - self.opened < PROBE_LIMIT:
            if spent > PROBE_END:  # still leaving its transient: judged on a later window
                del window[: next(i for i, r in enumerate(window) if r[0] >= now - PROBE_SECONDS)]
            return
        if spent > PROBE_END or now - self.opened >= PROBE_LIMIT:
            self.judging = False  # its last verdict
        estimate = np.inf if done <= 0 else left * spent / done
        if not estimate > validation.LONG_RUN:
            return
        self.judging = False
        raise InvalidParameter(
            f"the run would take about {duration_text(spent + estimate)} (more than the "
            f"long-run limit, {duration_text(validation.LONG_RUN)}): after {spent:.2g} s of "
            f"wall time it has integrated {done:.3g} s of "
            f"{self.total - self.t_start:g} s at a steady pace; {self.element} sets its steps "
            f"(its mode's period, and the rounding of the spring's force, which its error "
            f"estimate reads, shrink them); {self.ways}, or pass force=True to run it anyway"
        )


def fastest_mode(matrix: np.ndarray) -> tuple[float, np.ndarray]:
    """The spectral radius of ``matrix`` [1/s] and the eigenvector of that mode."""
    if matrix.size == 0:
        return 0.0, np.zeros(0)
    with np.errstate(all="ignore"):
        values, vectors = np.linalg.eig(matrix)
    if not np.all(np.isfinite(values)):
        return np.inf, np.ones(matrix.shape[0])
    k = int(np.argmax(np.abs(values)))
    return float(np.abs(values[k])), vectors[:, k]


def stiff_element(
    system: System, matrix: np.ndarray, open_loop: np.ndarray | None = None
) -> tuple[str, str]:
    """The element that sets the fastest mode of ``matrix`` (the linearised system at the
    start: ``[δq (nv), δv (nv), δ(component states)]``) and the ways out of its cost:
    ``(element, ways)``.

    With ``open_loop`` (the matrix with the law's inputs held), a mode the law makes at least
    twice faster is the law's gains. Otherwise the element that stores the most of the mode's
    potential energy, ``c |δ|²`` over its deflection δ in the mode shape: a joint spring or
    an elastic support's axis (``joint_stiffness``), or a drive's elastic transmission
    (δ the joint's angle less the motor's over the ratio).
    """
    nv = system.model.nv
    rho, shape = fastest_mode(matrix)
    if not shape.size or not np.isfinite(rho):
        return "a stiff element", "damp it or make it rigid"
    joints = np.abs(shape[:nv])
    if open_loop is not None and rho > 2.0 * fastest_mode(open_loop)[0]:
        k = int(np.argmax(joints)) if nv else 0
        return (
            f"the control law's gains (mode at {rho:.3g} rad/s, mostly joint "
            f"{dof_name(system, k)})",
            "lower or damp the gains, or sample the law at a period (control_period; the "
            "held loop's stability is checked at the start)",
        )
    robot = system.robot
    springs = np.asarray(robot.joint_stiffness, dtype=float)
    energies = [(float(springs[k] * joints[k] ** 2), k) for k in range(nv) if springs[k] > 0]
    best = max(energies, default=(0.0, -1))
    layout, base = system.layout, system.model.nq + nv
    motor = layout.get("drives.motor_angle")
    elastic = [
        (joint, drive)
        for joint, drive in system.drives.items()
        if getattr(drive.transmission, "stiffness", None) is not None
    ]
    drive_best: tuple[float, str, Any] = (0.0, "", None)
    if motor is not None and len(elastic) == motor.stop - motor.start:
        for i, (joint, drive) in enumerate(elastic):
            k = system.model.joints[system.model.getJointId(joint)].idx_v
            theta = shape[2 * nv + motor.start - base + i]
            c, ratio = drive.transmission.stiffness, drive.transmission.ratio
            energy = float(c * abs(shape[k] - theta / ratio) ** 2)
            if energy > drive_best[0]:
                drive_best = (energy, joint, drive)
    if drive_best[2] is not None and drive_best[0] >= best[0]:
        joint, drive = drive_best[1], drive_best[2]
        return (
            f"the elastic transmission of the drive on joint '{joint}' (stiffness "
            f"{drive.transmission.stiffness:g} N.m/rad, mode at {rho:.3g} rad/s)",
            "damp the transmission (ElasticTransmission damping), or make the drive rigid "
            "(a Gear: the rigid limit of a very stiff transmission)",
        )
    if best[1] < 0:
        k = int(np.argmax(joints)) if nv else 0
        return (
            f"the fastest mode ({rho:.3g} rad/s, mostly joint {dof_name(system, k)})",
            "damp the stiff element or make it rigid",
        )
    k = best[1]
    name = dof_name(system, k)
    support = getattr(robot, "support", None)
    if support is not None and name in support.joint_names:
        return (
            f"the elastic support's axis '{name}' (stiffness {springs[k]:g}, mode at "
            f"{rho:.3g} rad/s)",
            "damp the support (its damping), or leave it out (the rigid limit: the robot on "
            "its fixed base)",
        )
    return (
        f"the spring of joint '{name}' (joint_stiffness {springs[k]:g}, mode at {rho:.3g} rad/s)",
        "damp it (joint_damping), or leave the spring out or lock the joint (the rigid "
        "limit of a very stiff spring)",
    )
