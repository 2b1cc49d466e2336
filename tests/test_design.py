"""Design checks, motor catalogue, `pinext design` and its self-contained HTML report."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import pinext as px
from pinext.cli import main
from pinext.exceptions import FileFormatError, NameNotFound
from pinext.planning import (
    DriveLimits,
    LinkLimits,
    RestToRest,
    check_design,
    drive_requirements,
    load_catalogue,
    run_design,
)

from .conftest import ROOT, URDF, pendulum_urdf

CATALOGUE = ROOT / "examples" / "dc_motors.toml"


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.rows = 0
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag == "tr":
            self.rows += 1
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            if value and not value.startswith("data:"):
                self.external.append(value)


def _spec(tmp_path: Path, *, max_temperature: float = 150.0) -> Path:
    (tmp_path / "pendulum.urdf").write_text(pendulum_urdf(1, 0.4, 2.0))
    shutil.copy(CATALOGUE, tmp_path / "motors.toml")
    spec = tmp_path / "design.toml"
    spec.write_text(
        f"""
title = "pendulum drive"
robot = "pendulum.urdf"
catalogue = "motors.toml"
samples = 401
[motion]
law = "rest_to_rest"
q0 = [0.0]
dq = [1.5]
duration = 1.0
[drives.j0]
catalogue_motor = "DC40-48V-150W"
gear = {{ ratio = 60.0, efficiency = 0.85 }}
[limits.j0]
max_winding_temperature = {max_temperature}
"""
    )
    return spec


def test_catalogue_has_five_motors_with_ratings() -> None:
    catalogue = load_catalogue(CATALOGUE)
    assert len(catalogue) == 5
    for entry in catalogue.values():
        assert entry.motor.thermal and entry.motor.voltage_limit == entry.limits.max_voltage
        assert entry.limits.peak_torque > entry.limits.rated_torque > 0


def test_check_rows_margins_and_verdict(tmp_path: Path) -> None:
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(1, 0.4, 2.0))
    robot = px.load_urdf(path)
    entry = load_catalogue(CATALOGUE)["DC40-48V-150W"]
    drives = {"j0": px.Drive(entry.motor, px.Gear(60.0))}
    report = drive_requirements(robot, RestToRest([0.0], [1.5], 1.0), drives=drives, samples=401)
    check = check_design(report, {"j0": entry.limits})
    assert len(check.rows) == 5 and check.passed
    row = check.rows[0]
    assert row.value == pytest.approx(report.rms_motor_torque[0])
    assert row.margin == pytest.approx(1 - row.value / entry.limits.rated_torque)
    tight = check_design(report, {"j0": DriveLimits(peak_torque=0.5 * report.peak_motor_torque[0])})
    assert not tight.passed and tight.rows[0].margin == pytest.approx(-1.0)
    assert "FAIL" in tight.table()
    with pytest.raises(NameNotFound):
        check_design(report, {"j9": DriveLimits(peak_torque=1.0)})
    with pytest.raises(NameNotFound, match="flexible link"):
        check_design(report, link_limits={"bar": LinkLimits(max_stress=1.0)})


def test_flexible_link_limits(tmp_path: Path) -> None:
    robot = px.load_urdf(URDF / "flexible_arm.urdf")
    t = np.linspace(0.0, 0.5, 3)
    q, a = np.zeros((3, 1)), np.full((3, 1), 2.0)
    report = drive_requirements(robot, (t, q, q, a), section_modulus={"bar": 1e-6 / 6})
    stress = report.flexible["bar"].peak_stress
    check = check_design(
        report, link_limits={"bar": LinkLimits(max_stress=2 * stress, max_tip_deflection=1e-4)}
    )
    assert [r.passed for r in check.rows] == [True, False]


def test_pinext_design_prints_the_table_and_writes_a_self_contained_report(
    tmp_path: Path, capsys
) -> None:
    spec = _spec(tmp_path)
    html = tmp_path / "out" / "report.html"
    assert main(["design", str(spec), "--html", str(html)]) == 0
    printed = capsys.readouterr().out
    assert "RMS motor torque" in printed and "design: PASS" in printed
    text = html.read_text()
    parser = _Collector()
    parser.feed(text)
    assert parser.external == []  # nothing to fetch: opens offline
    assert len(parser.images) == 4 and parser.rows >= 6
    for src in parser.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert re.search(r"Speed.torque diagrams", text) and "Winding temperature" in text
    # a limit that is exceeded: exit status 1 and FAIL in the table
    assert main(["design", str(_spec(tmp_path, max_temperature=25.001))]) == 1
    assert "FAIL" in capsys.readouterr().out
    assert (tmp_path / "design.html").is_file()


def test_example_specification_passes(tmp_path: Path) -> None:
    result = run_design(ROOT / "examples" / "design_six_dof_arm.toml", html=tmp_path / "r.html")
    assert result.check.passed and len(result.check.rows) == 30
    assert result.report.ratio.tolist() == [160.0] * 5 + [30.0]


def test_spec_errors(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    spec.write_text(spec.read_text().replace("DC40-48V-150W", "DC99"))
    with pytest.raises(NameNotFound, match="Available catalogue motor names: DC22"):
        run_design(spec)
    bad = tmp_path / "bad.toml"
    bad.write_text("robot = 'pendulum.urdf'\n")
    with pytest.raises(FileFormatError, match="motion"):
        run_design(bad)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed")
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    html = run_design(spec).html
    shot = tmp_path / "shot.png"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                "chromium", "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", f"--user-data-dir={profile}",
                "--window-size=1200,2400", f"--screenshot={shot}", html.resolve().as_uri(),
            ],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_size_drives_example_chooses_a_passing_design() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("size_drives", ROOT / "examples/size_drives.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    robot = px.load_urdf(URDF / "six_dof_arm.urdf", extensions=False)
    motion = module.pick_and_place()
    drives, limits = module.size(robot, motion, load_catalogue(CATALOGUE))
    report = drive_requirements(robot, motion, drives=drives, samples=401)
    assert check_design(report, limits).passed
    assert set(report.ratio) <= set(module.RATIOS)
