"""The drives' efforts and state derivatives in closed form (``DriveComponent.linear_terms``):
equal to the engine's numerical identification (:func:`pinext.simulation.linear.identify`,
an independent reference) and to the drives' own evaluation at random states, for seeded
random drive parameters; :func:`pinext.linearize` then takes them without identifying, and
still equals the central difference of the right-hand side; a component without them falls
back to the identification."""

from __future__ import annotations

import importlib

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission, Gear
from pinext.drives.base import Actuator
from pinext.exceptions import InvalidParameter
from pinext.linear_models import STEP_ERROR
from pinext.simulation.linear import component_forces, identify

from .test_linearization import _agree

linearize_module = importlib.import_module("pinext.linear_models.linearize")

KINDS = ("rigid", "elastic", "mixed")


def random_drive(rng: np.random.Generator, elastic: bool, limited: bool) -> Drive:
    """A DC motor (with or without inductance, friction and a voltage limit; C_E ≠ C_M) on
    a rigid gear or a damped elastic transmission, its parameters drawn from ``rng``."""
    cm = rng.uniform(0.02, 0.2)
    motor = DCMotor(
        rng.uniform(0.3, 3.0),
        cm,
        cm * rng.uniform(0.9, 1.1),
        rng.uniform(1e-6, 1e-4),
        inductance=rng.choice([0.0, rng.uniform(1e-4, 1e-2)]),
        viscous_friction=rng.choice([0.0, rng.uniform(0.0, 1e-4)]),
        voltage_limit=rng.uniform(2.0, 10.0) if limited else None,
    )
    ratio = rng.choice([-1.0, 1.0]) * rng.uniform(10.0, 150.0)
    inertia = {"input_inertia": rng.uniform(0, 1e-5), "output_inertia": rng.uniform(0, 1e-3)}
    if elastic:
        stiffness, damping = rng.uniform(500.0, 1e4), rng.uniform(0.0, 5.0)
        return Drive(motor, ElasticTransmission(ratio, stiffness, damping, **inertia))
    return Drive(motor, Gear(ratio, **inertia))


def random_system(robot: px.Robot, joints: list[str], kind: str, seed: int) -> px.System:
    rng = np.random.default_rng(seed)
    elastic = {"rigid": [False], "elastic": [True], "mixed": [False, True]}[kind]
    drives = {
        j: random_drive(rng, bool(rng.choice(elastic)), limited=k % 2 == seed % 2)
        for k, j in enumerate(joints)
    }
    return px.System(robot, drives=drives, mimic=False, joint_limits=False)


