"""Bad input found in the third round's audit (issue 59) whose API has no test file of its
own: each case raises a pinext error naming the argument, the value and what is valid."""

from __future__ import annotations

import pytest

import pinext as px
from pinext.exceptions import InvalidParameter

BOTH_PATHS = False  # the checks run before any simulation


@pytest.fixture(scope="module")
def trajectory() -> px.Trajectory:
    return px.simulate(px.load_robot("planar3r"), 0.01, output_dt=0.005, progress=False)


@pytest.mark.parametrize("write", ["save", "to_csv"])
def test_a_file_in_the_way_of_the_output_folder_is_named(tmp_path, trajectory, write):
    """Before: ``save("f/x.npz")`` with ``f`` an existing file ended in ``FileExistsError``
    from ``mkdir``; now the file in the way is named."""
    (tmp_path / "f").write_text("not a folder")
    target = tmp_path / "f" / "sub" / "x.out"
    with pytest.raises(InvalidParameter, match=r"cannot be written: .*/f' is a file, not a folder"):
        getattr(trajectory, write)(target)
    assert (tmp_path / "f").read_text() == "not a folder"
