"""simulate: conservation, manifold integration, agreement with a hand-written aba + RK4 loop,
joint elasticity, phases and events, and failure modes."""

import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import IntegrationError, InvalidParameter
from tests.conftest import pendulum_urdf


@pytest.fixture
def pendulum(pendulum_path):
    return px.load_urdf(pendulum_path)


def test_conservative_pendulum_keeps_energy(pendulum):
    q0 = np.array([1.2, -0.5, 0.8])
    traj = px.simulate(pendulum, 10.0, q0=q0)
    energy = traj.energy()
    scale = traj.energy_terms()["kinetic"].max()
    assert scale > 1.0  # it really swings
    assert np.abs(energy - energy[0]).max() / scale < 1e-7
    assert traj.energy_balance().max_relative() < 1e-7


def test_matches_hand_written_aba_rk4(pendulum):
    model = pendulum.model
    data = model.createData()
    q, v = np.array([0.9, 0.3, -0.4]), np.array([0.5, -1.0, 2.0])

    def f(y):
        return np.concatenate([y[3:], pin.aba(model, data, y[:3], y[3:], np.zeros(3))])

    y, h = np.concatenate([q, v]), 1e-4
    for _ in range(10_000):  # classical RK4 to t = 1 s
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    traj = px.simulate(pendulum, 1.0, q0=q, v0=v, output_dt=0.5)
    assert traj.t[-1] == pytest.approx(1.0, abs=1e-12)
    assert np.abs(np.concatenate([traj.q[-1], traj.v[-1]]) - y).max() < 1e-8


def test_free_flyer_stays_on_the_manifold():
    model = pin.buildSampleModelHumanoid()
    model.gravity.setZero()
    rng = np.random.default_rng(3)
    q0 = pin.neutral(model)
    v0 = rng.normal(size=model.nv)
    # energy and momentum conservation of the free mechanism: its joint limits (whose
    # impacts dissipate energy) are off
    traj = px.simulate(px.System(model, joint_limits=False), 2.0, q0=q0, v0=v0)
    quat = traj.q[:, 3:7]
    assert np.abs(np.linalg.norm(quat, axis=1) - 1).max() < 1e-12
    data = model.createData()
    h = [
        pin.computeCentroidalMomentum(model, data, q, v).vector.copy()
        for q, v in zip(traj.q, traj.v, strict=True)
    ]
    assert np.abs(np.array(h) - h[0]).max() < 1e-7 * np.abs(h[0]).max()  # free-floating: conserved
    energy = traj.energy()
    assert np.abs(energy - energy[0]).max() < 1e-7 * energy[0]
    assert traj.q[-1, 3:7] @ q0[3:7] < 0.99  # it really rotated (several chart re-centrings)


def test_a_free_flyer_with_nothing_to_hold_it_is_said_to_fall_freely():
    """The event-driven run says it as time stepping does: a robot on a free flyer under
    gravity whose components act on its joints only falls freely (a warning naming the ways
    to give it contacts); nothing is said with gravity off or with a contact."""
    model = pin.buildSampleModelHumanoid()
    with pytest.warns(UserWarning, match="free flyer with no contact: it falls freely"):
        px.simulate(px.System(model), 0.01, progress=False)
    foot = px.Contact(px.plane(model.frames[-1].name, (0.0, 0.0, -2.0)))
    for system in (px.System(model, contacts=[foot]), px.System(_weightless(model))):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            px.simulate(system, 0.01, progress=False)


def _weightless(model: pin.Model) -> pin.Model:
    model = pin.Model(model)
    model.gravity.setZero()
    return model


def test_joint_stiffness_gives_the_closed_form_frequency(tmp_path):
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(n=1))
    robot = px.load_urdf(path)
    robot.model.gravity.setZero()
    inertia = pin.crba(robot.model, robot.data, np.zeros(1))[0, 0]
    robot.joint_stiffness[:] = 40.0
    period = 2 * np.pi / np.sqrt(40.0 / inertia)
    traj = px.simulate(robot, period, q0=np.array([0.1]), output_dt=period / 4)
    assert traj.q[-1, 0] == pytest.approx(0.1, abs=1e-9)  # one full period
    assert traj.q[2, 0] == pytest.approx(-0.1, abs=1e-9)  # half period
    assert traj.energy_terms()["elastic"][0] == pytest.approx(0.5 * 40 * 0.01)


