"""Loop closures: two frames of one model joined by a point, a hinge or a weld."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..contact.coordinates import ConstraintKinematics, resolve_frame
from ..exceptions import InvalidParameter
from ..simulation.component import FRAME_HINGE, FRAME_POINT, FRAME_WELD, FrameRows
from ..simulation.forms import frame_selection
from ..validation import as_placement, vector
from ..validation import stabilization as checked_stabilization
from .closure import Closure

if TYPE_CHECKING:
    from ..simulation.system import System

#: Rows of each kind of loop.
KINDS = {"point": 3, "hinge": 5, "weld": 6}
_KIND = {"point": FRAME_POINT, "hinge": FRAME_HINGE, "weld": FRAME_WELD}


class Loop(Closure):
    """A loop closure between two frames of the model (McClamroch (1986) (3), (15)–(16)).

    The loop joins frame A (``frame_a``) to the frame B' = B·``placement`` attached to
    ``frame_b``; closed, A's origin is B''s origin and, for a weld, A's axes are B''s. A
    gripped load ((3): p = H(q)), a second gripper on the same load ((15)–(16)) and the last
    joint of a closed linkage are all loops. The rows, in world axes (Pinocchio's
    ``LOCAL_WORLD_ALIGNED``):

    * ``point`` (3 rows): ``p_A - p_B' = 0``; B = ``J_A - J_B'`` of the origins' velocities,
      drift the difference of their classical accelerations;
    * ``hinge`` (5 rows): the point rows, and the relative angular velocity across the two
      world directions n₁, n₂ fixed in B' and normal to ``axis`` (given in A, default z):
      rows ``n_iᵀ(J_ω,A - J_ω,B)``, drift ``n_iᵀ(α_A - α_B) + (ω_B × n_i)ᵀ(ω_A - ω_B)``,
      residual ``n_iᵀ(e_B' × e_A)`` (the alignment of the axis);
    * ``weld`` (6 rows): the point rows and ``ω_A - ω_B = 0``, residual the world rotation
      vector ``R_B' log(R_B'ᵀ R_A)``.

    The drift is exactly ``Ḃ v`` of the rows, so the index-1 system (24)–(27) holds the loop
    to the integration tolerance; Baumgarte's term (``stabilization``) takes out what drifts.

    Args:
        frame_a: Name (or index) of frame A.
        frame_b: Name (or index) of frame B (``"universe"`` for the world).
        kind: ``"point"``, ``"hinge"`` or ``"weld"``.
        placement: Placement of the joint point (frame B') in frame B (default identity).
        axis: Hinge axis in frame A, shape (3,) (default z); only for ``"hinge"``.
        name: Component name (default ``"loop:<frame_a>-<frame_b>"``).
        stabilization: Baumgarte natural frequency ω [1/s]; None for none.

    Outputs (``Trajectory.outputs["<name>.<signal>"]``): ``force`` [N] and ``torque`` [N.m],
    the reaction on frame A at its origin in world axes (B receives the opposite), i.e. the
    wrench that the multipliers λ of (23) apply; ``residual`` [m, rad] (rows' order);
    ``closed``.
    """

    def __init__(
        self,
        frame_a: str | int,
        frame_b: str | int,
        kind: str = "point",
        placement: pin.SE3 | None = None,
        axis: Sequence[float] | None = None,
        *,
        name: str | None = None,
        stabilization: float | None = 20.0,
    ) -> None:
        super().__init__()
        if kind not in KINDS:
            raise InvalidParameter(f"unknown loop kind {kind!r}; valid kinds: {', '.join(KINDS)}")
        if axis is not None and kind != "hinge":
            raise InvalidParameter(f"axis is only for a hinge loop, got kind {kind!r}")
        placement = as_placement("placement", placement, none=True)
        self.frame_a, self.frame_b, self.kind = frame_a, frame_b, kind
        self.placement = pin.SE3.Identity() if placement is None else placement
        self.name = name or f"loop:{frame_a}-{frame_b}"
        self.stabilization = checked_stabilization(f"stabilization of {self.name}", stabilization)
        self.m = KINDS[kind]
        self.axis = (
            np.array([0.0, 0.0, 1.0])
            if axis is None
            else vector("axis", axis, 3, what="the hinge axis in frame A")
        )
        norm = np.linalg.norm(self.axis)
        if kind == "hinge" and not norm > 0:
            raise InvalidParameter("the hinge axis must be a nonzero vector")
        self.axis /= norm
        helper = np.eye(3)[int(np.argmin(np.abs(self.axis)))]
        n1 = np.cross(self.axis, helper)
        n1 /= np.linalg.norm(n1)
        self.normals = np.column_stack([n1, np.cross(self.axis, n1)])  # in B' (and A), (3, 2)

    @classmethod
    def closed_at(
        cls,
        model: pin.Model,
        q: np.ndarray,
        frame_a: str | int,
        frame_b: str | int,
        kind: str = "weld",
        **options: Any,
    ) -> Loop:
        """The loop that is closed at configuration q: ``placement`` = B⁻¹·A there.

        Args:
            model: The model (of the System the loop will join).
            q: Configuration, shape (nq,).
            frame_a: Frame A.
            frame_b: Frame B.
            kind: ``"point"``, ``"hinge"`` or ``"weld"``.
            **options: Further arguments of :class:`Loop` (``axis``, ``name``, ...).
        """
        data = model.createData()
        pin.framesForwardKinematics(model, data, np.asarray(q, dtype=float))
        ia, ib = resolve_frame(model, frame_a), resolve_frame(model, frame_b)
        return cls(frame_a, frame_b, kind, data.oMf[ib].actInv(data.oMf[ia]), **options)

    def bind(self, system: System) -> None:
        self.ids = (
            resolve_frame(system.model, self.frame_a),
            resolve_frame(system.model, self.frame_b),
        )
        super().bind(system)
        fa, fb = self.model.frames[self.ids[0]], self.model.frames[self.ids[1]]
        self._rows = FrameRows.block(
            _KIND[self.kind],
            fa.parentJoint,
            fa.placement,
            fb.parentJoint,
            fb.placement * self.placement,
            self.stabilization or 0.0,
            self.axis,
            self.normals,
        )

    def kinematics(
        self, model: pin.Model, data: pin.Data, q: np.ndarray, t: float
    ) -> ConstraintKinematics:
        """The loop's rows (:meth:`FrameRows.kinematics` of :meth:`compiled_rows`)."""
        residual, jacobian, drift = self._rows.kinematics(model, data)
        return ConstraintKinematics(residual, jacobian, drift, np.zeros(self.m))

    def compiled_rows(self, mode: Any) -> FrameRows:
        """The loop's rows as compiled data (:class:`FrameRows`: frames A and B' in their
        joints), built once when the System is assembled."""
        return self._rows

    def _selection(self) -> np.ndarray:
        """The rows' directions (m, 6) over the relative motion (linear, angular) of A to B'
        at the joint placements of the loop's data (its last :meth:`state_kinematics`;
        :func:`pinext.simulation.forms.frame_selection`)."""
        select, rate = np.zeros((6, 6)), np.zeros((6, 6))
        rot_b = self.data.oMi[int(self._rows.joint_b[0])].rotation @ self._rows.rot_b[0]
        frame_selection(self._rows.kind[0], rot_b, self.normals, np.zeros(3), select, rate)
        return select[: self.m]

    def planar_rank(self, normal: np.ndarray) -> int:
        """The rank of the rows for a mechanism moving in planes normal to ``normal``: the
        rows acting on the planar relative motions (two translations in the plane, the turn
        about the normal): 2 for a point, 2 for a hinge about the normal (3 otherwise), 3
        for a weld."""
        plane = np.linalg.svd(normal.reshape(1, 3))[2][1:]  # (2, 3): the plane's directions
        planar = np.zeros((6, 3))  # relative (linear, angular) motions of the plane
        planar[:3, :2] = plane.T
        planar[3:, 2] = normal
        return int(np.linalg.matrix_rank(self._selection() @ planar, tol=1e-9))

    def wrench(self, forces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(force [N], torque [N.m]) on frame A, world axes, from the loop's multipliers:
        the rows' directions applied to them."""
        select = self._selection()
        lam = np.asarray(forces[: self.m], dtype=float)
        return select[:, :3].T @ lam, select[:, 3:].T @ lam

    def outputs(self, t, x, q, v, u, mode, step) -> dict[str, np.ndarray]:
        out = super().outputs(t, x, q, v, u, mode, step)  # placements of self.data at q
        force, torque = self.wrench(step.force(self.name, self.m))
        return {"force": force, "torque": torque, **out}

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Units and descriptions of :meth:`outputs`."""
        a, b = self.frame_a, self.frame_b
        return {
            **super().output_info(),
            **self.signals(
                {
                    "force": ("N", f"reaction force on '{a}' at its origin from '{b}' (world)"),
                    "torque": ("N.m", f"reaction torque on '{a}' from '{b}' (world axes)"),
                }
            ),
        }

    def metadata(self) -> dict[str, Any]:
        """The scene item a viewer draws: the two joined points and the force on frame A
        (:mod:`pinext.visualization.scene`, kind ``"loop"``)."""
        model = getattr(self, "model", None)

        def name(frame: str | int) -> str:
            if model is not None and isinstance(frame, int):
                return str(model.frames[frame].name)
            return str(frame)

        item = {
            "kind": "loop",
            "name": self.name,
            "loop": self.kind,
            "frame_a": name(self.frame_a),
            "frame_b": name(self.frame_b),
            "placement": self.placement.homogeneous.tolist(),
            "force": f"{self.name}.force",
        }
        return {f"scene.{self.name}": [item]}

    def describe(self) -> str:
        return f"loop '{self.name}' ({self.kind}, {self.frame_a} to {self.frame_b})"

    def __repr__(self) -> str:
        return f"Loop({self.frame_a!r}, {self.frame_b!r}, kind={self.kind!r})"


def build_loops(robot: Any, options: dict[str, Any]) -> list[Loop] | None:
    """The System's ``loops`` argument: :class:`Loop` objects, or ``(frame_a, frame_b, kind)``
    tuples / dicts of Loop's arguments."""
    loops = options.get("loops")
    if loops is None:  # the [[loops]] tables / <loop/> elements of the robot's files
        loops = getattr(getattr(robot, "extensions", None), "loops", None) or ()
    built = []
    for spec in loops:
        if isinstance(spec, Loop):
            built.append(spec)
        elif isinstance(spec, dict):
            built.append(Loop(**_loop_arguments(spec)))
        elif isinstance(spec, (tuple, list)):
            built.append(Loop(*spec))
        else:
            raise InvalidParameter(
                f"a loop must be a pinext.Loop, a tuple (frame_a, frame_b, kind) or a dict, "
                f"got {type(spec).__name__}"
            )
    return built or None


def _loop_arguments(spec: dict[str, Any]) -> dict[str, Any]:
    """:class:`Loop` arguments from a dict: the placement as ``placement`` (a ``pin.SE3``) or
    as ``xyz`` [m] and ``rpy`` [rad] (the extension format)."""
    spec = dict(spec)
    xyz, rpy = spec.pop("xyz", None), spec.pop("rpy", None)
    if xyz is not None or rpy is not None:
        rotation = pin.rpy.rpyToMatrix(*np.asarray(rpy if rpy is not None else (0, 0, 0), float))
        spec["placement"] = pin.SE3(
            rotation, np.asarray(xyz if xyz is not None else (0, 0, 0), float)
        )
    try:
        inspect.signature(Loop).bind(**spec)
    except TypeError:
        valid = (
            "frame_a",
            "frame_b",
            "kind",
            "xyz",
            "rpy",
            "placement",
            "axis",
            "name",
            "stabilization",
        )
        raise InvalidParameter(
            f"bad loop keys {sorted(spec)}; valid keys: {', '.join(valid)}"
        ) from None
    return spec
