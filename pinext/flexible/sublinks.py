"""Flexible links as chains of rigid sublinks joined by elastic joints (Celentano 2008, §5).

A URDF link of length :math:`L` becomes :math:`\\nu + 1` rigid sublinks: the two end ones of
length :math:`L/2\\nu`, the inner ones of length :math:`L/\\nu`, joined by :math:`\\nu` elastic
joints (Celentano 2008, §5.1, Fig. 12). The elastic energy of the link is (67)–(68)

.. math::

    U = \\tfrac12 K \\sum_{k=1}^{\\nu} \\beta_k^2, \\qquad K = \\frac{E I}{L/\\nu},

one revolute joint per bending axis and elastic node (planar bending: one axis; spatial bending:
two axes, each with its own :math:`I`), plus a torsion joint of stiffness :math:`GJ/(L/\\nu)`
about the beam axis when the shear modulus and the polar moment are given.

Conventions (documented here once):

* Beam axis. From the link frame origin to the origin of its farthest movable child joint (or,
  without one, its farthest fixed child joint). A terminal link needs ``length=``; its axis then
  runs from the link origin through the link's centre of mass, or along the link frame's x axis
  when the centre of mass is at the origin.
* Bending axes (default). Planar bending: the link's joint axis made normal to the beam (the
  axis about which the joint swings the beam), or the link frame axis most normal to the beam
  when the joint axis runs along the beam (or the joint is not a revolute). Spatial bending: that
  axis and ``beam × axis``. ``bending_axes=`` gives them explicitly, in the link frame.
* Mass and inertia. The beam's mass per length defaults to link mass / L. Sublink ``k`` of
  length :math:`\\ell_k` carries mass :math:`\\mu\\ell_k`, its centre of mass on the beam axis at
  the middle of the slice, shifted by the (constant) offset of the URDF centre of mass from the
  beam's mid point, and the rotational inertia about its centre of mass

  .. math::

      I_k = \\frac{\\mu\\ell_k}{\\mu L}\\, S + \\frac{\\mu\\ell_k\\,\\ell_k^2}{12}(1 - e e^T),
      \\qquad S = I_c - \\frac{m L^2}{12}(1 - e e^T),

  with :math:`I_c` the URDF inertia about its centre of mass and :math:`e` the beam axis. ``S`` is
  the "section" part of the inertia (what remains once the slender-rod part is taken away). Mass,
  centre of mass and inertia of the link are then preserved exactly (parallel-axis theorem).
  When the URDF inertia is smaller than a uniform rod's across the beam, ``S`` is not positive
  semi-definite; its negative eigenvalues are set to zero (with a warning) and the total
  inertia grows by that amount. With ``mass_per_length=`` the beam mass becomes
  :math:`\\mu L` and ``S`` is scaled by :math:`\\mu L / m`.
* Everything attached to the link (frames, child joints, bodies merged by fixed joints,
  geometries) moves to the sublink whose span contains its origin projected on the beam axis (a
  point exactly at an elastic node goes to the downstream sublink) and keeps its name and its
  placement in the undeformed configuration. A box (or cylinder) geometry of the link that runs
  along the beam is cut at the nodes into one piece per sublink.
* Names. Elastic joints are ``<link>_elastic_<k>`` (k = 1..ν) for planar bending and
  ``<link>_elastic_<k>_<bend1|bend2|torsion>`` otherwise; sublink body frames are
  ``<link>_sublink_<k>`` (k = 0..ν). The URDF's link frame stays on sublink 0.
* Damping. ``damping_ratio`` ζ gives stiffness-proportional (Rayleigh β) damping
  :math:`D = \\beta K` with :math:`\\beta = 2\\zeta/\\omega_1`, where :math:`\\omega_1` is the first
  natural angular frequency of the link clamped at its joint (every joint but the link's elastic
  ones locked), carrying the rest of the robot, in the neutral configuration. Mode ``i`` of that
  clamped link then has damping ratio :math:`\\zeta\\,\\omega_i/\\omega_1`.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter, NameNotFound
from ..model import expand_configuration
from ..validation import integer

__all__ = [
    "FlexibleExpansion",
    "FlexibleLink",
    "expand_configuration",
    "expand_flexible",
    "rigid_configuration",
]

_TOL = 1e-9


def _positive(name: str, value: Any, *, link: str) -> float:
    """A strictly positive finite float, or InvalidParameter."""
    if isinstance(value, bool):
        raise InvalidParameter(f"flexible link '{link}': {name} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidParameter(
            f"flexible link '{link}': {name} must be a number, got {value!r}"
        ) from None
    if not math.isfinite(number) or number <= 0.0:
        raise InvalidParameter(f"flexible link '{link}': {name} must be > 0, got {value!r}")
    return number


#: Most sublinks per flexible link (a model of a few hundred DOF per link already runs
#: for minutes; thousands exhaust the memory of Pinocchio's data).
MAX_SUBLINKS = 500


@dataclass(frozen=True)
class FlexibleLink:
    """A URDF link to model as an Euler–Bernoulli beam (Celentano 2008, §5, (67)–(68)).

    Attributes:
        link: Name of the URDF link.
        sublinks: Number ν ≥ 1 of elastic nodes; the link becomes ν + 1 rigid sublinks.
        young_modulus: E [Pa].
        second_moment_of_area: I [m^4] about each bending axis: one value (planar bending) or two
            (spatial bending, in the order of ``bending_axes``).
        length: Beam length L [m]; required for a terminal link, otherwise from the child joint.
        mass_per_length: μ [kg/m]; default the link mass / L.
        bending_axes: One unit vector per value of ``second_moment_of_area``, in the link frame,
            normal to the beam; default: see the module docstring.
        shear_modulus: G [Pa]; with ``polar_moment`` adds a torsion joint GJ/(L/ν).
        polar_moment: Torsion constant J [m^4].
        damping_ratio: ζ ≥ 0 of the first clamped elastic mode, stiffness-proportional damping.
    """

    link: str
    sublinks: int
    young_modulus: float
    second_moment_of_area: float | tuple[float, ...]
    _: KW_ONLY
    length: float | None = None
    mass_per_length: float | None = None
    bending_axes: tuple[tuple[float, float, float], ...] | None = None
    shear_modulus: float | None = None
    polar_moment: float | None = None
    damping_ratio: float = 0.0

    def __post_init__(self) -> None:
        name = self.link
        if not isinstance(name, str) or not name:
            raise InvalidParameter(f"flexible link name must be a non-empty string, got {name!r}")
        nu = integer(
            f"flexible link '{name}': sublinks",
            self.sublinks,
            low=1,
            high=MAX_SUBLINKS,
            what=(
                " (each one adds an elastic joint: the first bending modes converge with about "
                "20, while thousands take gigabytes of memory)"
            ),
        )
        object.__setattr__(self, "sublinks", nu)
        object.__setattr__(
            self, "young_modulus", _positive("young_modulus", self.young_modulus, link=name)
        )
        inertia = self.second_moment_of_area
        values = (
            list(np.ravel(np.asarray(inertia, dtype=object)))
            if isinstance(inertia, (Sequence, np.ndarray)) and not isinstance(inertia, str)
            else [inertia]
        )
        if len(values) not in (1, 2):
            raise InvalidParameter(
                f"flexible link '{name}': second_moment_of_area takes one value (planar bending) "
                f"or two (spatial bending), got {len(values)}"
            )
        values = [_positive("second_moment_of_area", v, link=name) for v in values]
        object.__setattr__(
            self, "second_moment_of_area", values[0] if len(values) == 1 else tuple(values)
        )
        for key in ("length", "mass_per_length", "shear_modulus", "polar_moment"):
            value = getattr(self, key)
            if value is not None:
                object.__setattr__(self, key, _positive(key, value, link=name))
        if (self.shear_modulus is None) != (self.polar_moment is None):
            raise InvalidParameter(
                f"flexible link '{name}': torsion needs both shear_modulus and polar_moment"
            )
        zeta = self.damping_ratio
        try:
            zeta = float(zeta)
        except (TypeError, ValueError):
            raise InvalidParameter(
                f"flexible link '{name}': damping_ratio must be a number, got {zeta!r}"
            ) from None
        if not math.isfinite(zeta) or zeta < 0.0:
            raise InvalidParameter(
                f"flexible link '{name}': damping_ratio must be ≥ 0, got {self.damping_ratio!r}"
            )
        object.__setattr__(self, "damping_ratio", zeta)
        if self.bending_axes is not None:
            try:
                axes = np.asarray(self.bending_axes, dtype=float).reshape(-1, 3)
            except (TypeError, ValueError):
                raise InvalidParameter(
                    f"flexible link '{name}': bending_axes must be 3-vectors, "
                    f"got {self.bending_axes!r}"
                ) from None
            if len(axes) != self.n_bending_axes:
                raise InvalidParameter(
                    f"flexible link '{name}': {len(axes)} bending axes for "
                    f"{self.n_bending_axes} second moment(s) of area"
                )
            norms = np.linalg.norm(axes, axis=1)
            if np.any(norms < _TOL):
                raise InvalidParameter(f"flexible link '{name}': a bending axis is zero")
            axes = axes / norms[:, None]
            object.__setattr__(self, "bending_axes", tuple(tuple(map(float, a)) for a in axes))

    @property
    def second_moments(self) -> tuple[float, ...]:
        """The second moment(s) of area [m^4] as a tuple (one per bending axis)."""
        inertia = self.second_moment_of_area
        return tuple(inertia) if isinstance(inertia, tuple) else (float(inertia),)

    @property
    def n_bending_axes(self) -> int:
        """1 for planar bending, 2 for spatial bending."""
        return len(self.second_moments)

    @property
    def has_torsion(self) -> bool:
        """Whether a torsion joint is added at each elastic node."""
        return self.shear_modulus is not None

    @classmethod
    def valid_keys(cls) -> list[str]:
        """The parameter names accepted by :meth:`from_dict`."""
        return [f.name for f in dataclasses.fields(cls) if f.name != "_"]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FlexibleLink:
        """Build from a URDF ``<pinext><flexible .../>`` element or a sidecar ``[[flexible]]``.

        Args:
            d: Parameter name -> value, the keys being the constructor's parameter names.
                Sequences (a TOML array, a whitespace-separated XML list already split into
                numbers, or such a string) are accepted for ``second_moment_of_area`` and
                ``bending_axes``.

        Raises:
            InvalidParameter: Unknown or missing keys, or invalid values.
        """
        valid = cls.valid_keys()
        unknown = sorted(set(d) - set(valid))
        if unknown:
            raise InvalidParameter(
                f"unknown flexible-link key(s) {', '.join(unknown)}; valid keys: {', '.join(valid)}"
            )
        missing = [k for k in valid[:4] if k not in d]
        if missing:
            raise InvalidParameter(
                f"flexible link {d.get('link', '?')!r}: missing key(s) {', '.join(missing)}; "
                f"valid keys: {', '.join(valid)}"
            )
        kwargs = dict(d)
        for key in ("second_moment_of_area", "bending_axes"):
            value = kwargs.get(key)
            if isinstance(value, str):
                try:
                    kwargs[key] = [float(x) for x in value.replace(",", " ").split()]
                except ValueError:
                    raise InvalidParameter(
                        f"flexible link {d.get('link')!r}: {key} must be numbers, got {value!r}"
                    ) from None
        return cls(**kwargs)


class FlexibleExpansion(NamedTuple):
    """The model of :func:`expand_flexible`."""

    model: pin.Model
    """Pinocchio model with the sublinks and elastic joints."""
    visual_model: pin.GeometryModel
    """Visual geometries attached to the new model."""
    collision_model: pin.GeometryModel
    """Collision geometries attached to the new model."""
    joint_stiffness: np.ndarray
    """Shape (nv,). Stiffness [N.m/rad], nonzero only at the elastic joints."""
    joint_damping: np.ndarray
    """Shape (nv,). Damping [N.m.s/rad] of the elastic joints (zero elsewhere)."""
    elastic_joints: dict[str, list[str]]
    """Link name -> names of its new elastic joints, base to tip."""
    sublink_frames: dict[str, list[str]]
    """Link name -> names of its sublink body frames, base to tip."""


@dataclass
class _Beam:
    """Geometry of one flexible link in its joint frame."""

    spec: FlexibleLink
    joint: int  # joint id in the rigid model
    frame: int  # link body frame id in the rigid model
    origin: np.ndarray  # beam start p0 in the joint frame
    axis: np.ndarray  # unit beam axis e
    length: float
    nodes: np.ndarray  # (ν,) abscissae of the elastic nodes
    joint_axes: list[tuple[str, np.ndarray, float]]  # (tag, unit axis, stiffness) per node
    slices: list[pin.Inertia]  # (ν+1,) sublink inertias in the joint frame

    def node_origin(self, k: int) -> np.ndarray:
        """Origin of the frame of sublink k in the joint frame (the joint origin for k = 0)."""
        return np.zeros(3) if k == 0 else self.origin + self.nodes[k - 1] * self.axis

    def sublink_of(self, point: np.ndarray) -> int:
        """Index of the sublink whose span contains the projection of ``point``."""
        s = float(np.dot(np.asarray(point) - self.origin, self.axis))
        return int(np.count_nonzero(self.nodes <= s + _TOL * self.length))

    def to_sublink(self, k: int, placement: pin.SE3) -> pin.SE3:
        """A placement in the joint frame re-expressed in the frame of sublink k."""
        return pin.SE3(np.eye(3), -self.node_origin(k)) * placement


def _link_frame_ids(model: pin.Model) -> dict[str, int]:
    return {f.name: i for i, f in enumerate(model.frames) if f.type == pin.FrameType.BODY}


def _joint_axis(model: pin.Model, joint: int) -> np.ndarray | None:
    """Angular axis of a one-DOF revolute joint in its own frame, else None."""
    jmodel = model.joints[joint]
    if jmodel.nv != 1:
        return None
    jdata = jmodel.createData()
    jmodel.calc(jdata, pin.neutral(model)[jmodel.idx_q : jmodel.idx_q + jmodel.nq])
    motion = np.asarray(jdata.S).reshape(6)
    if np.linalg.norm(motion[3:]) < _TOL:
        return None
    return motion[3:] / np.linalg.norm(motion[3:])


def _normal_to(axis: np.ndarray, beam: np.ndarray) -> np.ndarray | None:
    normal = axis - np.dot(axis, beam) * beam
    norm = np.linalg.norm(normal)
    return None if norm < 1e-6 else normal / norm


def _own_inertia(model: pin.Model, joint: int) -> pin.Inertia:
    """Inertia of the joint's own body: the joint's total minus bodies merged by fixed joints."""
    params = model.inertias[joint].toDynamicParameters()
    for frame in model.frames:
        if frame.parentJoint == joint and frame.inertia.mass != 0.0:
            params = params - frame.placement.act(frame.inertia).toDynamicParameters()
    return pin.Inertia.FromDynamicParameters(params)


def _plan_beam(model: pin.Model, spec: FlexibleLink, frame_id: int) -> _Beam:
    """Axis, length, nodes, elastic axes and sublink inertias of one flexible link."""
    frame = model.frames[frame_id]
    name = spec.link
    joint = frame.parentJoint
    previous = model.frames[frame.parentFrame]
    if joint == 0 or previous.type != pin.FrameType.JOINT:
        raise InvalidParameter(
            f"link '{name}' is not the child of a movable joint (it is attached by a fixed joint "
            "or to the world); only links moved by a joint can be made flexible"
        )
    link_placement = frame.placement
    origin = link_placement.translation.copy()

    # Candidate beam ends: movable child joints first, else fixed joints attached to the link.
    movable = [c for c in range(1, model.njoints) if model.parents[c] == joint]
    ends = [model.jointPlacements[c].translation for c in movable]
    if not ends:
        ends = [
            f.placement.translation
            for f in model.frames
            if f.type == pin.FrameType.FIXED_JOINT and f.parentFrame == frame_id
        ]
    ends = [p - origin for p in ends if np.linalg.norm(p - origin) > _TOL]
    own = _own_inertia(model, joint)
    if ends:
        far = max(ends, key=np.linalg.norm)
        length = float(np.linalg.norm(far))
        axis = far / length
        if spec.length is not None:
            length = spec.length
    else:
        if spec.length is None:
            raise InvalidParameter(f"link {name} has no child joint; give length=")
        length = spec.length
        lever = own.lever - origin if own.mass > 0.0 else np.zeros(3)
        if np.linalg.norm(lever) > 1e-6:
            axis = lever / np.linalg.norm(lever)
        else:
            axis = link_placement.rotation[:, 0].copy()

    nu = spec.sublinks
    nodes = length / (2 * nu) + np.arange(nu) * length / nu
    bounds = np.concatenate([[0.0], nodes, [length]])

    # Elastic axes.
    bend: list[np.ndarray]
    if spec.bending_axes is not None:
        bend = []
        for a in spec.bending_axes:
            normal = _normal_to(link_placement.rotation @ np.asarray(a), axis)
            if normal is None:
                raise InvalidParameter(
                    f"flexible link '{name}': bending axis {a} runs along the beam {axis}"
                )
            bend.append(normal)
    else:
        first = None
        swing = _joint_axis(model, joint)
        if swing is not None:
            first = _normal_to(swing, axis)
        if first is None:
            rot = link_placement.rotation
            column = int(np.argmin(np.abs(rot.T @ axis)[::-1]))  # prefer z, then y, then x
            first = _normal_to(rot[:, 2 - column], axis)
        if first is None:  # the column least aligned with the beam is never along it
            raise InvalidParameter(f"flexible link '{name}': no bending axis normal to {axis}")
        bend = [first, np.cross(axis, first)][: spec.n_bending_axes]
    flexural = [spec.young_modulus * i / (length / nu) for i in spec.second_moments]
    tags = ["bend1", "bend2"][: len(bend)]
    joint_axes = list(zip(tags, bend, flexural, strict=True))
    if spec.has_torsion:
        shear, polar = spec.shear_modulus, spec.polar_moment
        if shear is None or polar is None:
            raise InvalidParameter(
                f"flexible link '{name}': torsion needs both shear_modulus and polar_moment"
            )
        joint_axes.append(("torsion", axis.copy(), shear * polar / (length / nu)))

    # Sublink inertias (module docstring).
    if own.mass <= 0.0 and spec.mass_per_length is None:
        raise InvalidParameter(f"link {name} has no mass; give mass_per_length=")
    mu = spec.mass_per_length if spec.mass_per_length is not None else own.mass / length
    beam_mass = mu * length
    transverse = np.eye(3) - np.outer(axis, axis)
    middle = origin + 0.5 * length * axis
    if own.mass > 0.0:
        offset = own.lever - middle
        section = own.inertia - own.mass * length**2 / 12.0 * transverse
        section = 0.5 * (section + section.T) * (beam_mass / own.mass)
        values, vectors = np.linalg.eigh(section)
        if values.min() < -1e-12 * max(1.0, abs(values).max()):
            warnings.warn(
                f"flexible link '{name}': the URDF inertia is smaller across the beam than a "
                f"uniform rod's; {(-values[values < 0]).round(9).tolist()} kg.m^2 added to keep "
                "each sublink's inertia physical",
                stacklevel=3,
            )
        section = (vectors * np.clip(values, 0.0, None)) @ vectors.T
    else:
        offset = np.zeros(3)
        section = np.zeros((3, 3))
    slices = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        piece = b - a
        mass = mu * piece
        rot = mass / beam_mass * section + mass * piece**2 / 12.0 * transverse
        com = origin + 0.5 * (a + b) * axis + offset
        slices.append(pin.Inertia(mass, com, rot))
    return _Beam(spec, joint, frame_id, origin, axis, length, nodes, joint_axes, slices)


def _revolute(axis: np.ndarray) -> pin.JointModel:
    for i, make in enumerate((pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ)):
        if abs(axis[i] - 1.0) < 1e-12:
            return make()
    return pin.JointModelRevoluteUnaligned(np.asarray(axis, dtype=float))


def _elastic_name(link: str, k: int, tag: str, single: bool) -> str:
    return f"{link}_elastic_{k}" if single else f"{link}_elastic_{k}_{tag}"


def expand_flexible(
    model: pin.Model,
    visual_model: pin.GeometryModel,
    collision_model: pin.GeometryModel,
    links: Sequence[FlexibleLink],
) -> FlexibleExpansion:
    """Split links into rigid sublinks joined by elastic joints (Celentano 2008, §5, (67)–(69)).

    Args:
        model: The rigid Pinocchio model (left unchanged).
        visual_model: Its visual geometries (left unchanged).
        collision_model: Its collision geometries (left unchanged).
        links: The flexible links.

    Returns:
        The new model, geometries, stiffness (68) and damping of every DOF, and the names of
        the elastic joints. Original joint and frame names are kept.

    Raises:
        NameNotFound: A link that the model does not have (the message lists the links).
        InvalidParameter: A link given twice, a terminal link without ``length``, a link without
            mass and without ``mass_per_length``, a link attached by a fixed joint.
    """
    body_frames = _link_frame_ids(model)
    beams: dict[int, _Beam] = {}
    for spec in links:
        if not isinstance(spec, FlexibleLink):
            raise InvalidParameter(f"expected FlexibleLink objects, got {type(spec).__name__}")
        if spec.link not in body_frames:
            raise NameNotFound("link", spec.link, list(body_frames))
        beam = _plan_beam(model, spec, body_frames[spec.link])
        if beam.joint in beams:
            raise InvalidParameter(f"link '{spec.link}' is given twice as a flexible link")
        beams[beam.joint] = beam

    new = pin.Model()
    new.name = model.name
    new.gravity = model.gravity
    new.inertias[0] = model.inertias[0].copy()  # the fixed root link's body (moves on a support)
    # old joint id -> [new joint id carrying sublink k]; rigid joints have one entry.
    carriers: dict[int, list[int]] = {0: [0]}
    stiffness: dict[int, float] = {}  # new joint id -> stiffness
    elastic: dict[str, list[str]] = {}
    old_nv_of: dict[int, int] = {}

    def attach_point(old_parent: int, placement: pin.SE3) -> tuple[int, pin.SE3, int]:
        """New parent joint and placement for something on ``old_parent`` at ``placement``."""
        beam = beams.get(old_parent)
        if beam is None:
            return carriers[old_parent][0], placement, 0
        k = beam.sublink_of(placement.translation)
        return carriers[old_parent][k], beam.to_sublink(k, placement), k

    def add_rigid(old: int) -> None:
        jm = model.joints[old]
        iq, nq, iv, nv = jm.idx_q, jm.nq, jm.idx_v, jm.nv
        parent, placement, _ = attach_point(model.parents[old], model.jointPlacements[old])
        sq, sv = slice(iq, iq + nq), slice(iv, iv + nv)
        new_id = new.addJoint(
            parent,
            jm,
            placement,
            model.names[old],
            model.lowerEffortLimit[sv],
            model.upperEffortLimit[sv],
            model.lowerVelocityLimit[sv],
            model.upperVelocityLimit[sv],
            model.lowerPositionLimit[sq],
            model.upperPositionLimit[sq],
            model.positionLimitMargin[sq],
            model.lowerDryFrictionLimit[sv],
            model.upperDryFrictionLimit[sv],
            model.damping[sv],
        )
        old_nv_of[new_id] = old
        carriers[old] = [new_id]
        beam = beams.get(old)
        if beam is None:
            new.appendBodyToJoint(new_id, model.inertias[old], pin.SE3.Identity())
            return
        # The elastic chain of the beam, node by node.
        link = beam.spec.link
        names: list[str] = []
        single = len(beam.joint_axes) == 1
        previous = new_id
        for k in range(1, beam.spec.sublinks + 1):
            step = beam.node_origin(k) - beam.node_origin(k - 1)
            for i, (tag, axis, stiff) in enumerate(beam.joint_axes):
                name = _elastic_name(link, k, tag, single)
                placement = pin.SE3(np.eye(3), step if i == 0 else np.zeros(3))
                previous = new.addJoint(previous, _revolute(axis), placement, name)
                stiffness[previous] = stiff
                names.append(name)
            carriers[old].append(previous)
        elastic[link] = names
        for k, inertia in enumerate(beam.slices):
            new.appendBodyToJoint(
                carriers[old][k], inertia, pin.SE3(np.eye(3), -beam.node_origin(k))
            )
        for frame in model.frames:  # bodies merged by fixed joints
            if frame.parentJoint == old and frame.inertia.mass != 0.0:
                parent, placement, _ = attach_point(old, frame.placement)
                new.appendBodyToJoint(parent, frame.inertia, placement)

    def visit(old: int) -> None:
        add_rigid(old)
        for child in range(old + 1, model.njoints):
            if model.parents[child] == old:
                visit(child)

    for child in range(1, model.njoints):
        if model.parents[child] == 0:
            visit(child)

    # Copy per-DOF rotor data of the original joints.
    for new_id, old in old_nv_of.items():
        jo, jn = model.joints[old], new.joints[new_id]
        so, sn = slice(jo.idx_v, jo.idx_v + jo.nv), slice(jn.idx_v, jn.idx_v + jn.nv)
        new.armature[sn] = model.armature[so]
        new.rotorInertia[sn] = model.rotorInertia[so]
        new.rotorGearRatio[sn] = model.rotorGearRatio[so]
        new.friction[sn] = model.friction[so]

    # Frames: the original ones (same names), then the sublink bodies.
    frame_map: dict[int, int] = {0: 0}
    sublink_frames: dict[str, list[str]] = {}
    for index in range(1, len(model.frames)):
        frame = model.frames[index]
        if frame.type == pin.FrameType.JOINT:
            parent = new.getJointId(model.names[frame.parentJoint])
            placement = frame.placement
        else:
            parent, placement, _ = attach_point(frame.parentJoint, frame.placement)
        copy = pin.Frame(
            frame.name,
            parent,
            frame_map.get(frame.parentFrame, 0),
            placement,
            frame.type,
            frame.inertia,
        )
        frame_map[index] = new.addFrame(copy, False)
    for beam in beams.values():
        link = beam.spec.link
        for name in elastic[link]:
            new.addJointFrame(new.getJointId(name), frame_map[beam.frame])
        names = []
        for k, carrier in enumerate(carriers[beam.joint]):
            name = f"{link}_sublink_{k}"
            placement = model.frames[beam.frame].placement if k == 0 else pin.SE3.Identity()
            previous = (
                frame_map[beam.frame]
                if k == 0
                else new.getFrameId(new.names[carrier], pin.FrameType.JOINT)
            )
            new.addFrame(pin.Frame(name, carrier, previous, placement, pin.FrameType.BODY), False)
            names.append(name)
        sublink_frames[link] = names
        # Frames moved to a later sublink hang from that sublink's body frame.
        for index, frame in enumerate(model.frames):
            if frame.parentJoint != beam.joint or frame.type == pin.FrameType.JOINT:
                continue
            k = beam.sublink_of(frame.placement.translation)
            if k > 0 and index != beam.frame:
                new.frames[frame_map[index]].parentFrame = new.getFrameId(names[k])

    new.referenceConfigurations = _map_references(model, new)

    stiffness_v = np.zeros(new.nv)
    for joint_id, stiff in stiffness.items():
        stiffness_v[new.joints[joint_id].idx_v] = stiff
    damping_v = _rayleigh_damping(new, stiffness_v, beams, elastic)

    visual = _split_geometry(visual_model, model, new, beams, carriers, frame_map)
    collision = _split_geometry(collision_model, model, new, beams, carriers, frame_map)
    return FlexibleExpansion(
        new, visual, collision, stiffness_v, damping_v, elastic, sublink_frames
    )


def _map_references(model: pin.Model, new: pin.Model) -> Any:
    refs = new.referenceConfigurations
    for entry in model.referenceConfigurations:
        refs[entry.key()] = expand_configuration(model, new, entry.data())
    return refs


def _rayleigh_damping(
    model: pin.Model,
    stiffness: np.ndarray,
    beams: dict[int, _Beam],
    elastic: dict[str, list[str]],
) -> np.ndarray:
    """Stiffness-proportional damping β K with β = 2ζ/ω₁ of each clamped link."""
    damping = np.zeros(model.nv)
    data = model.createData()
    mass = None
    for beam in beams.values():
        zeta = beam.spec.damping_ratio
        if zeta == 0.0:
            continue
        if mass is None:
            mass = pin.crba(model, data, pin.neutral(model))
            mass = np.triu(mass) + np.triu(mass, 1).T  # crba includes the armature
        dofs = [model.joints[model.getJointId(n)].idx_v for n in elastic[beam.spec.link]]
        from scipy.linalg import eigh

        omega2 = eigh(np.diag(stiffness[dofs]), mass[np.ix_(dofs, dofs)], eigvals_only=True)
        beta = 2.0 * zeta / math.sqrt(omega2[0])
        damping[dofs] = beta * stiffness[dofs]
    return damping


def _split_geometry(
    geometry: pin.GeometryModel,
    model: pin.Model,
    new: pin.Model,
    beams: dict[int, _Beam],
    carriers: dict[int, list[int]],
    frame_map: dict[int, int],
) -> pin.GeometryModel:
    """Reattach every geometry; cut boxes and cylinders that run along a beam."""
    import coal

    out = pin.GeometryModel()
    for geom in geometry.geometryObjects:
        old_joint = geom.parentJoint
        beam = beams.get(old_joint)
        new_frame = frame_map.get(geom.parentFrame, 0)
        if beam is None:
            copy = pin.GeometryObject(geom)
            copy.parentJoint = carriers[old_joint][0]
            copy.parentFrame = new_frame
            out.addGeometryObject(copy)
            continue
        shape = geom.geometry
        rot = geom.placement.rotation
        along = np.abs(rot.T @ beam.axis)
        pieces = None
        if geom.parentFrame == beam.frame and isinstance(shape, (coal.Box, coal.Cylinder)):
            i = int(np.argmax(along))
            if along[i] > 1.0 - 1e-6 and (isinstance(shape, coal.Box) or i == 2):
                half = shape.halfSide[i] if isinstance(shape, coal.Box) else shape.halfLength
                centre = float(np.dot(geom.placement.translation - beam.origin, beam.axis))
                cuts = [centre - half]
                cuts += [s for s in beam.nodes if centre - half + _TOL < s < centre + half - _TOL]
                cuts.append(centre + half)
                pieces = (i, cuts)
        if pieces is None:
            parent, placement, k = _geometry_attach(beam, geom.placement)
            copy = pin.GeometryObject(geom)
            copy.parentJoint = carriers[old_joint][k]
            copy.parentFrame = (
                new_frame if k == 0 else new.getFrameId(f"{beam.spec.link}_sublink_{k}")
            )
            copy.placement = placement
            out.addGeometryObject(copy)
            continue
        i, cuts = pieces
        for n, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
            mid = 0.5 * (a + b)
            k = int(np.count_nonzero(beam.nodes <= mid))
            placement = pin.SE3(geom.placement)
            shift = mid - float(np.dot(geom.placement.translation - beam.origin, beam.axis))
            placement.translation = geom.placement.translation + shift * beam.axis
            if isinstance(shape, coal.Box):
                sides = 2.0 * np.array(shape.halfSide)
                sides[i] = b - a
                piece_shape = coal.Box(*sides)
            else:
                piece_shape = coal.Cylinder(shape.radius, b - a)
            copy = pin.GeometryObject(geom)
            copy.name = f"{geom.name}_{n}"
            copy.geometry = piece_shape
            copy.parentJoint = carriers[old_joint][k]
            copy.parentFrame = new.getFrameId(f"{beam.spec.link}_sublink_{k}")
            copy.placement = beam.to_sublink(k, placement)
            out.addGeometryObject(copy)
    return out


def _geometry_attach(beam: _Beam, placement: pin.SE3) -> tuple[int, pin.SE3, int]:
    k = beam.sublink_of(placement.translation)
    return k, beam.to_sublink(k, placement), k


def rigid_configuration(model: pin.Model, rigid_model: pin.Model, q: np.ndarray) -> np.ndarray:
    """The entries of the original joints in a configuration of the flexible model.

    Args:
        model: The model after :func:`expand_flexible`.
        rigid_model: The model before.
        q: Shape (model.nq,).

    Returns:
        Shape (rigid_model.nq,).
    """
    out = np.zeros(rigid_model.nq)
    for j in range(1, rigid_model.njoints):
        old = rigid_model.joints[j]
        jn = model.joints[model.getJointId(rigid_model.names[j])]
        out[old.idx_q : old.idx_q + old.nq] = q[jn.idx_q : jn.idx_q + jn.nq]
    return out
