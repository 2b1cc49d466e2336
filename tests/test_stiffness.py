"""estimate_stiffness: the spectral radius of the linearised system, against closed forms and
Pinocchio's computeABADerivatives.

Every tolerance follows from a law stated where it is used: the matrix from the error of central
differences (truncation, rounding of the step, rounding of the evaluations), an eigenvalue from
its condition (first-order perturbation theory and LAPACK's backward error), the DOP853 bounds
from Hairer's code and the Butcher tableau scipy integrates with."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg
from scipy.integrate import DOP853
from scipy.optimize import brentq

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission
from pinext.simulation.stiffness import (
    dop853_steps,
    estimate_stiffness,
    linearised_matrix,
    unresolvable_vibrations,
)
from tests.conftest import URDF, pendulum_urdf

EPS = np.finfo(float).eps
#: |h λ| at which Hairer's DOP853 declares a problem stiff (dop853.f: ``HLAMB .GT. 6.1D0``),
#: the bound the documentation gives DOP853's stability (docs/validation.md: t |λ| / 6.1).
HAIRER_BOUND = 6.1
#: The start's classification, as documented (docs/validation.md): a mode is fast when DOP853's
#: stability alone needs more than 100 steps for it over the run, and it dies out when
#: −Re λ · t_final ≥ 20.
FAST = 100
DIES_OUT = 20.0
#: Least DOP853 steps for a run above which a caller switches to Radau (dop853_steps: "above
#: about 1e6"; simulate's STIFF_STEPS).
STIFF = 1e6


def _dop853_real_stability_bound() -> float:
    """The edge of DOP853's stability region on the negative real axis: the root of
    |R(−x)| = 1, R(z) = 1 + z bᵀ (I − z A)⁻¹ 𝟙 the stability function of the Butcher tableau
    (A, b) scipy's DOP853 integrates with (6.39: Hairer's 6.1 lies inside)."""

    def gain(x: float) -> float:
        stages = np.linalg.solve(np.eye(DOP853.n_stages) + x * DOP853.A, np.ones(DOP853.n_stages))
        return abs(1.0 - x * DOP853.B @ stages) - 1.0

    return brentq(gain, 5.0, 7.0, xtol=1e-12)


def _eigen_tolerance(matrix: np.ndarray, error: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eigenvalues of ``matrix`` and how far each may move when the matrix is perturbed by
    at most ``error`` entrywise and its eigenvalues are computed in floating point.

    A simple eigenvalue λ (right and left eigenvectors x, y) of A + ΔA is
    λ + yᴴ ΔA x / yᴴx + O(‖ΔA‖²) (Wilkinson), so it moves by at most |y|ᵀ |ΔA| |x| / |yᴴx|, a
    bound that does not change with the units of the states (diagonal scaling). LAPACK's geev
    (numpy's eigvals) balances the matrix, B = T⁻¹ A T, and is backward stable for B: the
    eigenvalues of B + F, ‖F‖_F ≤ n ε ‖B‖_F, which moves λ by ‖x‖‖y‖/|yᴴx| · n ε ‖B‖_F
    (LAPACK Users' Guide §4.8, with p(n) = n). Defective eigenvalues get an infinite bound.
    """
    balanced, scaling = scipy.linalg.matrix_balance(matrix)
    moved = np.abs(np.linalg.solve(scaling, error @ scaling))  # |T⁻¹ ΔA T| for ΔA ≤ error
    values, left, right = scipy.linalg.eig(balanced, left=True, right=True)
    n = len(values)
    tolerance = np.empty(n)
    for i in range(n):
        x, y = right[:, i], left[:, i]
        overlap = abs(np.vdot(y, x))
        perturbation = np.abs(y) @ moved @ np.abs(x)
        backward = np.linalg.norm(x) * np.linalg.norm(y) * n * EPS * np.linalg.norm(balanced)
        tolerance[i] = (perturbation + backward) / overlap if overlap > 0 else np.inf
    return values, tolerance


