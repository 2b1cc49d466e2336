"""Natural frequencies about a steady rotation; Campbell diagram of a spinning beam."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pinext as px
from pinext.exceptions import InvalidParameter, NameNotFound
from pinext.planning import CampbellDiagram, campbell

LENGTH, MASS, YOUNG, SECOND_MOMENT = 1.0, 0.5, 70e9, 1e-10
SOUTHWELL = 1.193  # first flapwise mode, hub radius 0

# Exact first flapwise frequency ω sqrt(μL⁴/EI) of a uniform cantilever spinning at
# Ω sqrt(μL⁴/EI) = 0, 1, ..., 12, as tabulated by Hodges & Rutkowski (1981) and Wright et al.
# (1982) (Southwell's relation is the low-speed approximation of this curve).
EXACT_FLAPWISE = [
    3.5160, 3.6816, 4.1373, 4.7973, 5.5850, 6.4495, 7.3604,
    8.2996, 9.2568, 10.2257, 11.2023, 12.1843, 13.1702,
]  # fmt: skip


def _rotor(tmp_path: Path, axis: tuple[float, float, float], nu: int = 20) -> px.Robot:
    """A uniform beam along x on a hub spinning about z (hub radius 0); planar bending about
    ``axis``: y is flapwise (out of the plane of rotation), z in-plane."""
    inertia = MASS * LENGTH**2 / 12
    path = tmp_path / "rotor.urdf"
    path.write_text(
        '<robot name="rotor"><link name="base"/>'
        '<joint name="hub" type="revolute"><parent link="base"/><child link="blade"/>'
        '<axis xyz="0 0 1"/><limit lower="-10" upper="10" effort="1" velocity="1"/></joint>'
        f'<link name="blade"><inertial><origin xyz="{LENGTH / 2} 0 0"/>'
        f'<mass value="{MASS}"/><inertia ixx="1e-9" ixy="0" ixz="0" iyy="{inertia}" iyz="0" '
        f'izz="{inertia}"/></inertial></link></robot>'
    )
    link = px.FlexibleLink("blade", nu, YOUNG, SECOND_MOMENT, length=LENGTH, bending_axes=(axis,))
    return px.load_urdf(path, flexible=[link])


def _first(diagram) -> np.ndarray:
    return 2 * np.pi * diagram.frequencies[:, 0]


def test_southwell_flapwise_and_in_plane_at_nu_20(tmp_path: Path) -> None:
    flap = _rotor(tmp_path, (0.0, 1.0, 0.0))
    lag = _rotor(tmp_path, (0.0, 0.0, 1.0))
    omega0 = 2 * np.pi * px.natural_frequencies(flap, locked_joints=("hub",))[0]
    speeds = omega0 * np.linspace(0.0, 3.0, 13)
    w_flap = _first(campbell(flap, "hub", speeds))
    w_lag = _first(campbell(lag, "hub", speeds))
    assert w_flap[0] == pytest.approx(omega0, rel=1e-9)  # state-space eigenvalues
    # low-speed slope: Southwell's coefficient (and K − 1 in-plane)
    slope = (w_flap[1] ** 2 - omega0**2) / speeds[1] ** 2
    assert slope == pytest.approx(SOUTHWELL, rel=1e-2)
    # in-plane = flapwise − Ω² at every speed (hub radius 0)
    np.testing.assert_allclose(w_lag**2, w_flap**2 - speeds**2, rtol=1e-7)
    # Southwell's relation is the low-speed approximation of the exact curve (next test): the
    # discrete model follows it within 1 % up to Ω = ω₁,₀; at Ω = 3 ω₁,₀ the exact flapwise
    # frequency lies 2.4 % below it (and the in-plane one 10.5 %), as it does here.
    southwell = np.sqrt(omega0**2 + SOUTHWELL * speeds**2)
    error = np.abs(w_flap / southwell - 1)
    assert error[speeds <= omega0 * (1 + 1e-9)].max() < 1e-2
    assert error.max() < 3e-2
    southwell_lag = np.sqrt(omega0**2 + (SOUTHWELL - 1) * speeds**2)
    assert np.abs(w_lag / southwell_lag - 1)[speeds <= omega0 * (1 + 1e-9)].max() < 1e-2


def test_exact_rotating_beam_frequencies_to_1_percent_at_nu_20(tmp_path: Path) -> None:
    robot = _rotor(tmp_path, (0.0, 1.0, 0.0))
    scale = np.sqrt(MASS / LENGTH * LENGTH**4 / (YOUNG * SECOND_MOMENT))
    speeds = np.arange(len(EXACT_FLAPWISE)) / scale  # up to 3.4 ω₁,₀
    frequency = _first(campbell(robot, "hub", speeds)) * scale
    np.testing.assert_allclose(frequency, EXACT_FLAPWISE, rtol=1e-2)


def test_about_rest_equals_the_static_modal_analysis(tmp_path: Path) -> None:
    robot = _rotor(tmp_path, (0.0, 1.0, 0.0), nu=6)
    at_rest = px.natural_frequencies(robot, locked_joints=("hub",))
    moving = px.natural_frequencies(robot, None, np.zeros(robot.nv), locked_joints=("hub",))
    np.testing.assert_allclose(moving, at_rest, rtol=1e-9)


def test_plot_and_errors(tmp_path: Path) -> None:
    robot = _rotor(tmp_path, (0.0, 1.0, 0.0), nu=4)
    diagram = campbell(robot, "hub", np.linspace(0, 100, 5))
    fig = diagram.plot(modes=3)
    assert len(fig.axes[0].lines) == 3 + 2
    with pytest.raises(NameNotFound, match="Available joint names: hub"):
        campbell(robot, "rotor", [0.0])
    with pytest.raises(InvalidParameter, match="kinetic_energy='exact'"):
        px.natural_frequencies(robot, None, np.zeros(robot.nv), kinetic_energy="undeformed")


def test_plot_draws_speeds_in_rpm_and_order_lines_at_k_revolutions_per_second() -> None:
    """The plot's x axis is the joint speed in rpm, Ω [rad/s] × 60 / (2π) (a revolution is
    2π rad, a minute 60 s): 0, 5, 10 and 20 rev/s are 0, 300, 600 and 1200 rpm. The modes are
    drawn as given (the all-zero rigid-body column skipped) and engine order k is the line
    f = k Ω / 2π [Hz] (CampbellDiagram.plot's docstring), i.e. k × rpm / 60: k times the
    revolutions per second. Tolerance: the round-off of Ω = 2π n and of its conversions."""
    revolutions = np.array([0.0, 5.0, 10.0, 20.0])  # [rev/s]
    rpm = 60.0 * revolutions
    frequencies = np.array(  # [Hz]: a rigid-body mode at 0, then two flexible modes
        [[0.0, 12.0, 40.0], [0.0, 12.5, 41.0], [0.0, 14.0, 43.0], [0.0, 19.0, 50.0]]
    )
    diagram = CampbellDiagram(2 * np.pi * revolutions, frequencies, "hub")
    fig = diagram.plot(modes=2, orders=(1, 3))
    ax = fig.axes[0]
    assert "[rpm]" in ax.get_xlabel() and "[Hz]" in ax.get_ylabel()
    modes, orders = ax.lines[:2], ax.lines[2:]
    assert len(modes) == 2 and len(orders) == 2
    for k, line in enumerate(modes):
        x, y = line.get_data()
        np.testing.assert_allclose(x, rpm, rtol=1e-14, atol=0)
        np.testing.assert_array_equal(y, frequencies[:, k + 1])
    for order, line in zip((1, 3), orders, strict=True):
        x, y = line.get_data()
        np.testing.assert_allclose(x, rpm, rtol=1e-14, atol=0)
        np.testing.assert_allclose(y, order * revolutions, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(y, order * x / 60.0, rtol=1e-14, atol=1e-14)
    labels = {text.get_text(): text.xy for text in ax.texts}
    assert labels["1×"] == pytest.approx((1200.0, 20.0), rel=1e-14)
    assert labels["3×"] == pytest.approx((1200.0, 60.0), rel=1e-14)