def test_damping_dissipates_what_the_balance_says(pendulum_path, tmp_path):
    path = tmp_path / "d.urdf"
    path.write_text(pendulum_urdf(n=3, damping=0.3))
    robot = px.load_urdf(path)
    traj = px.simulate(robot, 3.0, q0=np.array([1.0, 0.5, -0.5]))
    balance = traj.energy_balance()
    assert balance.dissipated[-1] > 0.1 * abs(balance.energy).max()
    assert balance.max_relative() < 1e-7


def test_torque_control_work_is_accounted(pendulum):
    schedule = px.Schedule([0.0, 1.0, 2.0], [[0, 0, 0], [2.0, -1.0, 0.5], [0, 0, 0]])
    traj = px.simulate(pendulum, 2.0, control=schedule, output_dt=0.25)
    balance = traj.energy_balance()
    assert abs(balance.input_work[-1]) > 0.1
    assert balance.max_relative() < 1e-7
    assert np.allclose(traj.outputs["input"][traj.t == 1.0], [[2.0, -1.0, 0.5]])
    assert np.allclose(traj.outputs["input"][traj.t == 0.5], [[1.0, -0.5, 0.25]])


class Wall(px.Component):
    """A test component: a wall at joint angle ``limit`` that reverses the velocity (e < 1)."""

    name = "wall"

    def __init__(self, limit, restitution):
        super().__init__()
        self.limit, self.e = limit, restitution

    def initial_mode(self, t, x, trial):
        return "approach"

    def events(self, mode):
        def hit(t, x, mode, trial):
            x = x.copy()
            x[1] *= -self.e
            return x, "rebound", {"impulse": 1.0}

        return [px.Event("impact", lambda t, x: self.limit - x[0], -1.0, hit)]


def test_events_end_phases_and_maps_are_recorded(tmp_path):
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(n=1))
    robot = px.load_urdf(path)
    robot.model.gravity.setZero()
    omega = 2.0
    system = px.System(robot, components=[Wall(0.5, 0.5)])
    traj = px.simulate(system, 1.0, v0=np.array([omega]))
    assert [e.name for e in traj.events] == ["impact"]
    assert traj.events[0].t == pytest.approx(0.5 / omega, abs=1e-12)
    assert [p.name for p in traj.phases] == ["approach", "rebound"]
    inertia = pin.crba(robot.model, robot.data, np.zeros(1))[0, 0]
    assert traj.events[0].info["energy_loss"] == pytest.approx(0.5 * inertia * omega**2 * 0.75)
    assert traj.v[-1, 0] == pytest.approx(-1.0)
    assert traj.energy_balance().max_relative() < 1e-10


def test_non_finite_state_stops_with_time_and_state(pendulum):
    def control(t, x):
        return np.full(3, np.nan) if t > 0.25 else np.zeros(3)

    with pytest.raises(IntegrationError) as err:
        px.simulate(pendulum, 1.0, q0=np.array([0.5, 0.0, 0.0]), control=control)
    assert 0.25 < err.value.time < 0.5
    assert err.value.state[0] != 0.5 and np.all(np.isfinite(err.value.state))
    assert "non-finite" in str(err.value) and "t = 0." in str(err.value)


def test_bad_arguments(pendulum):
    with pytest.raises(InvalidParameter, match="valid methods"):
        px.simulate(pendulum, 1.0, method="Euler")
    with pytest.raises(InvalidParameter, match="positive"):
        px.simulate(pendulum, -1.0)
    with pytest.raises(InvalidParameter, match="shape"):
        px.simulate(pendulum, 1.0, q0=np.zeros(2))
    with pytest.raises(InvalidParameter, match="entries"):
        px.simulate(pendulum, 1.0, control=[1.0, 2.0])
    pendulum.joint_stiffness[0] = -1.0
    with pytest.raises(InvalidParameter, match="non-negative"):
        px.System(pendulum)


