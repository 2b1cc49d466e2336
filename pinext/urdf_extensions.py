"""Read what a URDF carries beyond Pinocchio's model: transmissions and pinext extensions.

Three sources, merged in this order (later ones override earlier ones):

1. The standard URDF ``<transmission>`` elements (``SimpleTransmission``):
   ``mechanicalReduction`` becomes the gear ratio of the joint's drive.
2. A ``<pinext>`` element inside the URDF's ``<robot>``; other URDF tools ignore it.
3. A sidecar TOML file, by default ``<urdf stem>.pinext.toml`` beside the URDF.

Both pinext formats carry the same tables. In TOML::

    [[flexible]]                      # one table per flexible link
    link = "bar"
    sublinks = 10
    young_modulus = 1.0e11            # [Pa]
    second_moment_of_area = 8.33e-10  # [m^4]

    [drives.shoulder.motor]           # drive of joint "shoulder"
    resistance = 1.2                  # [Ohm]
    torque_constant = 0.05            # [N.m/A]
    back_emf_constant = 0.05          # [V.s/rad]
    rotor_inertia = 1.0e-5            # [kg.m^2]
    [drives.shoulder.gear]            # or [drives.shoulder.elastic_transmission]
    ratio = 100                       # default: the URDF <transmission> reduction
    efficiency = 0.9

    [[contacts]]
    frame = "tool"
    surface = "plane"
    tool_stiffness = 5.0e5            # the tool's own spring [N/m] (both sides deform)
    tool_damping = 50.0               # [N.s/m]; tool_mass [kg]: a mass on that spring

    [environment]
    mass = 5.0
    stiffness = 1.0e4
    damping = 20.0

    [support]                         # elastic mount of the base (pinext.ElasticSupport)
    stiffness = { z = 2.0e5, rx = 4.0e4, ry = 4.0e4 }   # [N/m], [N.m/rad]; or 6 values,
    damping = { z = 400.0 }                              # or a 6x6 list of lists
    xyz = [0.0, 0.0, 0.0]             # pivot of the rotations [m] (and rpy [rad])

    [joints.elbow]                    # a spring and damper in any joint (rest at q = 0)
    stiffness = 500.0                 # [N.m/rad or N/m]
    damping = 2.0                     # [N.m.s/rad or N.s/m]

and inside the URDF::

    <pinext>
      <flexible link="bar" sublinks="10" young_modulus="1e11" second_moment_of_area="8.33e-10"/>
      <drive joint="shoulder">
        <motor resistance="1.2" torque_constant="0.05" back_emf_constant="0.05"
               rotor_inertia="1e-5"/>
        <gear ratio="100" efficiency="0.9"/>
      </drive>
      <contact frame="tool" surface="plane"/>
      <environment mass="5" stiffness="1e4" damping="20"/>
      <support xyz="0 0 0">
        <stiffness z="2e5" rx="4e4" ry="4e4"/>   <!-- or stiffness="6 or 36 numbers" -->
        <damping z="400"/>
      </support>
      <joint_spring joint="elbow" stiffness="500" damping="2"/>
    </pinext>

XML attribute values are converted to int, float, a list of floats (whitespace separated) or
left as text. Files are parsed with :mod:`xml.etree.ElementTree` and :mod:`tomllib`; nothing is
evaluated.
"""

from __future__ import annotations

import math
import re
import sys
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .exceptions import FileFormatError, InvalidParameter

#: Top-level tables of the pinext extension format.
SECTIONS = (
    "flexible",
    "drives",
    "contacts",
    "loops",
    "environment",
    "root_joint",
    "joint_friction",
    "support",
    "joints",
)
#: Values of ``root_joint``: a joint between the world and the URDF's root link.
ROOT_JOINTS = ("fixed", "freeflyer", "planar")
#: Parts of a drive table.
DRIVE_PARTS = ("motor", "gear", "elastic_transmission", "actuator")


@dataclass(frozen=True)
class TransmissionSpec:
    """A standard URDF ``<transmission>`` element.

    Attributes:
        name: The transmission's name.
        joint: The joint it drives.
        reduction: ``mechanicalReduction`` [-] (joint speed = motor speed / reduction).
        kind: The ``<type>`` text, e.g. ``transmission_interface/SimpleTransmission``.
        actuator: The actuator's name, if given.
    """

    name: str
    joint: str
    reduction: float
    kind: str = "transmission_interface/SimpleTransmission"
    actuator: str | None = None


