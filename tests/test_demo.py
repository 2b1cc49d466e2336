"""``pinext demo``: the three scenarios run, the summary is printed, the outputs are written."""

import warnings

import numpy as np
import pytest

import pinext as px
from pinext.cli import main
from pinext.contact import VelocityLimitWarning
from pinext.demo import elastic_drives
from pinext.planning import track_rest_to_rest


def test_demo_quick_writes_its_outputs(tmp_path, capsys):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for title in ("Writing task", "Flexible arm", "Elastic DC drives"):
        assert title in out
    assert "6.309    20.39    41.88    65.58    90.81" in out  # seed 001 (72)
    for name in (
        "writing_rigid.npz",
        "writing_compliant.npz",
        "writing_spring.npz",
        "flexible_slew.npz",
        "elastic_drives.npz",
        "demo.html",
        "contact_force.png",
        "contact_force.svg",
        "link_vs_motor.png",
        "mode_shapes.png",
    ):
        assert (tmp_path / name).stat().st_size > 1000, name


def _arm_with_harmonic_drives():
    from pinext.drives import harmonic_drives
    from pinext.robots import robot_path

    robot = px.load_urdf(robot_path("six_dof_arm"), extensions=False)
    return px.System(robot, drives=harmonic_drives(list(robot.model.names)[1:7]))


def test_elastic_drives_scene_keeps_within_the_velocity_limits(tmp_path):
    """The demo's elastic drives (issue 59: shoulder_pan ran at 3.65 rad/s against its 3):
    no VelocityLimitWarning, and every joint below 80 % of the model's velocityLimit."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", VelocityLimitWarning)
        elastic_drives(tmp_path, quick=True)
    traj = px.Trajectory.load(tmp_path / "elastic_drives.npz")
    limit = _arm_with_harmonic_drives().model.velocityLimit
    peak = np.abs(traj.v[:, :6]).max(axis=0)
    assert np.all(peak < 0.8 * limit), peak / limit


def test_a_velocity_warning_names_the_line_that_called_pinext():
    """A run that legitimately exceeds a limit, started through pinext's own functions
    (track_rest_to_rest calls simulate): the warning's source is this file's call, not
    pinext/planning/feedforward.py (issue 59)."""
    from pinext.sweep.studies import MOTION

    system = _arm_with_harmonic_drives()
    with pytest.warns(VelocityLimitWarning, match="shoulder_pan") as caught:
        track_rest_to_rest(system, *MOTION, 0.2, rtol=1e-6, atol=1e-8, progress=False)
    assert {w.filename for w in caught if w.category is VelocityLimitWarning} == {__file__}