@pytest.mark.parametrize("method", [None, "timestepping"])
@pytest.mark.parametrize(
    ("given", "named"),
    [
        (
            {"q0": np.array([0.1, np.nan, 0.0])},
            r"q0 must be finite, got \[0.1 nan 0. \] \(entries \[1\]",
        ),
        ({"v0": [0.0, 0.0, np.inf]}, r"v0 must be finite, .*entries \[2\]"),
        ({"x0": np.full(8, np.nan)}, r"x0 must be finite, .*entries \[0, 1, 2"),
    ],
)
def test_a_non_finite_start_is_named_with_its_argument(pendulum, method, given, named):
    """Before: "IntegrationError: non-finite initial state at t = 0 s; state = [...]", the
    argument at fault unnamed; now refused as the argument and its entries, on every
    method, before anything runs."""
    options = {"method": "timestepping", "dt": 1e-3} if method else {}
    with pytest.raises(InvalidParameter, match=named):
        px.simulate(pendulum, 0.1, progress=False, **given, **options)


def test_progress_bar(pendulum, capsys):
    px.simulate(pendulum, 0.2, progress=True)
    assert "simulate" in capsys.readouterr().err


def test_save_and_load_round_trip(pendulum, tmp_path):
    traj = px.simulate(pendulum, 0.5, q0=np.array([0.3, 0.2, 0.1]), output_dt=0.1)
    loaded = px.Trajectory.load(traj.save(tmp_path / "run.npz"))
    assert np.array_equal(loaded.t, traj.t) and np.array_equal(loaded.x, traj.x)
    assert loaded.layout == traj.layout and loaded.phases == traj.phases
    assert np.array_equal(loaded.energy(), traj.energy())
    assert loaded.meta["description"]["file"] == "pendulum.urdf"
    (tmp_path / "junk.npz").write_bytes(b"no")
    with pytest.raises(px.exceptions.FileFormatError):
        px.Trajectory.load(tmp_path / "junk.npz")


@pytest.mark.parametrize("model_name", ["pendulum", "humanoid"])
def test_momentum_method_matches_the_aba_route(model_name, pendulum):
    """Seed 001 Theorem 1 (state q, p = M v) against Pinocchio's aba, same tolerances."""
    if model_name == "pendulum":
        system, q0, v0 = pendulum, np.array([1.2, -0.5, 0.8]), np.zeros(3)
    else:
        model = pin.buildSampleModelHumanoid()
        model.gravity.setZero()
        q0, v0 = pin.neutral(model), np.random.default_rng(3).normal(size=model.nv)
        system = px.System(model, joint_limits=False)  # momentum: unconstrained phases only
    kwargs = dict(q0=q0, v0=v0, output_dt=0.25, rtol=1e-12, atol=1e-13)
    ref = px.simulate(system, 2.0, **kwargs)
    mom = px.simulate(system, 2.0, method="momentum", **kwargs)
    assert np.array_equal(ref.t, mom.t)
    assert np.abs(ref.x - mom.x).max() < 1e-8
    energy = mom.energy()
    assert np.abs(energy - energy[0]).max() < 1e-7 * max(abs(energy[0]), 1.0)
    assert mom.meta["stats"]["method"] == "momentum"


def test_schedule_breakpoints_restart_without_extra_samples(pendulum):
    """A zero-order hold jumps at its sample times: simulate restarts there, even at t_final."""
    hold = px.Schedule([0.0, 0.2, 0.4], [[1.0, 0, 0], [-1.0, 0, 0], [0, 0, 0]], kind="zoh")
    traj = px.simulate(pendulum, 0.4, control=hold)
    assert traj.t[-1] == pytest.approx(0.4) and np.all(np.diff(traj.t) > 0)
    assert len(traj.phases) == 1 and not traj.events
    # against the same run with the hold's jumps resolved by separate runs
    first = px.simulate(pendulum, 0.2, control=[1.0, 0, 0])
    second = px.simulate(pendulum, 0.2, x0=first.x[-1], control=[-1.0, 0, 0])
    assert np.abs(traj.x[-1, :6] - second.x[-1, :6]).max() < 1e-9
