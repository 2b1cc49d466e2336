"""System: state layout, initial state, energy terms and the right-hand side."""

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import InvalidParameter


def test_layout_of_a_bare_model():
    model = pin.buildSampleModelHumanoid()
    system = px.System(model)
    nq, nv = model.nq, model.nv
    assert system.layout["q"] == slice(0, nq) and system.layout["v"] == slice(nq, nq + nv)
    assert system.layout["input_work"] == slice(nq + nv, nq + nv + 1)
    assert system.nx == nq + nv + 2 and system.n_inputs == nv and system.torque_inputs
    x = system.initial_state()
    assert np.array_equal(x[:nq], pin.neutral(model)) and not x[nq:].any()
    with pytest.raises(InvalidParameter, match="shape"):
        system.initial_state(np.zeros(3))


@pytest.mark.parametrize("free_flyer", [False, True])
def test_derivative_is_aba_and_the_power_terms(free_flyer, pendulum_path):
    if free_flyer:
        model = pin.buildSampleModelHumanoid()
        robot = px.Robot.from_model(model)
    else:
        robot = px.load_urdf(pendulum_path)
        model = robot.model
    rng = np.random.default_rng(11)
    pin.seed(11)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    v, u = rng.normal(size=model.nv), rng.normal(size=model.nv)
    robot.joint_damping[:] = 0.3
    system = px.System(robot)
    x = system.initial_state(q, v)
    dx = system.derivative(0.0, x, u)
    nv = model.nv
    tau = u - 0.3 * v
    assert dx.shape == (system.nx - model.nq + nv,)
    assert np.allclose(dx[:nv], v, atol=1e-14)
    assert np.allclose(dx[nv : 2 * nv], pin.aba(model, model.createData(), q, v, tau), atol=1e-10)
    assert dx[-2] == pytest.approx(u @ v) and dx[-1] == pytest.approx(0.3 * v @ v)


def test_energy_terms_sum_to_energy(pendulum_path):
    robot = px.load_urdf(pendulum_path)
    robot.joint_stiffness[:] = 10.0
    system = px.System(robot)
    q, v = np.array([0.3, -0.2, 0.1]), np.array([1.0, 0.5, -0.5])
    terms = system.energy_terms(system.initial_state(q, v))
    data = robot.model.createData()
    assert terms["kinetic"] == pytest.approx(0.5 * v @ pin.crba(robot.model, data, q) @ v)
    assert terms["gravity"] == pytest.approx(pin.computePotentialEnergy(robot.model, data, q))
    assert terms["elastic"] == pytest.approx(0.5 * 10.0 * q @ q)
    assert system.energy(system.initial_state(q, v)) == pytest.approx(sum(terms.values()))


def test_contacts_and_environment_come_from_the_sidecar(tmp_path):
    """URDF + sidecar -> Robot -> System: the file's contact and environment are assembled."""
    from tests.conftest import URDF

    urdf = tmp_path / "six_dof_arm.urdf"
    urdf.write_text((URDF / "six_dof_arm.urdf").read_text())
    (tmp_path / "six_dof_arm.pinext.toml").write_text(
        '[[contacts]]\nframe = "pen_tip"\nsurface = "plane"\npoint = [0.0, 0.0, 0.2]\n'
        "[environment]\nmass = 2.0\nstiffness = 2.0e4\ndamping = 100.0\n"
    )
    robot = px.load_urdf(urdf)
    system = px.System(robot)
    assert [c.name for c in system.components] == ["joint_limits", "contact"]
    assert any(k.startswith("contact.") for k in system.layout)  # environment states
    assert not px.System(robot, contacts=(), environment=False, joint_limits=False).components


def test_derivative_and_step_have_no_side_effects():
    """System.derivative and System.step read no shared mutable state: interleaved calls with
    other inputs and phases give the same results; the System keeps no current phase/control."""
    from pinext.contact import Contact, plane
    from pinext.drives import DCMotor, Drive, Gear

    robot = px.load_urdf(px.robot_path("six_dof_arm"))
    motor = DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    system = px.System(
        robot,
        drives={"elbow": Drive(motor, Gear(50.0, efficiency=0.7))},
        contacts=[Contact(plane("pen_tip", (0.0, 0.0, -5.0)))],
    )
    rng = np.random.default_rng(1)
    x = system.initial_state(rng.normal(scale=0.3, size=6), rng.normal(size=6))
    first = system.derivative(0.1, x, [3.0])
    step = system.step(0.1, x, [3.0])
    system.derivative(0.2, x + 0.01, [-7.0])
    system.step(0.3, x, [-2.0])
    assert np.array_equal(system.derivative(0.1, x, [3.0]), first)
    assert np.array_equal(system.step(0.1, x, [3.0]).a, step.a)
    assert not hasattr(system, "phase") and not hasattr(system, "control")


def test_a_run_writes_no_cache_into_the_system(tmp_path):
    """The engine keeps what it derives from a System (packed model, linear forms, a scratch
    Data) in its own cache: a run on either path leaves the System's attributes as assembled."""
    import pinext as px
    from tests.conftest import pendulum_urdf

    path = tmp_path / "arm.urdf"
    path.write_text(pendulum_urdf(n=2))
    system = px.System(px.load_urdf(path))
    before = set(vars(system))
    px.simulate(system, 0.05)
    assert set(vars(system)) == before


@pytest.mark.parametrize("attribute", ["joint_stiffness", "joint_damping"])
@pytest.mark.parametrize(
    ("value", "named"),
    [
        (
            np.array([0.0, 0.0, np.nan, 0.0, 0.0, 0.0]),
            r"finite and non-negative .*\[nan\] on \['elbow'\]",
        ),
        (np.array([0.0, 0.0, 0.0, np.inf, 0.0, 0.0]), r"\[inf\] on \['wrist_1'\]"),
        (np.array([0.0, -1.0, 0.0, 0.0, 0.0, 0.0]), r"\[-1.0\] on \['shoulder_lift'\]"),
        (np.zeros(5), r"must be 6 numbers >= 0 .*one per DOF\), got shape \(5,\)"),
        ("stiff", r"must be 6 numbers >= 0 .*got 'stiff'"),
    ],
)
def test_joint_springs_and_dampers_are_checked_per_dof(attribute, value, named):
    """Before: a NaN, an infinity or a wrong size of robot.joint_stiffness or joint_damping
    was taken by System (a NaN start state or a broadcasting error later), text ended in
    numpy's ValueError; now System refuses it, naming the attribute, the value and the
    joint."""
    robot = px.load_robot("six_dof_arm")
    setattr(robot, attribute, value)
    with pytest.raises(InvalidParameter, match=rf"robot.{attribute} .*{named}"):
        px.System(robot)
