"""Plots render headless (Agg) with axes, lines and labels with units; data match the inputs."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import pinext as px  # noqa: E402
from pinext.robots import robot_path  # noqa: E402
from pinext.simulation.trajectory import EventRecord, PhaseRecord, Trajectory  # noqa: E402
from pinext.visualization import plots  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
UNITS = re.compile(r"\[[^\]]+\]")


def _traj(nv=3, n=101, outputs=None, phases=None, events=()):
    rng = np.random.default_rng(7)
    t = np.linspace(0.0, 1.0, n)
    q = np.cumsum(rng.normal(size=(n, nv)), axis=0) * 1e-2
    v = np.gradient(q, t, axis=0)
    x = np.hstack([q, v, np.zeros((n, 2))])
    layout = {
        "q": (0, nv),
        "v": (nv, 2 * nv),
        "input_work": (2 * nv, 2 * nv + 1),
        "dissipated_energy": (2 * nv + 1, 2 * nv + 2),
    }
    phases = phases or [PhaseRecord(0.0, 1.0, "free")]
    index = np.array([max(k for k, p in enumerate(phases) if ti >= p.t_start) for ti in t])
    meta = {"robot": "test", "joint_names": [f"j{i}" for i in range(nv)]}
    return Trajectory(t, x, layout, index, phases, list(events), dict(outputs or {}), meta)


def _check_labels(fig):
    for ax in fig.axes:
        assert UNITS.search(ax.get_ylabel()), ax.get_ylabel()
    assert UNITS.search(fig.axes[-1].get_xlabel()), fig.axes[-1].get_xlabel()


def test_joint_trajectories_one_line_per_joint_with_the_data():
    traj = _traj()
    fig = plots.joint_trajectories(traj)
    ax_q, ax_v = fig.axes
    assert len(ax_q.lines) == len(ax_v.lines) == 3
    np.testing.assert_array_equal(ax_q.lines[1].get_ydata(), traj.q[:, 1])
    np.testing.assert_array_equal(ax_v.lines[2].get_ydata(), traj.v[:, 2])
    assert "[rad]" in ax_q.get_ylabel() and "[rad/s]" in ax_v.get_ylabel()
    _check_labels(fig)
    assert len(plots.joint_trajectories(traj, ["j2"]).axes[0].lines) == 1
    with pytest.raises(px.exceptions.NameNotFound, match="j0"):
        plots.joint_trajectories(traj, ["nope"])


def test_motor_plots_link_vs_motor_and_torque_speed(tmp_path):
    n = 101
    t = np.linspace(0.0, 1.0, n)
    theta = np.column_stack([100 * np.sin(t), 50 * np.cos(t)])
    outputs = {
        "drives.motor_angle": theta,
        "drives.motor_velocity": np.gradient(theta, t, axis=0),
        "drives.current": np.column_stack([np.sin(t), np.full(n, np.nan)]),
        "drives.motor_torque": np.column_stack([0.1 * np.sin(t), 0.2 * np.cos(t)]),
    }
    traj = _traj(nv=2, outputs=outputs)
    traj.meta["drives"] = ["j0", "j1"]
    traj.meta["reductions"] = {"j0": 100.0}
    fig = plots.motor_trajectories(traj)
    assert len(fig.axes) == 3  # angle, velocity, current (no voltage output)
    assert len(fig.axes[2].lines) == 1  # the NaN current of drive 1 is not drawn
    _check_labels(fig)
    fig = plots.link_vs_motor(traj, "j0")
    link, motor = fig.axes[0].lines
    np.testing.assert_allclose(motor.get_ydata(), np.sin(t), atol=1e-15)  # θ / N
    np.testing.assert_allclose(fig.axes[1].lines[0].get_ydata(), np.sin(t) - traj.q[:, 0])
    _check_labels(fig)
    motor = px.drives.DCMotor(
        resistance=1.0,
        torque_constant=0.05,
        back_emf_constant=0.05,
        rotor_inertia=1e-5,
        voltage_limit=24.0,
    )
    fig = plots.torque_speed(traj, motors={0: motor})
    ax = fig.axes[0]
    assert len(ax.lines) == 2 + 2 + 2  # points of two drives, two limit lines, two zero axes
    stall = [line for line in ax.lines if line.get_linestyle() == "--"][0]
    w, tau = stall.get_xdata(), stall.get_ydata()
    np.testing.assert_allclose(tau, 0.05 * (24.0 - 0.05 * w) / 1.0)  # (20.62)-(20.64)
    _check_labels(fig)
    written = plots.save(fig, tmp_path / "torque_speed")
    assert [p.suffix for p in written] == [".png", ".svg"]
    assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in written[1].read_bytes()[:400]


def test_contact_force_phase_bands_and_impact_markers():
    phases = [
        PhaseRecord(0.0, 0.4, "free"),
        PhaseRecord(0.4, 0.9, "constrained"),
        PhaseRecord(0.9, 1.0, "free"),
    ]
    t = np.linspace(0.0, 1.0, 101)
    force = np.where((t >= 0.4) & (t < 0.9), 10.0, 0.0)[:, None]
    events = [EventRecord(0.4, "contact:table", {"contact": "table", "impulse": [0.25]})]
    traj = _traj(outputs={"contact.force": force}, phases=phases, events=events)
    fig = plots.contact_force(traj)
    ax = fig.axes[0]
    assert len(ax.patches) == 3  # one band per phase
    assert ax.patches[1].get_facecolor() != ax.patches[0].get_facecolor()
    assert ax.patches[2].get_facecolor() == ax.patches[0].get_facecolor()
    labels = ax.get_legend_handles_labels()[1]
    assert {"phase: free", "phase: constrained", "impact"} <= set(labels)
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), force[:, 0])
    assert any("0.25 N.s" in text.get_text() for text in ax.texts)
    _check_labels(fig)


def test_energy_audit_draws_terms_and_the_balance_residual():
    n = 101
    traj = _traj(
        n=n, outputs={"energy.kinetic": np.linspace(0, 1, n), "energy.gravity": np.zeros(n)}
    )
    traj.x[:, traj.layout["input_work"][0]] = np.linspace(0, 1, n)
    fig = plots.energy_audit(traj)
    ax, ax_r = fig.axes
    labels = ax.get_legend_handles_labels()[1]
    assert "kinetic" in labels and "gravity" not in labels  # zero terms are left out
    assert {"stored E", "input work W", "dissipated D"} <= set(labels)
    np.testing.assert_allclose(ax_r.lines[0].get_ydata(), 0.0, atol=1e-15)
    _check_labels(fig)


def test_modal_convergence_and_mode_shapes_of_the_flexible_arm():
    length, side, young = 2.0, 0.01, 1e11
    inertia, mu = side**4 / 12, 7876 * side**2
    modes = (4 * np.arange(1, 4) + 1) ** 2
    theory = np.sqrt(young * inertia / mu) * np.pi / (32 * length**2) * modes  # seed 001 (70)
    nus = [3, 5]
    freqs = []
    for nu in nus:
        robot = px.load_urdf(
            robot_path("flexible_arm"),
            flexible=[px.FlexibleLink("bar", nu, young, inertia)],
        )
        freqs.append(px.natural_frequencies(robot)[1:4])
    fig = plots.modal_convergence(nus, np.array(freqs), theory)
    assert len(fig.axes) == 2
    assert len(fig.axes[0].lines) == 3 + 3  # three modes and three reference lines
    error = fig.axes[1].lines[0].get_ydata()
    np.testing.assert_allclose(error, 100 * np.abs(np.array(freqs)[:, 0] / theory[0] - 1))
    _check_labels(fig)
    fig = plots.mode_shapes(robot, modes=(1, 2))
    ax = fig.axes[0]
    assert len(ax.lines) == 2 + 1  # two modes and the zero line
    s = ax.lines[0].get_xdata()
    np.testing.assert_allclose(s, [0.0, 0.2, 0.6, 1.0, 1.4, 1.8, 2.0], atol=1e-12)
    w = ax.lines[0].get_ydata()
    assert w[0] == pytest.approx(0.0, abs=1e-9) and np.abs(w).max() == pytest.approx(1.0)
    assert "Hz" in ax.get_legend_handles_labels()[1][0]
    _check_labels(fig)
    with pytest.raises(px.exceptions.InvalidParameter, match="mode 9"):
        plots.mode_shapes(robot, modes=(9,))