@dataclass(frozen=True)
class MimicSpec:
    """A URDF ``<mimic>`` element: ``q_joint = multiplier * q_leader + offset``.

    Attributes:
        joint: The joint that mimics (the follower).
        leader: The joint it follows (``<mimic joint=...>``).
        multiplier: The factor k [-] (default 1).
        offset: The offset c [rad or m] (default 0).
    """

    joint: str
    leader: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass
class Extensions:
    """Everything read from a URDF's transmissions and pinext extensions.

    Attributes:
        transmissions: Joint name -> :class:`TransmissionSpec`.
        mimic: Follower joint name -> :class:`MimicSpec` (the URDF's ``<mimic>`` elements).
        flexible: One dict of :class:`pinext.FlexibleLink` parameters per flexible link.
        drives: Joint name -> {part: parameters}, parts among ``DRIVE_PARTS``.
        contacts: One dict of parameters per contact.
        loops: One dict of :class:`pinext.Loop` parameters per loop closure (``frame_a``,
            ``frame_b``, ``kind``, ``xyz``/``rpy`` of the placement, ``axis``, ``name``).
        environment: Parameters of the dynamic environment, or None.
        sources: The files that contributed, in order.
        origins: Table (``"drives.<joint>"``, ``"flexible.<link>"``, ``"environment"``,
            ``"root_joint"``) -> the file it was last read from, for error messages.
        root_joint: ``"freeflyer"``, ``"planar"`` or None: a joint between the world and the
            URDF's root link (``root_joint = "freeflyer"`` / ``<root_joint type="freeflyer"/>``).
        joint_friction: Joint name -> Coulomb friction torque F_c [N.m or N]
            (``[joint_friction]`` table / ``<joint_friction joint=... friction=.../>``);
            overrides the URDF's ``<dynamics friction>``.
        support: Parameters of the elastic support (:meth:`pinext.ElasticSupport.from_dict`),
            or None.
        joints: Joint name -> ``{"stiffness": ..., "damping": ...}`` (``[joints.NAME]``
            tables / ``<joint_spring joint=... stiffness=... damping=.../>``).
    """

    transmissions: dict[str, TransmissionSpec] = field(default_factory=dict)
    mimic: dict[str, MimicSpec] = field(default_factory=dict)
    flexible: list[dict[str, Any]] = field(default_factory=list)
    drives: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    contacts: list[dict[str, Any]] = field(default_factory=list)
    loops: list[dict[str, Any]] = field(default_factory=list)
    environment: dict[str, Any] | None = None
    sources: list[str] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)
    root_joint: str | None = None
    joint_friction: dict[str, float] = field(default_factory=dict)
    support: dict[str, Any] | None = None
    joints: dict[str, dict[str, Any]] = field(default_factory=dict)

    def merge(self, tables: dict[str, Any], source: str) -> None:
        """Merge pinext tables read from ``source`` (later sources win, key by key)."""
        for entry in tables.get("flexible", []):
            self.flexible = [f for f in self.flexible if f.get("link") != entry.get("link")]
            self.flexible.append(dict(entry))
            self.origins[f"flexible.{entry.get('link')}"] = source
        for joint, parts in tables.get("drives", {}).items():
            self.origins[f"drives.{joint}"] = source
            mine = self.drives.setdefault(joint, {})
            for part, params in parts.items():
                mine.setdefault(part, {}).update(params)
        self.contacts.extend(dict(c) for c in tables.get("contacts", []))
        self.loops.extend(dict(c) for c in tables.get("loops", []))
        if tables.get("environment") is not None:
            self.environment = {**(self.environment or {}), **tables["environment"]}
            self.origins["environment"] = source
        if tables.get("root_joint") is not None:
            self.root_joint = tables["root_joint"]
            self.origins["root_joint"] = source
        for joint, value in tables.get("joint_friction", {}).items():
            self.joint_friction[joint] = float(value)
            self.origins[f"joint_friction.{joint}"] = source
        if tables.get("support") is not None:
            self.support = {**(self.support or {}), **tables["support"]}
            self.origins["support"] = source
        for joint, params in tables.get("joints", {}).items():
            self.joints.setdefault(joint, {}).update(params)
            self.origins[f"joints.{joint}"] = source
        self.sources.append(source)


