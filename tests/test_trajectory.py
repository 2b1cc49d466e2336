"""Trajectory files and tables: CSV and DataFrame with units in the column names."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import pinext as px
from pinext.exceptions import PinextError
from tests.conftest import URDF


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
