"""Trajectory files and tables: CSV and DataFrame with units in the column names."""

from __future__ import annotations

import csv
from pathlib import Path
from tempfile import mkdtemp

import numpy as np
import pytest

import pinext as px
from pinext.exceptions import NameNotFound, PinextError
from tests.conftest import URDF

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def run() -> px.Trajectory:
    robot = px.load_urdf(URDF / "planar3r.urdf")
    return px.simulate(robot, 0.1, q0=np.array([0.1, 0.2, 0.3]), control=np.ones(3), output_dt=0.05)


def test_columns_carry_units(run):
    columns = run.columns()
    names = list(columns)
    assert names[:2] == ["t [s]", "phase"]
    joint = run.meta["joint_names"][0]
    for label in (f"q.{joint} [rad]", f"v.{joint} [rad/s]", "input_work [J]"):
        assert label in names
    assert "energy.kinetic [J]" in names and f"input.{joint} [N.m]" in names
    np.testing.assert_array_equal(columns[f"q.{joint} [rad]"], run.q[:, 0])


def test_csv_round_trip(run, tmp_path):
    path = run.to_csv(tmp_path / "run.csv")
    with open(path, newline="") as stream:
        rows = list(csv.reader(stream))
    assert rows[0] == list(run.columns())
    assert len(rows) == len(run) + 1
    t = np.array([float(r[0]) for r in rows[1:]])
    np.testing.assert_array_equal(t, run.t)  # repr(float) round-trips exactly


def test_dataframe(run):
    pd = pytest.importorskip("pandas")
    frame = run.to_dataframe()
    assert isinstance(frame, pd.DataFrame) and frame.shape[0] == len(run)
    np.testing.assert_array_equal(frame["t [s]"].to_numpy(), run.t)


def test_dataframe_without_pandas_says_what_to_install(run, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas":
            raise ImportError("no pandas")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(PinextError, match="pip install pandas"):
        run.to_dataframe()


def test_saved_and_loaded_trajectory_keeps_its_columns(run, tmp_path):
    loaded = px.Trajectory.load(run.save(tmp_path / "run.npz"))
    assert list(loaded.columns()) == list(run.columns())


def test_energy_balance_of_a_body_falling_from_rest_is_relative_to_the_exchange():
    """A free body falling from rest at z = 0 keeps E = T + V = 0: the residual is measured
    against the energy its terms exchange, m g² t²/2, not against |E| (rounding; the audit
    read 1.0 relative)."""
    import pinocchio as pin

    model = pin.Model()
    joint = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    model.appendBodyToJoint(joint, pin.Inertia.FromBox(2.0, 0.1, 0.2, 0.3), pin.SE3.Identity())
    traj = px.simulate(px.Robot.from_model(model), 1.0)
    balance = traj.energy_balance()
    assert balance.exchanged == pytest.approx(2.0 * 9.81**2 / 2, rel=1e-9)
    assert balance.max_relative() < 1e-10


# -- discoverable outputs --------------------------------------------------------------------
def _four_bar_crank() -> px.Trajectory:
    """The four-bar (a hinge loop, joint limits) with its crank prescribed: generated names."""
    system = px.System(px.load_urdf(EXAMPLES / "four_bar.urdf"))
    x0 = px.close_loops(system, np.array([0.0, 1.5, 1.5]))
    theta0 = float(x0[0])
    crank = px.Prescribed("crank_joint", lambda t: (theta0 + 0.5 * t * t, t, 1.0), name="crank")
    return px.simulate(px.System(system.robot, components=[crank]), 0.2, x0=x0, output_dt=0.05)


def _drives_friction_contact() -> px.Trajectory:
    """DC motors behind gears (a pendulum of 3 links), and a ball on a plane: drives,
    contacts and the energies of every component."""
    from pinext.drives import DCMotor, Drive, Gear

    from ._contact_models import ball
    from .conftest import pendulum_urdf

    path = Path(mkdtemp()) / "pendulum.urdf"
    path.write_text(pendulum_urdf(n=3))
    motor = DCMotor(
        resistance=1.2, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=2e-5
    )
    drives = {j: Drive(motor, Gear(50.0)) for j in ("j0", "j1", "j2")}
    arm = px.simulate(px.System(px.load_urdf(path), drives=drives), 0.05, control=np.ones(3))
    bounce = px.simulate(
        px.System(ball(), contacts=[px.Contact(px.plane("ball"))]), 0.3, q0=np.array([0.1])
    )
    return arm, bounce


def test_outputs_are_listed_with_units_and_descriptions(tmp_path):
    """describe_outputs: one row per output (its name, the array's shape), the unit and
    description its component gives; the same after save/load; printed as a table."""
    traj = _four_bar_crank()
    table = traj.describe_outputs()
    assert [row.name for row in table] == sorted(traj.outputs)
    rows = {row.name: row for row in table}
    for name, value in traj.outputs.items():
        assert rows[name].shape == value.shape
        assert rows[name].description, name  # every output of the run is described
    assert rows["crank.torque"].unit == "N.m or N"
    assert "crank_joint" in rows["crank.torque"].description
    assert rows["pivot.force"].unit == "N" and rows["pivot.torque"].unit == "N.m"
    assert rows["pivot.residual"].shape == (len(traj), 5)  # a hinge: 5 rows
    assert rows["joint_limits.distance"].unit == "rad or m"
    assert rows["energy.kinetic"].unit == "J"
    text = str(table)
    lines = text.splitlines()
    assert lines[0].split() == ["name", "shape", "unit", "description"]
    assert set(lines[1]) <= {"-", " "}
    assert any(line.startswith("crank.torque ") and f"{len(traj)}x1" in line for line in lines)
    assert len(lines) == len(traj.outputs) + 2
    loaded = px.Trajectory.load(traj.save(tmp_path / "crank.npz"))
    assert loaded.describe_outputs() == table


def test_drive_and_contact_outputs_are_described():
    """Drives (DC motors) and contacts describe every output they record, with its unit."""
    arm, bounce = _drives_friction_contact()
    rows = {row.name: row for row in arm.describe_outputs()}
    assert rows["drives.current"].unit == "A" and rows["drives.voltage"].unit == "V"
    assert rows["drives.copper_loss"].unit == "W"
    rows.update({row.name: row for row in bounce.describe_outputs()})
    assert rows["contact.gap"].unit == "m" and rows["contact.force"].unit == "N or N.m"
    assert all(row.description for row in rows.values()), [
        name for name, row in rows.items() if not row.description
    ]


def test_an_unknown_output_name_lists_those_that_exist():
    traj = _four_bar_crank()
    with pytest.raises(NameNotFound, match="Did you mean 'crank.torque'") as caught:
        traj.outputs["crank.torqe"]
    assert isinstance(caught.value, KeyError)  # as a dict's missing key
    assert "pivot.residual" in str(caught.value) and "joint_limits.force" in str(caught.value)
    assert "crank.torque" in caught.value.available
