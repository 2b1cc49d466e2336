"""Transmissions, the <pinext> block and the sidecar TOML: parsed with real parsers."""

import pytest

import pinext as px
from pinext.exceptions import FileFormatError, NameNotFound
from pinext.urdf_extensions import Extensions, default_sidecar, read_extensions
from tests.conftest import URDF, pendulum_urdf

TRANSMISSION = """
<transmission name="t0">
  <type>transmission_interface/SimpleTransmission</type>
  <joint name="j0"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>
  <actuator name="m0"><mechanicalReduction>{reduction}</mechanicalReduction></actuator>
</transmission>
"""


def _urdf(tmp_path, extra="", reduction="50"):
    text = pendulum_urdf(n=2).replace(
        "</robot>", TRANSMISSION.format(reduction=reduction) + extra + "</robot>"
    )
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    return path


def test_transmission_reduction(tmp_path):
    ext = read_extensions(_urdf(tmp_path))
    spec = ext.transmissions["j0"]
    assert (spec.reduction, spec.actuator, spec.name) == (50.0, "m0", "t0")


def test_zero_reduction_is_rejected(tmp_path):
    with pytest.raises(FileFormatError, match="non-zero"):
        read_extensions(_urdf(tmp_path, reduction="0"))


def test_xml_block_and_sidecar_merge(tmp_path):
    block = """<pinext>
      <flexible link="l1" sublinks="4" young_modulus="2e11" second_moment_of_area="1e-9 2e-9"/>
      <drive joint="j0"><gear ratio="30" efficiency="0.8"/></drive>
      <environment mass="2" stiffness="1e4" damping="5"/>
    </pinext>"""
    path = _urdf(tmp_path, block)
    default_sidecar(path).write_text(
        "[drives.j0.gear]\nefficiency = 0.9\n[environment]\ndamping = 7.5\n"
        '[[contacts]]\nframe = "l1"\nsurface = "plane"\n'
    )
    ext = read_extensions(path)
    assert ext.flexible == [
        {"link": "l1", "sublinks": 4, "young_modulus": 2e11, "second_moment_of_area": [1e-9, 2e-9]}
    ]
    assert ext.drives["j0"]["gear"] == {"ratio": 30, "efficiency": 0.9}
    assert ext.environment == {"mass": 2, "stiffness": 1e4, "damping": 7.5}
    assert ext.contacts == [{"frame": "l1", "surface": "plane"}]
    assert len(ext.sources) == 2
    assert read_extensions(path, sidecar=False).drives == {}


def test_malformed_sidecar_names_file_and_key(tmp_path):
    path = _urdf(tmp_path)
    sidecar = tmp_path / "x.toml"
    sidecar.write_text("[motors.j0]\nresistance = 1\n")
    with pytest.raises(FileFormatError) as err:
        read_extensions(path, sidecar)
    assert "x.toml" in str(err.value) and "motors" in str(err.value)
    assert "drives" in str(err.value)  # lists the valid sections
    sidecar.write_text("[drives.j0.brake]\nx = 1\n")
    with pytest.raises(FileFormatError, match="valid parts"):
        read_extensions(path, sidecar)
    sidecar.write_text("drives = [1, 2\n")
    with pytest.raises(FileFormatError, match="TOML"):
        read_extensions(path, sidecar)
    with pytest.raises(FileFormatError, match="not found"):
        read_extensions(path, tmp_path / "missing.toml")


def test_unknown_xml_element_is_rejected(tmp_path):
    with pytest.raises(FileFormatError, match="<pinext><motor>"):
        read_extensions(_urdf(tmp_path, "<pinext><motor joint='j0'/></pinext>"))


def test_sidecar_naming_a_missing_joint(tmp_path):
    path = _urdf(tmp_path)
    default_sidecar(path).write_text("[drives.elbow.gear]\nratio = 10\n")
    with pytest.raises(NameNotFound) as err:
        px.load_urdf(path)
    assert "elbow" in str(err.value) and "j0" in str(err.value) and "j1" in str(err.value)


def test_no_eval_of_file_content(tmp_path):
    path = _urdf(tmp_path, "<pinext><environment mass=\"__import__('os')\"/></pinext>")
    ext = read_extensions(path)
    assert ext.environment == {"mass": "__import__('os')"}  # kept as text, never evaluated


def test_project_urdfs_parse():
    paths = sorted(URDF.glob("*.urdf"))
    assert len(paths) >= 4, f"the project's URDFs were not found in {URDF}"
    extensions = {path.name: read_extensions(path) for path in paths}
    assert all(isinstance(ext, Extensions) for ext in extensions.values())
    # the flexible arm carries its <pinext> block: at least one file contributes extensions
    assert extensions["flexible_arm.urdf"].flexible


@pytest.mark.parametrize(
    ("block", "sidecar"),
    [('<pinext><root_joint type="freeflyer"/></pinext>', None), ("", 'root_joint = "freeflyer"\n')],
    ids=["pinext block", "sidecar"],
)
def test_floating_base_from_the_extension_format(tmp_path, block, sidecar):
    path = _urdf(tmp_path, block)
    if sidecar:
        default_sidecar(path).write_text(sidecar)
    robot = px.load_urdf(path)
    assert robot.model.joints[1].shortname() == "JointModelFreeFlyer"
    assert robot.nq == 7 + 2 and robot.nv == 6 + 2
    assert px.load_urdf(path, root_joint="fixed").nv == 2  # the argument wins