def states(system: px.System, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(x, u) from pin.neutral and two random configurations: motors near θ = N q, random
    currents, inputs inside and beyond the voltage limits."""
    rng = np.random.default_rng(seed)
    drives = system.components[0]
    bounds = system.input_bounds
    out = []
    for q in (pin.neutral(system.model), *(pin.randomConfiguration(system.model) for _ in "ab")):
        v = rng.uniform(-1, 1, system.model.nv)
        x = system.initial_state(q, v)
        if drives.elastic.size:
            n, joints = drives.ratio[drives.elastic], drives.iv[drives.elastic]
            deflection = rng.uniform(-0.01, 0.01, n.size)
            x[system.layout["drives.motor_angle"]] = n * (q[joints] + deflection)
            x[system.layout["drives.motor_velocity"]] = n * v[joints] + rng.uniform(-1, 1, n.size)
        currents = system.layout.get("drives.current", slice(0))
        x[currents] = rng.uniform(-1, 1, x[currents].size)
        u = rng.uniform(-10, 10, bounds.size)
        limited = np.flatnonzero(np.isfinite(bounds))  # alternately inside and beyond
        sign = rng.choice([-1.0, 1.0], limited.size)
        u[limited] = sign * bounds[limited] * np.where(np.arange(limited.size) % 2, 1.5, 0.5)
        out.append((x, u))
    return out


def check(system: px.System, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    drives = system.components[0]
    x0, u0 = states(system, seed)[0]
    phase = system.initial_phase(0.0, x0, u0)
    terms = drives.linear_terms(phase.get("drives"))
    reference = identify(system, phase).a  # numerical, at unit steps
    scale = np.abs(reference).max(axis=1, keepdims=True)
    assert terms.shape == reference.shape
    assert np.all(np.abs(terms - reference) <= 1e-10 * scale)
    bounds = system.input_bounds
    for x, u in states(system, seed):
        z = np.concatenate((x[:-2], u, [1.0]))
        own = component_forces(system, phase, z)[:-2]  # the drives' own evaluation
        z[-1 - u.size : -1] = np.clip(u, -bounds, bounds)
        assert np.all(np.abs(terms @ z - own) <= 1e-10 * (np.abs(terms) @ np.abs(z)))
    for x, u in states(system, seed):
        with monkeypatch.context() as patched:  # the closed form: no identification
            patched.setattr(linearize_module, "identify", _no_identification)
            analytic = px.linearize(system, x, u, method="analytic")
        central = px.linearize(system, x, u, method="central")
        assert analytic.notes == ()
        _agree(analytic, central, 100 * STEP_ERROR)
        beyond = np.abs(u) > bounds
        assert not analytic.B[:, beyond].any() and np.abs(analytic.B[:, ~beyond]).max(0).all()


def _no_identification(*args, **kwargs):
    raise AssertionError("identify called although every component has linear_terms")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [1, 2])
def test_six_dof_arm(kind, seed, monkeypatch):
    robot = px.load_robot("six_dof_arm")
    joints = list(robot.model.names)[1:]
    check(random_system(robot, joints, kind, seed), seed, monkeypatch)


@pytest.mark.parametrize("kind", KINDS)
def test_panda(panda, kind, monkeypatch):
    joints = [f"panda_joint{i}" for i in range(1, 8)]
    check(random_system(panda, joints, kind, 3), 3, monkeypatch)


def test_linear_actuators_and_torque_sources_in_closed_form(monkeypatch):
    """A general linear actuator (a DC motor's (20.74) form) and ideal torque sources, rigid
    and elastic."""
    robot = px.load_robot("six_dof_arm")
    motor = DCMotor(1.2, 0.05, 0.06, 2e-5, inductance=1e-3, voltage_limit=6.0)
    drives = {
        "shoulder_pan": Drive(motor.linear_model(), Gear(-40.0)),
        "shoulder_lift": Drive(motor.linear_model(), ElasticTransmission(50.0, 800.0, 0.2)),
        "elbow": Drive(None, Gear(30.0, output_inertia=1e-3)),
        "wrist_1": Drive(None, ElasticTransmission(20.0, 300.0, 0.1, input_inertia=1e-5)),
    }
    check(px.System(robot, drives=drives, joint_limits=False), 4, monkeypatch)


class _Spring(Actuator):
    """An actuator without ``linear_coefficients``: τ_s = u − k θ."""

    inertia = 1e-5

    def active_torque(self, states, theta, omega, u):
        return u - 0.01 * theta


class _Coupling(px.Component):
    """A linear spring between the first two joints, without :meth:`linear_terms`."""

    name = "coupling"

    def bind(self, system):
        self.nv = system.model.nv

    def effort(self, t, x, q, v, u, mode):
        tau = np.zeros(self.nv)
        tau[0] = -3.0 * (q[0] - q[1])
        tau[1] = -tau[0]
        return tau

    def linear(self, mode):
        return True


@pytest.mark.parametrize("case", ["actuator", "component"])
def test_without_closed_form_the_form_is_identified(case, monkeypatch):
    """An actuator without ``linear_coefficients``, or a linear component without
    ``linear_terms`` beside closed-form drives: the efforts are identified (once), and the
    model still equals the central difference."""
    robot = px.load_robot("six_dof_arm")
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5)
    drives = {"elbow": Drive(motor, ElasticTransmission(50.0, 800.0, 0.2))}
    components = [_Coupling()] if case == "component" else []
    if case == "actuator":
        drives["wrist_1"] = Drive(_Spring(), Gear(20.0))
    system = px.System(robot, drives=drives, components=components, joint_limits=False)
    if case == "actuator":
        assert system.components[0].linear_terms(None) is None
    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return identify(*args, **kwargs)

    monkeypatch.setattr(linearize_module, "identify", counted)
    rng = np.random.default_rng(5)
    x = system.initial_state(rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6))
    u = rng.uniform(-5, 5, system.n_inputs)
    analytic = px.linearize(system, x, u, method="analytic")
    central = px.linearize(system, x, u, method="central")
    assert len(calls) == 1 and analytic.notes == ()
    _agree(analytic, central, 100 * STEP_ERROR)


def test_closed_form_of_the_wrong_shape_is_refused():
    class Wrong(_Coupling):
        def linear_terms(self, mode):
            return np.zeros((2, 2))

    system = px.System(px.load_robot("six_dof_arm"), components=[Wrong()], joint_limits=False)
    with pytest.raises(InvalidParameter, match=r"coupling.linear_terms\(None\).*shape \(6, 19\)"):
        px.linearize(system, system.initial_state())
