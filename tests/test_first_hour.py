"""docs/first_hour.md: every block runs as written (from the repository's root)."""

from __future__ import annotations

import re
import runpy
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "first_hour.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


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
        runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.strip()
