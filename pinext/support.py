"""An elastic robot support and springs in any joint (Vukobratović & Potkonjak, §20.5.1,
Problem 6 of Fig. 20.11).

"If connections of robot arm and its support were considered deformable, or if the robot was
placed on a platform with pneumatic wheels, then oscillations would appear. However, these
effects can be included in the existing models of rigid system by adding passive DOFs with
stiffness and damping." This module does exactly that: :func:`add_support` puts up to six
passive one-DOF joints between the world and the robot's base — translations along x, y, z of
the support frame, then rotations about x, y', z'' (Cardan angles) about its origin, the
pivot — with a stiffness and a damping per axis or as full matrices. The potential and the
dissipation function of the support are

.. math::

    V = \\tfrac12\\, \\delta^T K\\, \\delta, \\qquad
    \\mathcal{D} = \\tfrac12\\, \\dot\\delta^T D\\, \\dot\\delta, \\qquad
    \\delta = (x, y, z, \\varphi_x, \\varphi_y, \\varphi_z),

so that for small deflections K is the 6×6 stiffness matrix of the mount at the pivot, in
the support frame ([force; torque] = −K [displacement; rotation]). The diagonal of K and D
joins the robot's ``joint_stiffness`` and ``joint_damping`` (every part of pinext that knows
elastic joints — the simulation, its compiled path, :func:`pinext.natural_frequencies`,
:func:`pinext.static_deflection`, the viewer's exaggerated deflections — sees the support);
the off-diagonal part, when there is one, acts through the :class:`SupportCoupling`
component that :class:`pinext.System` adds by itself, and through
:meth:`pinext.Robot.stiffness_matrix` in the modal analysis.

:func:`joint_springs` gives any joint a spring (rest at the joint's neutral position) and a
damper: the ``[joints.NAME]`` table of the extension format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from .exceptions import InvalidParameter
from .simulation.component import Component
from .validation import real, vector

if TYPE_CHECKING:
    from .model import Robot
    from .simulation.system import System

__all__ = [
    "AXES",
    "ElasticSupport",
    "SupportCoupling",
    "add_support",
    "joint_springs",
]

#: The support's axes, in the order of its joints: translations, then Cardan rotations.
AXES = ("x", "y", "z", "rx", "ry", "rz")
_JOINTS = {
    "x": pin.JointModelPX,
    "y": pin.JointModelPY,
    "z": pin.JointModelPZ,
    "rx": pin.JointModelRX,
    "ry": pin.JointModelRY,
    "rz": pin.JointModelRZ,
}
_UNITS = "[N/m] on x, y, z, [N.m/rad] on rx, ry, rz"


def _axes(given: Any) -> tuple[str, ...] | None:
    if given is None:
        return None
    names = given.split() if isinstance(given, str) else list(given)
    for name in names:
        if name not in AXES:
            raise InvalidParameter(f"unknown support axis {name!r}; valid axes: {', '.join(AXES)}")
    if len(set(names)) != len(names):
        raise InvalidParameter(f"support axes repeat: {names}")
    return tuple(a for a in AXES if a in names)


def _matrix(value: Any, axes: tuple[str, ...] | None, what: str) -> tuple[tuple[str, ...], Any]:
    """(axes, n×n matrix) of a per-axis mapping, a vector or a matrix (axes None: all six or
    the mapping's keys)."""
    if isinstance(value, Mapping):
        keys = _axes(list(value))
        assert keys is not None
        if axes is not None and set(keys) - set(axes):
            raise InvalidParameter(
                f"support {what} names axes {sorted(set(keys) - set(axes))} that are not among "
                f"the support's axes {list(axes)}"
            )
        axes = axes if axes is not None else keys
        numbers = [_number(value.get(a, 0.0), f"{what}[{a!r}]") for a in axes]
        return axes, np.diag(numbers)
    if isinstance(value, (bool, str)) or value is None:
        raise InvalidParameter(
            f"support {what} must be a mapping axis -> value, a vector or a square matrix "
            f"({_UNITS}), got {value!r}"
        )
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameter(
            f"support {what} must be a mapping axis -> value, a vector or a square matrix "
            f"of numbers ({_UNITS}), got {value!r}"
        ) from None
    if array.ndim == 0 and axes is not None and len(axes) == 1:
        array = array.reshape(1)
    if array.ndim == 0:
        raise InvalidParameter(
            f"support {what} must name its axes (translations and rotations have different "
            f"units {_UNITS}): give a mapping such as {{'z': {float(array):g}}}, a vector or a "
            "matrix"
        )
    n = array.shape[0]
    if axes is None:
        if n != 6:
            raise InvalidParameter(
                f"support {what} of size {n} needs its axes (axes=...); without them it has "
                f"6 entries: {', '.join(AXES)}"
            )
        axes = AXES
    if array.ndim == 1:
        array = np.diag(array)
    if array.shape != (len(axes), len(axes)):
        raise InvalidParameter(
            f"support {what} has shape {array.shape}, expected ({len(axes)},) or "
            f"({len(axes)}, {len(axes)}) for the axes {list(axes)}"
        )
    if not np.isfinite(array).all():
        raise InvalidParameter(f"support {what} must be finite, got {array.tolist()}")
    return axes, array


def _number(value: Any, what: str) -> float:
    return real(f"support {what}", value, unit=_UNITS)


@dataclass
class ElasticSupport:
    """Passive DOFs with stiffness and damping between the world and the robot's base.

    Args:
        stiffness: Per axis (a mapping such as ``{"z": 2e5, "rx": 4e4}``; only these axes
            move), a vector of the six diagonal values, or a symmetric positive
            semi-definite matrix over ``axes`` (6×6 by default) [N/m, N.m/rad, N/rad].
            A zero diagonal entry is a free DOF (a platform on rails).
        damping: The same forms [N.s/m, N.m.s/rad]; default none.
        axes: The axes that move, among ``x y z rx ry rz``; default: the mapping's keys, or
            all six for a vector or matrix.
        placement: The support frame in the world at rest: its origin is the pivot of the
            rotations, its axes the directions of the springs; default: the world frame.
        name: Prefix of the joints (``"<name>_z"``) and the name of the frame on which the
            robot's base sits.

    Attributes:
        axes: The axes that move, in joint order (a subsequence of :data:`AXES`).
        stiffness_matrix: Shape (n, n) over ``axes``.
        damping_matrix: Shape (n, n) over ``axes``.
    """

    stiffness: Any
    damping: Any = None
    axes: Any = None
    placement: pin.SE3 | None = None
    name: str = "support"
    stiffness_matrix: np.ndarray = field(init=False, repr=False)
    damping_matrix: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise InvalidParameter(
                f"support name must be a nonempty text without '/', got {self.name!r}"
            )
        axes, stiffness = _matrix(self.stiffness, _axes(self.axes), "stiffness")
        if self.damping is None:
            damping = np.zeros_like(stiffness)
        else:
            damping_axes, damping = _matrix(self.damping, axes, "damping")
            if damping_axes != axes:  # a mapping over fewer axes
                full = np.zeros((len(axes), len(axes)))
                index = [axes.index(a) for a in damping_axes]
                full[np.ix_(index, index)] = damping
                damping = full
        for what, matrix in (("stiffness", stiffness), ("damping", damping)):
            scale = max(1.0, float(np.abs(matrix).max(initial=0.0)))
            if not np.allclose(matrix, matrix.T, rtol=0.0, atol=1e-12 * scale):
                raise InvalidParameter(f"support {what} matrix must be symmetric")
            if len(matrix) and np.linalg.eigvalsh(matrix).min() < -1e-12 * scale:
                raise InvalidParameter(
                    f"support {what} must be positive semi-definite (it would create energy); "
                    f"eigenvalues {np.linalg.eigvalsh(matrix).tolist()}"
                )
        if not axes:
            raise InvalidParameter("an elastic support needs at least one axis")
        if self.placement is not None and not isinstance(self.placement, pin.SE3):
            raise InvalidParameter(
                f"support placement must be a pin.SE3, got {type(self.placement).__name__}"
            )
        self.axes = axes
        self.stiffness_matrix = 0.5 * (stiffness + stiffness.T)
        self.damping_matrix = 0.5 * (damping + damping.T)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> ElasticSupport:
        """From the ``[support]`` table / ``<support/>`` element: ``stiffness``, ``damping``
        (a table axis -> value, a list of six values or a 6×6 list of lists), ``axes`` (list
        or space-separated text), ``xyz`` [m] and ``rpy`` [rad] of the support frame,
        ``name``."""
        known = {"stiffness", "damping", "axes", "xyz", "rpy", "name"}
        unknown = set(spec) - known
        if unknown:
            raise InvalidParameter(
                f"unknown support keys {sorted(unknown)}; valid keys: {', '.join(sorted(known))}"
            )
        if "stiffness" not in spec:
            raise InvalidParameter(
                f"a support needs a 'stiffness' ({_UNITS}); valid keys: {', '.join(sorted(known))}"
            )
        placement = None
        if "xyz" in spec or "rpy" in spec:
            xyz = vector("support xyz", spec.get("xyz", (0.0, 0.0, 0.0)), 3, what="[m]")
            rpy = vector("support rpy", spec.get("rpy", (0.0, 0.0, 0.0)), 3, what="[rad]")
            placement = pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz)
        return cls(
            spec["stiffness"],
            spec.get("damping"),
            axes=spec.get("axes"),
            placement=placement,
            name=str(spec.get("name", "support")),
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``[support]`` table of this support (JSON-serialisable, full matrices):
        ``ElasticSupport.from_dict(s.to_dict())`` is the same support."""
        placement = self.placement or pin.SE3.Identity()
        return {
            "stiffness": self.stiffness_matrix.tolist(),
            "damping": self.damping_matrix.tolist(),
            "axes": list(self.axes),
            "xyz": placement.translation.tolist(),
            "rpy": pin.rpy.matrixToRpy(placement.rotation).tolist(),
            "name": self.name,
        }

    @property
    def joint_names(self) -> list[str]:
        """The passive joints, in model order: ``"<name>_<axis>"``."""
        return [f"{self.name}_{axis}" for axis in self.axes]

    @property
    def coupled(self) -> bool:
        """Whether K or D has off-diagonal terms (then :class:`SupportCoupling` acts)."""
        return bool(
            _off_diagonal(self.stiffness_matrix).any() or _off_diagonal(self.damping_matrix).any()
        )

    def dofs(self, model: pin.Model) -> np.ndarray:
        """Indices in v (and in q: the joints are Euclidean) of the support's DOFs."""
        return np.array([model.joints[model.getJointId(n)].idx_v for n in self.joint_names])


def _off_diagonal(matrix: np.ndarray) -> np.ndarray:
    return matrix - np.diag(np.diag(matrix))


def _support_model(support: ElasticSupport) -> tuple[pin.Model, int]:
    """The chain of passive joints alone, and the frame at its end."""
    model = pin.Model()
    model.name = support.name
    parent, frame = 0, 0
    big = np.array([np.inf])
    for k, axis in enumerate(support.axes):
        where = (support.placement or pin.SE3.Identity()) if k == 0 else pin.SE3.Identity()
        parent = model.addJoint(
            parent, _JOINTS[axis](), where, f"{support.name}_{axis}", big, big, -big, big
        )
        model.appendBodyToJoint(parent, pin.Inertia.Zero(), pin.SE3.Identity())
        frame = model.addJointFrame(parent, frame)
    frame = model.addBodyFrame(support.name, parent, pin.SE3.Identity(), frame)
    return model, frame


def add_support(robot: Robot | pin.Model, support: ElasticSupport | Mapping[str, Any]) -> Robot:
    """A new Robot standing on an elastic support (the old one is not changed).

    The support's joints come first in the model (indices 0 … n−1 of q and v), then the
    robot's, unchanged; at zero deflection every frame is where it was. ``rigid_model``
    stays the robot without the support (as without its flexible links).

    Args:
        robot: A :class:`pinext.Robot` (or a bare ``pin.Model``) on a fixed base.
        support: An :class:`ElasticSupport` or its ``[support]`` table.

    Returns:
        The :class:`pinext.Robot`, with ``support`` set and the support's diagonal stiffness
        and damping in front of ``joint_stiffness`` and ``joint_damping``.

    Raises:
        InvalidParameter: The robot floats (a free-flyer or planar root: nothing to stand
            on), already has a support, or a name of the support is in use.
    """
    from .model import Robot

    if not isinstance(robot, (Robot, pin.Model)):
        raise InvalidParameter(
            f"robot must be a pinext.Robot or a pin.Model, got {type(robot).__name__}"
        )
    base = robot if isinstance(robot, Robot) else Robot.from_model(robot)
    if not isinstance(support, (ElasticSupport, Mapping)):
        raise InvalidParameter(
            "support must be an ElasticSupport or its [support] table (a mapping with "
            f"stiffness, damping, axes, xyz, rpy, name), got {type(support).__name__}"
        )
    if not isinstance(support, ElasticSupport):
        support = ElasticSupport.from_dict(support)
    if base.support is not None:
        raise InvalidParameter(f"robot '{base.name}' already stands on a support")
    model = base.model
    for jid in range(1, model.njoints):
        if model.parents[jid] == 0 and model.joints[jid].nq != model.joints[jid].nv:
            raise InvalidParameter(
                f"joint '{model.names[jid]}' ({model.joints[jid].shortname()}) lets the robot "
                "float: a floating base has no support; load it with a fixed root"
            )
    taken = [n for n in [*support.joint_names, support.name] if model.existFrame(n)]
    if taken:
        raise InvalidParameter(
            f"support names {taken} are in use; choose another name= (frames: "
            + ", ".join(f.name for f in model.frames)
            + ")"
        )
    chain, frame = _support_model(support)
    back = (support.placement or pin.SE3.Identity()).inverse()
    new, visual = pin.appendModel(chain, model, pin.GeometryModel(), base.visual_model, frame, back)
    new.name = model.name
    collision = pin.appendModel(
        chain, model, pin.GeometryModel(), base.collision_model, frame, back
    )[1]
    _check_mass_matrix(new, support)
    return Robot(
        model=new,
        rigid_model=base.rigid_model,
        visual_model=visual,
        collision_model=collision,
        joint_stiffness=np.concatenate([np.diag(support.stiffness_matrix), base.joint_stiffness]),
        joint_damping=np.concatenate([np.diag(support.damping_matrix), base.joint_damping]),
        drives=dict(base.drives),
        transmissions=dict(base.transmissions),
        flexible=list(base.flexible),
        extensions=base.extensions,
        path=base.path,
        free_bodies=list(base.free_bodies),
        support=support,
    )


def _check_mass_matrix(model: pin.Model, support: ElasticSupport) -> None:
    """Raise when a support DOF moves no mass of its own: a massless base whose first joint
    turns about the same axis as a support rotation makes the mass matrix singular."""
    mass = pin.crba(model, model.createData(), pin.neutral(model))
    mass = np.triu(mass) + np.triu(mass, 1).T + np.diag(model.armature)
    values, vectors = np.linalg.eigh(mass)
    if values[0] > 1e-12 * max(values[-1], 1e-300):
        return
    dofs = support.dofs(model)
    involved = [support.joint_names[k] for k in np.flatnonzero(np.abs(vectors[dofs, 0]) > 1e-6)]
    others = [
        model.names[j]
        for j in range(1, model.njoints)
        if model.joints[j].nv
        and np.abs(
            vectors[model.joints[j].idx_v : model.joints[j].idx_v + model.joints[j].nv, 0]
        ).max()
        > 1e-6
        and model.names[j] not in support.joint_names
    ]
    raise InvalidParameter(
        f"the mass matrix on the support is singular: {involved} and {others} move the same "
        "mass along the same axis (the base link has no mass or inertia of its own); give the "
        "base link a mass and inertia, or leave that axis out of the support"
    )


def joint_springs(robot: Robot, springs: Mapping[str, Mapping[str, Any]]) -> Robot:
    """Give joints a spring and a damper (the ``[joints.NAME]`` tables), in place.

    The spring's rest position is the joint's neutral one (q = 0 for revolute and prismatic
    joints); it adds to the joint's stiffness in ``joint_stiffness`` and its damper replaces
    the URDF's ``<dynamics damping>`` in ``joint_damping``.

    Args:
        robot: The :class:`pinext.Robot`.
        springs: Joint name -> ``{"stiffness": [N.m/rad or N/m], "damping": [N.m.s/rad or
            N.s/m]}`` (either key may be missing: unchanged).

    Returns:
        ``robot``.

    Raises:
        NameNotFound: An unknown joint.
        InvalidParameter: An unknown key, a negative or non-finite value, or a joint of
            several DOFs (the spring would need a matrix).
    """
    assert robot.joint_stiffness is not None and robot.joint_damping is not None
    for joint, spec in springs.items():
        jid = robot.joint_id(joint)
        unknown = set(spec) - {"stiffness", "damping"}
        if unknown:
            raise InvalidParameter(
                f"joints.{joint}: unknown keys {sorted(unknown)}; valid keys: damping, stiffness"
            )
        jm = robot.model.joints[jid]
        if jm.nv != 1 or jm.nq != 1:
            raise InvalidParameter(
                f"joints.{joint}: a spring needs a one-DOF revolute or prismatic joint, "
                f"'{joint}' is a {jm.shortname()}"
            )
        for key, target in (("stiffness", robot.joint_stiffness), ("damping", robot.joint_damping)):
            if key not in spec:
                continue
            value = _number(spec[key], f"joints.{joint}.{key}")
            if not (np.isfinite(value) and value >= 0):
                raise InvalidParameter(
                    f"joints.{joint}.{key} must be a finite number >= 0, got {spec[key]!r}"
                )
            target[jm.idx_v] = value
    return robot


class SupportCoupling(Component):
    """The off-diagonal part of a support's stiffness and damping matrices.

    .. math::

        \\tau_s = -(K - \\mathrm{diag}\\,K)\\,\\delta - (D - \\mathrm{diag}\\,D)\\,\\dot\\delta,

    the diagonal acting through the System's joint springs and dampers. Linear
    (:meth:`Component.linear`): the fused and compiled right-hand sides take it.
    """

    name = "support"

    def __init__(self, support: ElasticSupport) -> None:
        super().__init__()
        self.support = support
        self.stiffness = _off_diagonal(support.stiffness_matrix)
        self.damping = _off_diagonal(support.damping_matrix)
        self.name = support.name

    def bind(self, system: System) -> None:  # noqa: D102
        self.dofs = self.support.dofs(system.model)
        self.nv = system.model.nv

    def effort(self, t, x, q, v, u, mode):  # noqa: D102
        tau = np.zeros(self.nv)
        tau[self.dofs] = -self.stiffness @ q[self.dofs] - self.damping @ v[self.dofs]
        return tau

    def linear(self, mode: Any) -> bool:  # noqa: D102
        return True

    def output_info(self) -> dict[str, tuple[str, str]]:
        """The stored energy of the support's coupling terms (the diagonal is in
        ``energy.elastic``)."""
        return {
            f"energy.{self.name}": (
                "J",
                f"energy of the off-diagonal stiffness of support '{self.name}'",
            )
        }

    def energy(self, x, q, v):  # noqa: D102
        delta = q[self.dofs]
        return 0.5 * float(delta @ self.stiffness @ delta)

    def power(self, t, x, q, v, u, mode, step):  # noqa: D102
        rate = v[self.dofs]
        return 0.0, float(rate @ self.damping @ rate)


def build_support_coupling(robot: Any, options: dict[str, Any]) -> SupportCoupling | None:
    """The coupling of a support whose matrices are not diagonal."""
    support = getattr(robot, "support", None)
    if support is None or not support.coupled:
        return None
    return SupportCoupling(support)