def _radius_tolerance(matrix: np.ndarray, error: np.ndarray) -> tuple[float, float]:
    """ρ = max |λ| of ``matrix`` and its tolerance under :func:`_eigen_tolerance`: the largest
    bound among the eigenvalues of modulus above ρ/2, the only ones that can become the largest
    (the others, rigid-body modes among them, a defective 0, move by O(‖ΔA‖^½), far less)."""
    values, tolerance = _eigen_tolerance(matrix, error)
    rho = float(np.abs(values).max())
    return rho, float(tolerance[np.abs(values) > rho / 2].max())


def _linear_error(matrix: np.ndarray) -> np.ndarray:
    """Entrywise bound on the error of central differences of a right-hand side that is
    linear at the state they are taken at (a spring, a damper, a rigid link without gravity at
    rest): f(x₀ ± δ e_k) = ±δ A e_k exactly, no truncation; each entry is a sum of at most n
    products, one division by an inertia, and the difference quotient: rounding bounded by
    (n + 2) ε |A_ik| (Higham's γ_n)."""
    return (len(matrix) + 2) * EPS * np.abs(matrix)


def _assert_entrywise(matrix: np.ndarray, reference: np.ndarray, bound: np.ndarray) -> None:
    """Every entry of ``matrix`` within ``bound`` of ``reference``; the message names the worst."""
    excess = np.abs(matrix - reference) - bound
    i, k = np.unravel_index(excess.argmax(), excess.shape)
    within = bool(excess[i, k] <= 0.0)
    assert within, (
        f"entry ({i}, {k}): {matrix[i, k]:.9g} against {reference[i, k]:.9g}, error "
        f"{abs(matrix[i, k] - reference[i, k]):.3g} > bound {bound[i, k]:.3g}"
    )


