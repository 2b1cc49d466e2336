"""The cross-check behind ``pinext check URDF``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from pinext import check as chk
from pinext.check import check_model, check_urdf
from pinext.dynamics import appell_inverse_dynamics, gauss_forward_dynamics
from pinext.exceptions import NameNotFound
from pinext.robots import robot_names, robot_path

ROOT = Path(__file__).resolve().parents[1]
PROJECT_URDFS = [robot_path(name) for name in robot_names()]


@pytest.mark.parametrize("path", PROJECT_URDFS, ids=lambda p: p.name)
def test_passes_on_project_robots(path):
    report = check_model(pin.buildModelFromUrdf(str(path)), samples=3)
    assert report.passed, report.table()
    assert "all checks passed" in report.table()


def test_passes_on_real_arm_and_free_flyer(robots_dir):
    report = check_urdf(str(robots_dir / "panda_description" / "urdf" / "panda.urdf"), samples=3)
    assert report.passed, report.table()
    assert any(r.reference == "constraintDynamics" for r in report.rows)
    report = check_model(pin.buildSampleModelHumanoid(), samples=2)
    assert report.passed, report.table()


def test_broken_formulation_fails_and_is_named():
    model = pin.buildModelFromUrdf(str(robot_path("twotr")))

    def broken(model, data, q, v, a, fext=None):
        tau = appell_inverse_dynamics(model, data, q, v, a, fext)
        tau[-1] += 1e-3  # a tiny, plausible-looking error
        return tau

    report = check_model(model, samples=3, functions={"appell_inverse_dynamics": broken})
    assert not report.passed
    assert [r.name for r in report.failed] == ["dS/da + g (Appell ID)"]
    assert report.failed[0].error > 1e-5
    table = report.table()
    assert "FAIL" in table and "FAILED: dS/da + g (Appell ID)" in table


def test_broken_gauss_fails_contact_and_unconstrained_rows():
    model = pin.buildSampleModelManipulator()

    def broken(model, data, q, v, tau, *, constraints=None):
        res = gauss_forward_dynamics(model, data, q, v, tau, constraints=constraints)
        return res._replace(acceleration=res.acceleration * (1 + 1e-6))

    report = check_model(model, samples=2, functions={"gauss_forward_dynamics": broken})
    names = {r.name for r in report.failed}
    assert "Gauss, unconstrained" in names and any("contact" in n for n in names)


def test_unknown_function_name_lists_the_choices():
    with pytest.raises(NameNotFound, match="appell_inverse_dynamics"):
        check_model(pin.buildSampleModelManipulator(), functions={"rnea": lambda *a: 0})


def test_registered_rows_appear():
    chk.register_check("always zero", lambda model, states: 0.0, 1e-12)
    try:
        report = check_model(pin.buildSampleModelManipulator(), samples=1)
        assert report.rows[-1].name == "always zero" and report.passed
    finally:
        chk._EXTRA.pop("always zero")


def test_command_line_exit_codes(monkeypatch, capsys):
    cli = pytest.importorskip("pinext.cli")
    path = str(robot_path("twotr"))
    assert cli.main(["check", path]) == 0
    assert "all checks passed" in capsys.readouterr().out

    def broken(model, data, q, v, a, fext=None):
        return appell_inverse_dynamics(model, data, q, v, a, fext) + 1e-3

    monkeypatch.setitem(chk.DEFAULT_FUNCTIONS, "appell_inverse_dynamics", broken)
    assert cli.main(["check", path]) != 0
    out = capsys.readouterr().out
    assert "FAILED: dS/da + g (Appell ID)" in out


def test_random_states_are_seeded_and_finite():
    model = pin.buildSampleModelHumanoid()
    s1 = chk.random_state(model, np.random.default_rng(3))
    s2 = chk.random_state(model, np.random.default_rng(3))
    np.testing.assert_array_equal(s1.q, s2.q)
    assert np.all(np.isfinite(s1.q))


def test_contact_rows_compare_with_pinocchio(monkeypatch):
    """pinext.check lists contact's impact and constrained-motion rows (ROWS); a broken impact
    law fails."""
    import pinext.contact.checks as contact_checks

    model = pin.buildModelFromUrdf(str(robot_path("six_dof_arm")))
    report = chk.check_model(model, seed=4, samples=3)
    names = {r.name: r for r in report.rows}
    assert names["plastic impact, 3D contact"].reference == "impulseDynamics"
    assert names["plastic impact, 3D contact"].passed
    assert names["constrained motion, 3D contact"].passed

    from pinext.contact.impact import ImpactResult

    monkeypatch.setattr(
        contact_checks, "plastic_impact", lambda model, data, q, v, jac: ImpactResult(v, None)
    )
    report = chk.check_model(model, seed=4, samples=3)
    assert not report.passed
    assert [r.name for r in report.failed] == ["plastic impact, 3D contact"]
