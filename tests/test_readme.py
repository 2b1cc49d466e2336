"""The README's one-minute example runs as printed, and .ci/run runs the README's test command."""

import re

import pytest

from tests.conftest import ROOT


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    code = python_blocks()[0].replace('"out/slew.npz"', repr(str(tmp_path / "slew.npz")))
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "6.31" in out and "20.4" in out and "90.8" in out
    assert (tmp_path / "slew.npz").exists()


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line for line in lines if "pytest" in line and not line.startswith("#")]
    assert len(commands) == 1
    assert commands[0] in readme


@pytest.mark.parametrize("block", range(len(python_blocks())))
def test_readme_python_blocks_compile(block):
    compile(python_blocks()[block], "README.md", "exec")