def _rigid_reference(
    model: pin.Model, q: np.ndarray, v: np.ndarray, stiffness: np.ndarray, damping: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pinocchio's linearisation of ẋ = (v, a), a = ABA(q, v, τ), τ = −K (q ⊖ q_neutral) − D v
    (springs and dampers on Euclidean DOFs), in the tangent space at q (q ⊕ δ, Pinocchio's
    convention for ``computeABADerivatives``, whose derivatives hold τ fixed: the springs and
    dampers add M⁻¹ ∂τ/∂x):  [[0, I], [∂a/∂q − M⁻¹ K, ∂a/∂v − M⁻¹ D]].  Also the size of the
    terms ABA combines, |M⁻¹| (|τ| + |nle(q, v)|) (nle: Coriolis and gravity)."""
    nv = model.nv
    data = model.createData()
    tau = -stiffness * pin.difference(model, pin.neutral(model), q) - damping * v
    pin.computeABADerivatives(model, data, q, v, tau)
    inverse = np.triu(data.Minv) + np.triu(data.Minv, 1).T  # whether or not the lower is filled
    reference = np.block(
        [
            [np.zeros((nv, nv)), np.eye(nv)],
            [data.ddq_dq - inverse * stiffness, data.ddq_dv - inverse * damping],
        ]
    )
    terms = np.abs(inverse) @ (np.abs(tau) + np.abs(pin.nonLinearEffects(model, data, q, v)))
    return reference, terms


def _rigid_error(
    model: pin.Model, q: np.ndarray, v: np.ndarray, stiffness: np.ndarray, damping: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(reference, bound): :func:`_rigid_reference` and an entrywise bound on the error of
    central differences of f = (v, a) with the documented steps δ_k = √ε max(1, |x_k|)
    (:func:`pinext.simulation.stiffness.central_differences`; x = (0, v), the tangent
    coordinates of q being 0 at q):

    * truncation δ_k² |∂³f_i/∂x_k³| / 6, the third derivative from second differences of
      Pinocchio's analytical column ∂f/∂x_k at x ± H e_k, H = 1e-3 (their own error,
      O(H² f⁽⁵⁾), is far below);
    * the step: x_k ± δ_k is rounded, so the step taken differs by up to ε |x_k|: a relative
      error ε |x_k| / δ_k of the column;
    * the evaluations: each f_i is off by up to η_i = nv ε s_i (ABA sums terms of size s =
      |M⁻¹|(|τ| + |nle|) through recursions of depth ≤ nv; s_i = |v_i| in the velocity rows),
      which the quotient divides by δ_k.
    """
    nv = model.nv
    reference, terms = _rigid_reference(model, q, v, stiffness, damping)
    x = np.r_[np.zeros(nv), v]
    steps = np.sqrt(EPS) * np.maximum(1.0, np.abs(x))
    H = 1e-3
    third = np.empty_like(reference)
    for k in range(2 * nv):
        e = np.zeros(nv)
        e[k % nv] = H
        if k < nv:
            plus = _rigid_reference(model, pin.integrate(model, q, e), v, stiffness, damping)[0]
            minus = _rigid_reference(model, pin.integrate(model, q, -e), v, stiffness, damping)[0]
        else:
            plus = _rigid_reference(model, q, v + e, stiffness, damping)[0]
            minus = _rigid_reference(model, q, v - e, stiffness, damping)[0]
        third[:, k] = np.abs(plus[:, k] - 2.0 * reference[:, k] + minus[:, k]) / H**2
    rounding = nv * EPS * np.r_[np.abs(v), terms]
    bound = (
        steps**2 / 6.0 * third
        + EPS * np.abs(x) / steps * np.abs(reference)
        + rounding[:, None] / steps[None, :]
    )
    return reference, bound


def _link(tmp_path, stiffness: float, damping: float) -> tuple[px.Robot, float]:
    path = tmp_path / "link.urdf"
    path.write_text(pendulum_urdf(n=1, length=0.5, mass=2.0))
    robot = px.load_urdf(path)
    robot.model.gravity.linear[:] = 0.0
    robot.joint_stiffness[:] = stiffness
    robot.joint_damping[:] = damping
    inertia = pin.crba(robot.model, robot.model.createData(), robot.neutral())[0, 0]
    return robot, inertia


def _spring_matrix(K: float, D: float, J: float) -> np.ndarray:
    """The link on a spring and a damper, J q̈ + D q̇ + K q = 0, as ẋ = A x, x = (q, q̇)."""
    return np.array([[0.0, 1.0], [-K / J, -D / J]])


def test_undamped_spring_gives_its_natural_frequency(tmp_path):
    """ρ = √(K/J) (the roots ±i√(K/J) of J s² + K); tolerance: the condition of the eigenvalue
    under central differences of a linear right-hand side (:func:`_linear_error`) plus 2 ε ρ
    for evaluating the closed form."""
    K = 4.0e3
    robot, J = _link(tmp_path, stiffness=K, damping=0.0)
    A = _spring_matrix(K, 0.0, J)
    _, tolerance = _radius_tolerance(A, _linear_error(A))
    rho = np.sqrt(K / J)
    assert estimate_stiffness(px.System(robot)) == pytest.approx(rho, abs=tolerance + 2 * EPS * rho)


def test_overdamped_spring_gives_its_fast_decay_rate(tmp_path):
    """ρ = the fast root (D + √(D² − 4KJ)) / 2J of J s² + D s + K (no cancellation in the +
    branch: 4 ε ρ for evaluating it), to the condition of that eigenvalue."""
    K, D = 4.0e3, 5.0e2
    robot, J = _link(tmp_path, stiffness=K, damping=D)
    A = _spring_matrix(K, D, J)
    _, tolerance = _radius_tolerance(A, _linear_error(A))
    fast = (D + np.sqrt(D**2 - 4 * K * J)) / (2 * J)
    assert estimate_stiffness(px.System(robot)) == pytest.approx(
        fast, abs=tolerance + 4 * EPS * fast
    )


def test_very_stiff_transmission_asks_dop853_for_millions_of_steps(tmp_path):
    """A link behind a transmission of 1e15 N.m/rad rings at the two-inertia closed form
    ω² = c (1/J_link + 1/(N² J_m)): ρ = ω, to the condition of ±iω in the two-mass matrix
    under central differences of a linear right-hand side. ``dop853_steps`` is t ρ / 6.1
    (Hairer's bound: rounding only), and never fewer than the stability edge of scipy's
    DOP853 tableau (6.39) demands."""
    robot, J_link = _link(tmp_path, stiffness=0.0, damping=0.0)
    c, N = 1e15, 50.0
    drive = Drive(DCMotor(1.0, 0.05, 0.0, 3e-5), ElasticTransmission(N, c, input_inertia=1e-5))
    system = px.System(robot, drives={"j0": drive})
    J_m = 3e-5 + 1e-5  # rotor and transmission input [kg.m^2]
    two_mass = np.array(  # (q, q̇, rotor angle, rotor speed); the back-EMF constant is 0
        [
            [0.0, 1.0, 0.0, 0.0],
            [-c / J_link, 0.0, c / (N * J_link), 0.0],
            [0.0, 0.0, 0.0, 1.0],
            [c / (N * J_m), 0.0, -c / (N**2 * J_m), 0.0],
        ]
    )
    _, tolerance = _radius_tolerance(two_mass, _linear_error(two_mass))
    resonance = np.sqrt(c * (1 / J_link + 1 / (N**2 * J_m)))
    rho = estimate_stiffness(system)
    assert rho == pytest.approx(resonance, abs=tolerance + 4 * EPS * resonance)
    steps = dop853_steps(system, 1.0)
    assert steps == pytest.approx(rho / HAIRER_BOUND, rel=2 * EPS)
    assert steps >= rho / _dop853_real_stability_bound()
    assert steps > 1e7  # for one simulated second


def test_matrix_matches_aba_derivatives_away_from_rest():
    """The planar 3R arm at a random state: the matrix against Pinocchio's
    computeABADerivatives, entry by entry to the central-difference error of
    :func:`_rigid_error`; ρ against the reference's to its eigenvalues' condition."""
    robot = px.load_urdf(URDF / "planar3r.urdf")
    system = px.System(robot)
    rng = np.random.default_rng(7)
    q, v = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    x0 = system.initial_state(q, v)
    zero = np.zeros(robot.nv)
    reference, error = _rigid_error(robot.model, q, v, zero, zero)
    matrix = linearised_matrix(system, x0)
    _assert_entrywise(matrix, reference, error)
    rho, tolerance = _radius_tolerance(reference, error)
    assert estimate_stiffness(system, x0) == pytest.approx(rho, abs=tolerance)


def test_floating_base_is_linearised_in_the_tangent_space(tmp_path):
    """A two-link pendulum on a free-flying base, springs and dampers in its joints, under
    gravity. At a random state (base orientation, joint angles, velocities), the matrix
    against Pinocchio's computeABADerivatives, whose ∂a/∂q is along q ⊕ δ (``pin.integrate``:
    the base's tangent space, 6 columns, not the 7 coordinates of q), entry by entry to the
    central-difference error of :func:`_rigid_error`. At rest in the same configuration, ρ
    (the faster joint vibration) against the reference's to its condition: there the compiled
    path's chart (world position, rotation vector) is an orthogonal change of coordinates of
    Pinocchio's tangent space, which keeps both the spectrum and the 2-norm of the error."""
    base = (
        '<link name="base"><inertial><mass value="3"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>'
    )
    path = tmp_path / "floating.urdf"
    path.write_text(pendulum_urdf(n=2).replace('<link name="base"/>', base))
    robot = px.load_urdf(path, root_joint="freeflyer")
    model = robot.model
    stiffness = np.r_[np.zeros(6), 300.0, 200.0]
    damping = np.r_[np.zeros(6), 0.5, 0.3]
    robot.joint_stiffness[:] = stiffness
    robot.joint_damping[:] = damping
    system = px.System(robot)
    rng = np.random.default_rng(3)
    pin.seed(5)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    v = rng.standard_normal(model.nv)
    reference, error = _rigid_error(model, q, v, stiffness, damping)
    matrix = linearised_matrix(system, system.initial_state(q, v))
    assert matrix.shape == reference.shape == (2 * model.nv, 2 * model.nv)
    _assert_entrywise(matrix, reference, error)
    at_rest = np.zeros(model.nv)
    reference, error = _rigid_error(model, q, at_rest, stiffness, damping)
    rho, tolerance = _radius_tolerance(reference, error)
    assert estimate_stiffness(system, system.initial_state(q, at_rest)) == pytest.approx(
        rho, abs=tolerance
    )


def test_simulate_switches_to_radau_when_stiff_from_the_start(tmp_path, monkeypatch, caplog):
    """A transmission of 1e15 N.m/rad: the default method becomes Radau (an INFO record of the
    ``pinext`` logger, no warning) and the run finishes; an explicit DOP853 is kept, with the
    advice (a warning: the user chose the method)."""
    robot, _ = _link(tmp_path, 0.0, 0.0)
    motor = DCMotor(1.0, 0.05, 0.05, 1e-5)
    system = px.System(robot, drives={"j0": Drive(motor, ElasticTransmission(50.0, 1e15))})
    with warnings.catch_warnings(), caplog.at_level("INFO", logger="pinext"):
        warnings.simplefilter("error")
        traj = px.simulate(system, 0.5)
    assert "integrating with method='Radau'" in caplog.text
    assert traj.meta["stats"]["method"] == "Radau"
    assert traj.t[-1] == 0.5
    # an explicit DOP853 is kept (a short run, with the threshold lowered to reach it)
    monkeypatch.setattr(sys.modules["pinext.simulation.simulate"], "STIFF_STEPS", 10.0)
    with pytest.warns(RuntimeWarning, match="stiff from the start"):
        traj = px.simulate(system, 1e-6, control=[1.0], method="DOP853")
    assert traj.meta["stats"]["method"] == "DOP853"


def test_python_path_keeps_dop853_where_radau_has_no_analytic_jacobian(robots_dir, monkeypatch):
    """On the Python path a phase with constraint rows (the Allegro hand's joints stuck by
    their URDF friction) gives scipy's Radau no analytic Jacobian: it estimates one by finite
    differences, again whenever Newton stalls (5 980 of them in 6 118 steps, 165 000
    evaluations). DOP853's stiffness test fires at 0.84 s, but its stability needs only
    t ρ / 6.1 ≈ 2 700 steps for the run (Hairer's bound), far below the 1e6 at which a run
    switches: DOP853 keeps the run."""
    from tests.models import assert_sound_run, random_pose

    monkeypatch.setenv("PINEXT_NO_COMPILED", "1")
    path = next(robots_dir.rglob("allegro_left_hand.urdf"))
    robot = px.load_urdf(path, package_dirs=[str(path.parents[2])])
    q0 = random_pose(robot.model, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = px.simulate(robot, 2.0, q0=q0, progress=False)
    stats = traj.meta["stats"]
    assert 2.0 * stats["spectral_radius"] / HAIRER_BOUND < STIFF
    assert stats["method"] == "DOP853" and stats["switched_to_radau_at"] is None
    assert stats["compiled_segments"] == 0
    assert_sound_run(robot.model, traj)


@pytest.mark.parametrize(
    ("damping", "t_final"),
    [
        (2.0, 1.0),
        (2.0, 0.01),
        (0.05, 1.0),
        (0.0, 1.0),
        (0.5, 1.0),
        (0.5, 0.05),
        (60.0, 0.15),
        (40.0, 0.15),
    ],
)
def test_decaying_fast_modes_against_the_closed_form(tmp_path, damping, t_final):
    """A link on a spring and a damper, J q̈ + c q̇ + k q = 0: the eigenvalues are the roots
    s = (−c ± i √(4kJ − c²)) / 2J of J s² + c s + k (to their condition under central
    differences of a linear right-hand side, and 4 ε |s| for the closed form). The run is
    classed stiff exactly when a root is fast (t_final |s| / 6.1 > 100) and every fast root
    decays by e^-20 within the run (the documented bounds, docs/validation.md). The cases sit
    on both sides of both bounds (803, 121, 40 and 8 steps; 27, 18, 6 and fewer e-foldings); a
    stiff class makes simulate start with Radau, the other keeps DOP853 (the choice is made from
    the start's spectrum: the run starts at rest, where it costs a few steps)."""
    from pinext.simulation.stiffness import decaying_fast_modes, spectrum

    k = 4.0e6
    robot, J = _link(tmp_path, stiffness=k, damping=damping)
    roots = (-damping + np.array([1j, -1j]) * np.sqrt(4 * k * J - damping**2)) / (2 * J)
    fast = np.abs(roots) * t_final / HAIRER_BOUND > FAST
    expected = bool(fast.any() and np.all(-roots[fast].real * t_final >= DIES_OUT))
    A = _spring_matrix(k, damping, J)
    values, tolerance = _eigen_tolerance(A, _linear_error(A))
    system = px.System(robot)
    eigenvalues = spectrum(system)
    for root in roots:  # each root has an eigenvalue within its bound
        i = np.argmin(np.abs(values - root))
        distance = np.abs(eigenvalues - root).min()
        assert distance <= tolerance[i] + 4 * EPS * abs(root), (root, eigenvalues)
    assert decaying_fast_modes(eigenvalues, t_final) is expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run = px.simulate(system, t_final, q0=np.zeros(1), rtol=1e-6)
    assert run.meta["stats"]["method"] == ("Radau" if expected else "DOP853")


def test_an_undamped_vibration_too_fast_to_resolve_is_reported_at_the_start(tmp_path):
    """An undamped elastic transmission of 1e11 N.m/rad on a pendulum rings at
    ``ω² = k (1 / (J_rotor n²) + 1 / J_link)``: the start of the run says so, with its
    frequency, before any step is taken (the control law stops the run at its first call).
    The frequency is printed to 3 significant digits: it lies within half a unit of the third
    digit of the closed form."""

    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(1))
    motor = DCMotor(
        resistance=200.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    system = px.System(
        px.load_urdf(path), drives={"j0": Drive(motor, ElasticTransmission(50.0, 1e11, 0.0))}
    )
    robot = px.load_urdf(path)
    link = pin.crba(robot.model, robot.data, np.zeros(1))[0, 0]  # [kg.m^2]
    rotor = 1e-5 * 50.0**2  # reflected to the joint [kg.m^2]
    expected = np.sqrt(1e11 * (1 / rotor + 1 / link)) / (2 * np.pi)  # two masses, one spring

    class Stop(Exception):
        pass

    def law(t, x):
        if t > 0.0:  # past the checks at the start
            raise Stop
        return np.zeros(1)

    with pytest.warns(RuntimeWarning, match="undamped vibration at") as caught:
        with pytest.raises(Stop):
            px.simulate(system, 1.0, control=law)
    assert unresolvable_vibrations(np.array([-1.0 + 1e3j, -1.0 - 1e3j]), 1.0)[1] > 0
    assert unresolvable_vibrations(np.array([-1e4 + 1e3j, -1e4 - 1e3j]), 1.0) == (0.0, 0.0)
    message = next(str(w.message) for w in caught if "undamped" in str(w.message))
    frequency = float(message.split("vibration at ")[1].split(" Hz")[0])
    half_digit = 0.5 * 10.0 ** (np.floor(np.log10(expected)) - 2)
    assert abs(frequency - expected) <= half_digit


def test_an_excited_vibration_takes_between_the_reported_bounds(tmp_path):
    """A pendulum behind an undamped elastic transmission (k = 1e6 N.m/rad), started with the
    link moving and the rotor at rest, rings at its two-mass frequency f. DOP853's stability
    needs at least ``2π f T / 6.1`` steps (Hairer's bound); the start of a run reports up to
    about ``excited_steps`` once the vibration is excited (its local error grows as (h ω)^8,
    calibrated where the vibration sets the error's scale: a harmonic oscillator). The steps
    taken lie between the two at rtol 1e-8 and 1e-10 (20 % margin on the upper one, its
    calibration's spread)."""
    from pinext.simulation.stiffness import excited_steps

    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(1))
    robot = px.load_urdf(path)
    motor = DCMotor(
        resistance=200.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    link = pin.crba(robot.model, robot.data, np.zeros(1))[0, 0]
    frequency = np.sqrt(1e6 * (1 / (1e-5 * 50.0**2) + 1 / link)) / (2 * np.pi)
    t_final = 0.05
    least = 2 * np.pi * frequency * t_final / HAIRER_BOUND
    for rtol in (1e-8, 1e-10):
        system = px.System(robot, drives={"j0": Drive(motor, ElasticTransmission(50.0, 1e6, 0.0))})
        run = px.simulate(
            system, t_final, q0=np.zeros(1), v0=np.ones(1), rtol=rtol, method="DOP853"
        )
        steps = run.meta["stats"]["nfev"] / 12
        assert least < steps < 1.2 * excited_steps(frequency, t_final, rtol), (rtol, steps)
