"""The pinext command: info, simulate, errors (demo, check and view have their own tests)."""

import subprocess
import sys

import numpy as np

import pinext as px
from pinext.cli import main
from tests.conftest import URDF


def test_info_lists_transmissions_of_a_real_robot(ur5_urdf, capsys):
    assert main(["info", str(ur5_urdf)]) == 0
    out = capsys.readouterr().out
    for joint in ("shoulder_pan_joint", "elbow_joint", "wrist_3_joint"):
        assert joint in out
    assert out.count("SimpleTransmission") == 6
    assert "state size" in out and "12" in out


def test_info_shows_elastic_dofs(capsys):
    assert main(["info", str(URDF / "flexible_arm.urdf")]) == 0
    out = capsys.readouterr().out
    assert "elastic DOFs: 5" in out and "bar" in out


def test_simulate_writes_a_trajectory(tmp_path, capsys):
    out = tmp_path / "run.npz"
    code = main(
        [
            "simulate",
            str(URDF / "planar3r.urdf"),
            "--duration",
            "0.5",
            "--out",
            str(out),
            "--q0",
            "0.1",
            "0.2",
            "0.3",
            "--quiet",
        ]
    )
    assert code == 0
    traj = px.Trajectory.load(out)
    assert traj.t[-1] == 0.5 and np.allclose(traj.q[0], [0.1, 0.2, 0.3])
    assert "energy balance" in capsys.readouterr().out


def test_errors_are_reported_not_raised(tmp_path, capsys):
    assert main(["info", str(tmp_path / "missing.urdf")]) == 2
    assert "URDF file not found" in capsys.readouterr().err


def test_python_dash_m_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "pinext", "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.startswith("pinext ")


def test_simulate_a_named_robot_with_torques_to_csv(robots_dir, tmp_path, capsys):
    out = tmp_path / "r.csv"
    argv = ["simulate", "ur5", "--duration", "0.2", "--output-dt", "0.1", "--out", str(out)]
    assert main([*argv, "--torque", "shoulder_lift_joint=2", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert (
        f"written                    {out}" in printed
        and "final time [s]             0.2" in printed
    )
    header = out.read_text().splitlines()[0].split(",")
    assert "q.shoulder_lift_joint [rad]" in header and "input.shoulder_lift_joint [N.m]" in header
    assert not (tmp_path / "r.csv.npz").exists()


def test_root_joint_and_package_dirs_flags(tmp_path, capsys):
    argv = ["info", str(URDF / "planar3r.urdf"), "--root-joint", "freeflyer"]
    assert main([*argv, "--package-dirs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "JointModelFreeFlyer" in out and "21 = q 10 + v 9 + 2 energy entries" in out


def test_misspellings_get_suggestions(capsys):
    import pytest

    for argv, hint in [
        (["simulte", "ur5"], "did you mean simulate?"),
        (["simulate", "ur5", "--durration", "1", "--out", "x.npz"], "did you mean --duration?"),
        (["simulate", "ur5", "--duration", "1", "--out", "x", "--method", "radau"], "Radau"),
    ]:
        with pytest.raises(SystemExit):
            main(argv)
        assert hint in capsys.readouterr().err


def test_unknown_joint_in_torque_suggests(robots_dir, tmp_path, capsys):
    argv = ["simulate", "ur5", "--duration", "0.1", "--out", str(tmp_path / "r.npz")]
    assert main([*argv, "--torque", "elbow=1", "--quiet"]) == 2
    assert "Did you mean 'elbow_joint'" in capsys.readouterr().err


def test_simulate_names_the_flags_the_user_typed(tmp_path, capsys):
    """Before: ``--duration nan`` said "t_final must be ..." and ``--output-dt -1`` "output_dt
    must be None ...", names of the Python API the command line does not show. Refused before
    the robot is loaded, exit 2, nothing written."""
    out = tmp_path / "r.npz"
    for flags, message in [
        (
            ["--duration", "nan"],
            "--duration must be a finite number > 0 [s] (simulated time), got nan",
        ),
        (["--duration", "0"], "--duration must be a finite number > 0"),
        (["--duration", "1", "--output-dt", "-1"], "--output-dt must be a finite number > 0"),
        (["--duration", "1", "--output-dt", "inf"], "--output-dt must be a finite number > 0"),
    ]:
        assert main(["simulate", "planar3r", *flags, "--out", str(out), "--quiet"]) == 2
        assert message in capsys.readouterr().err
    assert not out.exists()
