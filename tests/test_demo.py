"""``pinext demo``: the three scenarios run, the summary is printed, the outputs are written."""

from pinext.cli import main


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
