"""docs/first_hour.md: every block runs as written (from the repository's root)."""

from __future__ import annotations

import re
import runpy
import warnings
from pathlib import Path

import pinocchio as pin
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "first_hour.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


#: What the printed figures claim, task by task: the figure's pattern and its check against
#: the law it states (the driven joints track to a hundredth of a milliradian; the feet carry
#: the robot's weight m g once it stands).
CLAIMS = {
    2: (r"six driven joints ([\d.]+) mrad", lambda value, robot: value < 0.05),
    3: (
        r"feet carry ([\d.]+) N",
        lambda value, robot: abs(value - 9.81 * pin.computeTotalMass(robot.model)) < 1e-3 * value,
    ),
}


def test_the_page_has_the_five_tasks():
    assert len(BLOCKS) == 5


@pytest.mark.parametrize("block", range(len(BLOCKS)), ids=lambda k: f"task{k + 1}")
def test_first_hour_task_runs_as_written(block, tmp_path, monkeypatch, capsys, robots_dir):
    script = tmp_path / f"task{block + 1}.py"
    script.write_text(BLOCKS[block], encoding="utf-8")
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # the page's paths: from the root
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the page's tasks print no warning a user cannot act on
        names = runpy.run_path(str(script), run_name="__main__")
    printed = capsys.readouterr().out.strip()
    assert printed
    if block + 1 in CLAIMS:  # the figure is what the page says it is
        pattern, holds = CLAIMS[block + 1]
        value = float(re.search(pattern, printed).group(1))
        robot = names.get("robot", names.get("panda"))
        assert holds(value, robot), printed