_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _value(text: str) -> Any:
    """Convert an XML attribute value: int, float, list of floats, bool or text."""
    words = text.split()
    if len(words) > 1 and all(_NUMBER.match(w) for w in words):
        return [float(w) for w in words]
    if _NUMBER.match(text.strip()):
        stripped = text.strip()
        return int(stripped) if re.fullmatch(r"[+-]?\d+", stripped) else float(stripped)
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    return text


def _check_tables(tables: dict[str, Any], path: str) -> dict[str, Any]:
    """Check the structure of pinext tables and return them."""
    for key in tables:
        if key not in SECTIONS:
            raise FileFormatError(
                path, key, f"unknown section; valid sections: {', '.join(SECTIONS)}"
            )
    for i, entry in enumerate(tables.get("flexible", [])):
        if not isinstance(entry, dict) or "link" not in entry:
            raise FileFormatError(path, f"flexible[{i}]", "each flexible entry needs a 'link'")
    drives = tables.get("drives", {})
    if not isinstance(drives, dict):
        raise FileFormatError(path, "drives", "expected a table of joint names")
    for joint, parts in drives.items():
        if not isinstance(parts, dict):
            raise FileFormatError(path, f"drives.{joint}", "expected a table of drive parts")
        for part, params in parts.items():
            if part not in DRIVE_PARTS:
                raise FileFormatError(
                    path,
                    f"drives.{joint}.{part}",
                    f"unknown drive part; valid parts: {', '.join(DRIVE_PARTS)}",
                )
            if not isinstance(params, dict):
                raise FileFormatError(path, f"drives.{joint}.{part}", "expected a table")
    for i, entry in enumerate(tables.get("contacts", [])):
        if not isinstance(entry, dict):
            raise FileFormatError(path, f"contacts[{i}]", "expected a table")
    for i, entry in enumerate(tables.get("loops", [])):
        if not isinstance(entry, dict) or "frame_a" not in entry or "frame_b" not in entry:
            raise FileFormatError(path, f"loops[{i}]", "each loop needs 'frame_a' and 'frame_b'")
    env = tables.get("environment")
    if env is not None and not isinstance(env, dict):
        raise FileFormatError(path, "environment", "expected a table")
    friction = tables.get("joint_friction", {})
    if not isinstance(friction, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in friction.values()
    ):
        raise FileFormatError(
            path, "joint_friction", "expected a table of joint names -> friction [N.m or N]"
        )
    support = tables.get("support")
    if support is not None and not isinstance(support, dict):
        raise FileFormatError(path, "support", "expected a table (stiffness, damping, ...)")
    joints = tables.get("joints", {})
    if not isinstance(joints, dict) or not all(isinstance(p, dict) for p in joints.values()):
        raise FileFormatError(
            path, "joints", "expected tables [joints.NAME] with stiffness and damping"
        )
    root = tables.get("root_joint")
    if root is not None and root not in ROOT_JOINTS:
        raise FileFormatError(
            path, "root_joint", f"unknown root joint {root!r}; valid: {', '.join(ROOT_JOINTS)}"
        )
    return tables


