"""Early detection of stiff runs: the spectrum of the linearised system at the initial state.

An explicit Runge–Kutta method is stable only while ``h |λ|`` stays inside its stability
region for every eigenvalue λ of the Jacobian of the right-hand side; for DOP853 that region
reaches about 6.1 along the negative real axis (the bound Hairer's DOP853 code itself uses for
its stiffness test, Hairer & Wanner 1996, *Solving Ordinary Differential Equations II*, §IV.2).
A run to ``t_final`` therefore needs at least ``t_final · ρ / 6.1`` steps, ρ the spectral radius,
whatever the tolerance. Measured at rest: a transmission with ``stiffness = 1e15`` gives
ρ ≈ 1e8 /s (2e7 steps per simulated second), a flexible link with E = 1e25 Pa ρ ≈ 6e9 /s, the
Allegro hand's light phalanges ρ ≈ 2e6 /s (3e5 steps/s), iCub's ρ ≈ 3e17 /s; a UR5 or a Panda
ρ < 100 /s. Implicit methods (``method="Radau"``) take steps that do not shrink with ρ.

:func:`estimate_stiffness` gives ρ at the initial state; :func:`dop853_steps` turns it into the
least number of DOP853 steps for a run; :func:`decaying_fast_modes` tells a run that is stiff in
the classical sense (fast modes that die out: damped transmissions, damped sublinks) from one
whose fast modes keep vibrating.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..validation import duration_text, refuse_long_run, thousands
from .chart import Chart
from .controls import as_control
from .rhs import make_rhs

if TYPE_CHECKING:
    from .system import System

#: Modulus of h λ at the edge of DOP853's stability region, as its stiffness test uses it [-].
DOP853_STABILITY_BOUND = 6.1
#: Least DOP853 steps a mode's stability would force over a run for it to count as fast [-].
FAST_STEPS = 100
#: Decay (in e-foldings over the run) of every fast mode for a run to start with Radau [-].
DECAY = 20.0
#: DOP853 steps forced by a lasting vibration above which the start of a run reports it.
VIBRATION_STEPS = 1e5
#: Wall time [s] of one DOP853 step (12 evaluations) of a small model on the compiled path, a
#: lower bound used to estimate how long a run forced to tiny steps takes.
STEP_SECONDS = 2e-5


def linearised_matrix(system: System, x0: np.ndarray, control: Any = None) -> np.ndarray:
    """The Jacobian ``∂f/∂x`` of the right-hand side at ``x0``, by central differences.

    The configuration is perturbed in the tangent space (``pin.integrate``), so the matrix
    acts on ``[δq (nv), δv (nv), δ(component states)]``; the two energy-bookkeeping entries
    are left out (they do not feed back).

    Args:
        system: The system.
        x0: Public state (the full layout, see :meth:`System.initial_state`).
        control: Inputs held during the linearisation (None: zero).

    Returns:
        Shape (n, n) with ``n = nx - nq + nv - 2``.
    """
    model = system.model
    nq, nv = model.nq, model.nv
    x0 = np.asarray(x0, dtype=float)
    n = system.nx - nq + nv - 2
    phase = system.initial_phase(0.0, x0)
    if system.euclidean:  # the chart is the identity: one right-hand side for every column
        f = make_rhs(system, phase, Chart(system, x0), as_control(control, system.n_inputs), None)

        def rhs(x: np.ndarray) -> np.ndarray:
            return f(0.0, x)[:n]

    else:

        def rhs(x: np.ndarray) -> np.ndarray:
            return system.derivative(0.0, x, control, phase)[:n]

    def rhs_rows(xs: np.ndarray) -> np.ndarray:
        return np.array([rhs(x) for x in xs]).reshape(len(xs), n)

    def moved(k: int, step: float) -> np.ndarray:
        x = x0.copy()
        if k < nv:
            delta = np.zeros(nv)
            delta[k] = step
            x[:nq] = pin.integrate(model, x0[:nq], delta)
        else:
            x[nq - nv + k] += step
        return x

    return central_differences(rhs_rows, moved, np.r_[np.zeros(nv), x0[nq : system.nx - 2]])


def central_differences(
    rhs_rows: Callable[[np.ndarray], np.ndarray],
    moved: Callable[[int, float], np.ndarray],
    scale: np.ndarray,
) -> np.ndarray:
    """The matrix whose column k is ``(f(moved(k, δ_k)) − f(moved(k, −δ_k))) / 2δ_k`` with
    ``δ_k = √ε max(1, |scale_k|)``; ``rhs_rows`` gives f at each row of a stack of states
    (the 2n moved states, in one call: one compiled call for every column)."""
    n = scale.size
    if n == 0:
        return np.empty((0, 0))
    steps = np.sqrt(np.finfo(float).eps) * np.maximum(1.0, np.abs(scale))
    f = rhs_rows(np.array([moved(k, s * steps[k]) for k in range(n) for s in (1.0, -1.0)]))
    return ((f[0::2] - f[1::2]) / (2.0 * steps[:, None])).T


def _compiled_matrix(system: System, x0: np.ndarray, control: Any = None) -> np.ndarray | None:
    """∂f/∂y of the initial phase's compiled right-hand side at ``x0`` (the inputs of
    ``control``, a law that compiles, else zero;
    :func:`central_differences` of :func:`pinext.compiled.phase.rhs_rows`, the only kernel
    it loads), or None when the phase is not compiled. On a chart (angles, rotation vectors
    anchored at ``x0``) y's coordinates are tangent ones at x0, so the spectrum is
    :func:`linearised_matrix`'s. The power integrals (the last two states, read by nothing)
    are left out, as :func:`linearised_matrix` leaves them out."""
    from .. import compiled  # imported here: pinext.compiled imports this package
    from ..compiled.phase import rhs_rows as compiled_rows
    from ..compiled.struct import view

    if not compiled.enabled():
        return None
    phase = system.initial_phase(0.0, x0)
    chart = Chart(system, x0)
    kernel = compiled.phase_kernel(system, phase, chart, as_control(control, system.n_inputs))
    if kernel is None:
        return None
    P = view(kernel)
    y0 = chart.to_internal(x0)
    n, nv = y0.size - 2, system.model.nv

    def rhs_rows(ys: np.ndarray) -> np.ndarray:
        out = np.empty_like(ys)
        compiled_rows(P, 0.0, ys, out)
        return out[:, :n]

    def moved(k: int, step: float) -> np.ndarray:
        y = y0.copy()
        y[k] += step
        return y

    return central_differences(rhs_rows, moved, np.r_[np.zeros(nv), y0[nv:n]])


def start_matrix(system: System, x0: np.ndarray, control: Any = None) -> np.ndarray:
    """The linearised system at ``x0``: the compiled phase's Jacobian when the phase (and
    ``control``) compile, else :func:`linearised_matrix`. ``control``: None (inputs zero) or
    a law evaluated continuously, whose gains then enter the matrix (closed loop)."""
    x0 = np.asarray(x0, dtype=float)
    matrix = _compiled_matrix(system, x0, control)
    return linearised_matrix(system, x0, control) if matrix is None else matrix


def spectrum(system: System, x0: np.ndarray | None = None, control: Any = None) -> np.ndarray:
    """The eigenvalues of the linearised system at the initial state [1/s]
    (:func:`start_matrix`; held inputs zero, or the closed loop of a continuous ``control``).

    Args:
        system: The system.
        x0: Public initial state; default ``system.initial_state()`` (rest, neutral).
        control: A continuous law whose gains enter the linearisation, or None.
    """
    if x0 is None:
        x0 = system.initial_state()
    return eigenvalues_of(start_matrix(system, x0, control))


def eigenvalues_of(matrix: np.ndarray) -> np.ndarray:
    """The eigenvalues of a linearised system [1/s] (none for an empty one)."""
    if matrix.size == 0:
        return np.zeros(0, dtype=complex)
    with np.errstate(all="ignore"):
        return np.linalg.eigvals(matrix)


def estimate_stiffness(system: System, x0: np.ndarray | None = None) -> float:
    """The spectral radius ρ of the linearised system at the initial state [1/s].

    ρ = max |λ| over the eigenvalues of the linearised system (:func:`spectrum`). With
    DOP853, every step is at most ``6.1 / ρ`` (:data:`DOP853_STABILITY_BOUND`) once the fast
    modes are excited, and usually long before; see :func:`dop853_steps`.

    Args:
        system: The system.
        x0: Public initial state; default ``system.initial_state()`` (rest, neutral).

    Returns:
        ρ [1/s]; 0 for a system at rest without stiffness or gravity.
    """
    eigenvalues = spectrum(system, x0)
    return float(np.abs(eigenvalues).max()) if eigenvalues.size else 0.0


def decaying_fast_modes(eigenvalues: np.ndarray, t_final: float) -> bool:
    """Whether the run is stiff in the classical sense (Hairer & Wanner 1996, §IV.1): it has
    fast modes, and every one of them dies out early in the run.

    A mode is fast when DOP853's stability alone would need more than :data:`FAST_STEPS`
    steps for it over the run (``t_final |λ| / 6.1``); it dies out when its transient decays
    by ``exp(−DECAY)`` within the run (``−Re λ · t_final ≥ DECAY``). Such modes need not be
    resolved, only kept stable: an implicit method's steps then follow the slow motion. An
    undamped vibration (flexible links) is fast but never dies out: it has to be resolved,
    which DOP853 does at fewer evaluations.
    """
    if not eigenvalues.size or t_final <= 0:
        return False
    fast = np.abs(eigenvalues) * t_final / DOP853_STABILITY_BOUND > FAST_STEPS
    return bool(fast.any() and np.all(-eigenvalues[fast].real * t_final >= DECAY))


def unresolvable_vibrations(eigenvalues: np.ndarray, t_final: float) -> tuple[float, float]:
    """The fastest vibration that does not die out over the run, and the DOP853 steps its
    stability alone forces: ``(frequency [Hz], steps [-])``, (0, 0) without one.

    A mode vibrates and stays when it is oscillatory (``|Im λ| > |Re λ|``) and does not decay
    by ``exp(−DECAY)`` within the run. No method can skip it: an explicit one must keep
    ``h |λ|`` inside its stability region, an implicit one must follow the oscillation to
    keep its accuracy. Damping (``damping_ratio`` of a flexible link, a transmission's
    damping), a rigid gear, or the rigid model (the singular-perturbation limit of a very
    stiff spring) removes it.
    """
    if not eigenvalues.size or t_final <= 0:
        return 0.0, 0.0
    lasting = (np.abs(eigenvalues.imag) > np.abs(eigenvalues.real)) & (
        -eigenvalues.real * t_final < DECAY
    )
    if not lasting.any():
        return 0.0, 0.0
    fastest = np.abs(eigenvalues[lasting]).max()
    return float(fastest / (2.0 * np.pi)), float(t_final * fastest / DOP853_STABILITY_BOUND)


#: DOP853 steps per radian of an excited undamped oscillation, times ``rtol^(1/8)``: its local
#: error grows as (h ω)^8 per step, so the steps follow ``rtol^(-1/8)``; measured with scipy's
#: DOP853 on a harmonic oscillator (1.02, 1.78 and 3.14 steps per radian at rtol 1e-6, 1e-8
#: and 1e-10, amplitudes 1 and 1e-3) [-].
EXCITED_STEPS_PER_RADIAN = 1.0 / 5.6


def excited_steps(frequency: float, t_final: float, rtol: float) -> float:
    """The DOP853 steps that following an excited undamped vibration of ``frequency`` [Hz]
    over ``t_final`` [s] takes at ``rtol`` where the vibration sets the error's scale (a
    harmonic oscillator): ``2π f t_final rtol^(-1/8) / 5.6`` (:data:`EXCITED_STEPS_PER_RADIAN`),
    about 20 × the stability bound at rtol 1e-10. Where other states set the scale (a slow
    motion with a small vibration on it) fewer steps do: an upper estimate."""
    return 2.0 * np.pi * frequency * t_final * EXCITED_STEPS_PER_RADIAN * rtol ** (-1.0 / 8.0)


def dop853_steps(system: System, t_final: float, x0: np.ndarray | None = None) -> float:
    """The least number of steps DOP853's stability allows for a run to ``t_final`` [-].

    ``t_final · ρ / 6.1``. Above about 1e6 (an hour of compiled DOP853 on a large model) a
    caller should switch to, or recommend, ``method="Radau"``.
    """
    return float(t_final) * estimate_stiffness(system, x0) / DOP853_STABILITY_BOUND


def report_vibration(
    eigenvalues: np.ndarray,
    t_final: float,
    rtol: float,
    force: bool = False,
    element: tuple[str, str] | None = None,
) -> None:
    """Warn at the start of a run about a vibration that no method can skip
    (:func:`unresolvable_vibrations`) when it forces more than :data:`VIBRATION_STEPS` steps,
    with the steps its stability alone forces and those that following it takes once the
    motion excites it (:func:`excited_steps`, ~20 × more at rtol 1e-10); refuse the run
    (unless ``force``) when the
    stability's steps alone take longer than :data:`pinext.validation.LONG_RUN` at
    :data:`STEP_SECONDS` each. ``element``: the stiff element and the ways out of its cost
    (:func:`pinext.simulation.cost.stiff_element`), named in the message."""
    frequency, steps = unresolvable_vibrations(eigenvalues, t_final)
    remedy = (
        "damp it (a flexible link's damping_ratio, a transmission's damping), make the gear "
        "rigid, or use the rigid model (the limit of a very stiff spring)"
    )
    source = ""
    if element is not None:  # the stiff element that sets it (pinext.simulation.cost)
        source, remedy = f" ({element[0]})", element[1]
    refuse_long_run(
        f"an undamped vibration at {frequency:.3g} Hz{source} lasts the whole run: resolving "
        f"it takes at least {thousands(steps)} steps for {t_final:g} s",
        steps * STEP_SECONDS,
        force=force,
        hint=remedy,
    )
    if steps > VIBRATION_STEPS:
        excited = excited_steps(frequency, t_final, rtol)
        warnings.warn(
            f"an undamped vibration at {frequency:.3g} Hz lasts the whole run: resolving it "
            f"takes at least {steps:.2g} steps ({12 * steps:.2g} evaluations) for "
            f"{t_final:g} s with any method, and up to about {excited:.2g} steps "
            f"({12 * excited:.2g} evaluations, ~{duration_text(excited * STEP_SECONDS)} or "
            f"more) once the motion excites it (rtol {rtol:g}). To remove it: {remedy}",
            RuntimeWarning,
            stacklevel=3,
        )