def _xml_tables(element: ET.Element, path: str) -> dict[str, Any]:
    """Convert a ``<pinext>`` element to the tables of the TOML format."""
    tables: dict[str, Any] = {}
    for child in element:
        params = {k: _value(v) for k, v in child.attrib.items()}
        if child.tag == "flexible":
            tables.setdefault("flexible", []).append(params)
        elif child.tag == "contact":
            tables.setdefault("contacts", []).append(params)
        elif child.tag == "loop":
            tables.setdefault("loops", []).append(params)
        elif child.tag == "environment":
            tables["environment"] = params
        elif child.tag == "root_joint":
            tables["root_joint"] = child.get("type")
        elif child.tag == "joint_friction":
            joint = child.get("joint")
            if not joint or "friction" not in child.attrib:
                raise FileFormatError(
                    path, "<pinext><joint_friction>", "needs attributes 'joint' and 'friction'"
                )
            tables.setdefault("joint_friction", {})[joint] = _value(child.attrib["friction"])
        elif child.tag == "support":
            for part in child:
                if part.tag not in ("stiffness", "damping"):
                    raise FileFormatError(
                        path, f"<pinext><support><{part.tag}>", "valid: stiffness, damping"
                    )
                params[part.tag] = {k: _value(v) for k, v in part.attrib.items()}
            side = len(str(params.get("axes", "x y z rx ry rz")).split())
            for key in ("stiffness", "damping"):  # n*n numbers: a matrix, row by row
                values = params.get(key)
                if isinstance(values, list) and side > 1 and len(values) == side * side:
                    params[key] = [values[i : i + side] for i in range(0, len(values), side)]
            tables["support"] = params
        elif child.tag == "joint_spring":
            joint = params.pop("joint", None)
            if not joint:
                raise FileFormatError(path, "<pinext><joint_spring>", "missing attribute 'joint'")
            tables.setdefault("joints", {})[str(joint)] = params
        elif child.tag == "drive":
            joint = child.get("joint")
            if not joint:
                raise FileFormatError(path, "<pinext><drive>", "missing attribute 'joint'")
            parts = tables.setdefault("drives", {}).setdefault(joint, {})
            for part in child:
                parts[part.tag] = {k: _value(v) for k, v in part.attrib.items()}
        else:
            raise FileFormatError(
                path,
                f"<pinext><{child.tag}>",
                "unknown element; valid elements: flexible, drive, contact, loop, environment, "
                "root_joint, joint_friction, support, joint_spring",
            )
    return _check_tables(tables, path)


def _transmissions(root: ET.Element, path: str) -> dict[str, TransmissionSpec]:
    """Read the ``<transmission>`` elements of a URDF."""
    found: dict[str, TransmissionSpec] = {}
    for trans in root.iter("transmission"):
        name = trans.get("name", "")
        kind = (trans.findtext("type") or "").strip()
        joints = trans.findall("joint")
        if len(joints) != 1:
            continue  # differential and other multi-joint transmissions are not drives of one joint
        joint = joints[0].get("name")
        if not joint:
            raise FileFormatError(path, f"<transmission name='{name}'>", "joint without a name")
        actuator = trans.find("actuator")
        text = None
        if actuator is not None:
            text = actuator.findtext("mechanicalReduction")
        if text is None:
            text = trans.findtext("mechanicalReduction")
        try:
            reduction = float(text) if text is not None else 1.0
        except ValueError:
            raise FileFormatError(
                path,
                f"<transmission name='{name}'>",
                f"mechanicalReduction '{text}' is not a number",
            ) from None
        if reduction == 0.0:
            raise FileFormatError(
                path, f"<transmission name='{name}'>", "mechanicalReduction must be non-zero"
            )
        found[joint] = TransmissionSpec(
            name, joint, reduction, kind, actuator.get("name") if actuator is not None else None
        )
    return found


def _mimics(root: ET.Element, path: str) -> dict[str, MimicSpec]:
    """Read the ``<mimic>`` elements of a URDF's joints."""
    found: dict[str, MimicSpec] = {}
    for joint in root.iter("joint"):
        mimic = joint.find("mimic")
        if mimic is None:
            continue
        name, where = joint.get("name", ""), f"<joint name='{joint.get('name', '')}'>"
        leader = mimic.get("joint")
        if not leader:
            raise FileFormatError(path, where, "<mimic> without a joint attribute")
        values = []
        for attribute, default in (("multiplier", 1.0), ("offset", 0.0)):
            text = mimic.get(attribute)
            try:
                values.append(float(text) if text is not None else default)
            except ValueError:
                raise FileFormatError(
                    path, where, f"<mimic {attribute}='{text}'> is not a number"
                ) from None
        found[name] = MimicSpec(name, leader, *values)
    return found


#: Numeric attributes of a URDF ``<inertial>`` element: (child, attribute, unit).
_INERTIAL_NUMBERS = (
    ("mass", "value", "[kg]"),
    *(("inertia", a, "[kg.m^2]") for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")),
)


def check_inertial_elements(root: ET.Element, path: str | Path) -> None:
    """Reject ``<inertial>`` values that are not finite numbers, naming link and attribute.

    Pinocchio's URDF parser turns a value it cannot read (``izz="nan"``, ``mass="abc"``) into a
    zero mass or a zero inertia tensor with only a message on the console; a robot would then
    load with the wrong dynamics.

    Raises:
        FileFormatError: A missing or non-finite ``<mass value>`` or ``<inertia>`` attribute,
            or a ``<origin xyz/rpy>`` that is not three finite numbers. A zero mass with
            nonzero moments of inertia is only warned about (some real robots' files have it).
    """
    for link in root.iter("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        name = link.get("name", "?")
        values = {}
        for child, attribute, unit in _INERTIAL_NUMBERS:
            element = inertial.find(child)
            where = f"<link name='{name}'><inertial><{child} {attribute}>"
            if element is None:
                if child == "inertia":
                    break  # urdfdom's rule: no <inertia> means zero inertia (point mass)
                raise FileFormatError(str(path), f"<link name='{name}'><inertial>", "no <mass>")
            text = element.get(attribute)
            if text is None and child == "inertia":
                text = "0"  # urdfdom reads a missing off-diagonal entry as 0
            try:
                value = float(text) if text is not None else math.nan
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise FileFormatError(
                    str(path), where, f"{text!r} is not a finite number; expected {unit}"
                )
            values[attribute] = value
        moments = [abs(values.get(a, 0.0)) for a in ("ixx", "iyy", "izz")]
        if values.get("value") == 0.0 and max(moments) > 0.0:
            warnings.warn(  # physically inconsistent, but Pinocchio uses it as given
                f"{path}: <link name='{name}'><inertial>: zero mass with a nonzero <inertia> "
                "(a body without mass has no rotational inertia)",
                RuntimeWarning,
                stacklevel=3,
            )
        origin = inertial.find("origin")
        for attribute in ("xyz", "rpy"):
            text = origin.get(attribute) if origin is not None else None
            if text is None:
                continue
            try:
                numbers = [float(w) for w in text.split()]
            except ValueError:
                numbers = []
            if len(numbers) != 3 or not all(math.isfinite(v) for v in numbers):
                raise FileFormatError(
                    str(path),
                    f"<link name='{name}'><inertial><origin {attribute}>",
                    f"{text!r} is not three finite numbers",
                )


def parse_urdf_xml(path: str | Path) -> ET.Element:
    """Parse a URDF file; syntax errors name the file and line."""
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as err:
        line = err.position[0] if err.position else "?"
        raise FileFormatError(str(path), f"line {line}", f"malformed XML ({err})") from None
    except OSError as err:
        raise FileFormatError(str(path), "file", str(err)) from None


def read_sidecar(path: str | Path) -> dict[str, Any]:
    """Read a sidecar TOML file into checked pinext tables."""
    try:
        with open(path, "rb") as stream:
            tables = tomllib.load(stream)
    except tomllib.TOMLDecodeError as err:
        raise FileFormatError(str(path), "TOML", str(err)) from None
    except UnicodeDecodeError as err:
        raise FileFormatError(
            str(path), "TOML", f"not a UTF-8 text file ({err.reason} at byte {err.start})"
        ) from None
    except OSError as err:
        raise FileFormatError(str(path), "file", str(err)) from None
    return _check_tables(tables, str(path))


def default_sidecar(urdf_path: str | Path) -> Path:
    """The sidecar file looked for beside a URDF: ``<stem>.pinext.toml``."""
    path = Path(urdf_path)
    return path.with_name(path.stem + ".pinext.toml")


def read_extensions(urdf_path: str | Path, sidecar: str | Path | bool | None = None) -> Extensions:
    """Read transmissions and pinext extensions of a URDF.

    Args:
        urdf_path: The URDF file.
        sidecar: A TOML file; None looks for :func:`default_sidecar`; False reads only the
            standard ``<transmission>`` elements (no pinext extensions at all).

    Returns:
        The merged :class:`Extensions`.
    """
    root = parse_urdf_xml(urdf_path)
    ext = Extensions(
        transmissions=_transmissions(root, str(urdf_path)), mimic=_mimics(root, str(urdf_path))
    )
    if sidecar is False:
        return ext
    if sidecar is True:
        raise InvalidParameter("sidecar must be a TOML file, None or False, got True")
    for block in root.findall("pinext"):
        ext.merge(_xml_tables(block, str(urdf_path)), str(urdf_path))
    if sidecar is None:
        candidate = default_sidecar(urdf_path)
        sidecar = candidate if candidate.exists() else None
    elif not Path(sidecar).exists():
        raise FileFormatError(str(sidecar), "file", "sidecar file not found")
    if sidecar:
        ext.merge(read_sidecar(sidecar), str(sidecar))
    return ext
