"""Mimic joints: a URDF ``<mimic>`` element as a linear coupling row."""

from __future__ import annotations

import difflib
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..contact.coordinates import ConstraintKinematics
from ..exceptions import InvalidParameter, NameNotFound
from ..simulation.component import ConstraintRows, JointRows, RowKind
from .closure import Closure

if TYPE_CHECKING:
    from ..simulation.system import System
    from ..urdf_extensions import MimicSpec


class SkippedMimicWarning(UserWarning):
    """A URDF ``<mimic>`` element couples a joint that is no DOF of the Pinocchio model (a
    ``fixed`` joint, or a name the URDF does not define): the System leaves it out."""


class Mimic(Closure):
    """A joint that follows another: ``q_m = k q_l + c``, a linear closure.

    The coupling is one row of the singular system (23) of McClamroch (1986) with a constant
    Jacobian, ``B = e_m - k e_l``, and no drift; its multiplier λ is the coupling force:
    ``λ`` acts on the follower, ``-k λ`` on the leader (ideal: no work). Both joints keep
    their own inertia; a URDF ``<mimic>`` makes one (:func:`pinext.System` adds one
    coupling per ``<mimic>`` element unless ``mimic=False``).

    Args:
        joint: The follower (a one-DOF joint with ``nq = nv = 1``).
        leader: The joint it follows.
        multiplier: k [-].
        offset: c [rad or m].
        name: Component name (default ``"mimic:<joint>"``).
        stabilization: Baumgarte natural frequency ω [1/s]; None for none.

    Outputs: ``force`` [N.m or N] (the coupling effort on the follower), ``residual``
    ``q_m - k q_l - c``, ``closed``.
    """

    stepped_kind = "mimic"

    def __init__(
        self,
        joint: str,
        leader: str,
        multiplier: float = 1.0,
        offset: float = 0.0,
        *,
        name: str | None = None,
        stabilization: float | None = 20.0,
    ) -> None:
        super().__init__()
        self.joint, self.leader = joint, leader
        self.multiplier, self.offset = float(multiplier), float(offset)
        self.name = name or f"mimic:{joint}"
        self.stabilization = stabilization

    def bind(self, system: System) -> None:
        model = system.model
        names = list(model.names)[1:]
        index = []
        for joint in (self.joint, self.leader):
            if joint not in names:
                raise NameNotFound("joint", joint, names)
            jmodel = model.joints[model.getJointId(joint)]
            if jmodel.nq != 1 or jmodel.nv != 1:
                raise InvalidParameter(
                    f"mimic joint '{joint}' has nq = {jmodel.nq}, nv = {jmodel.nv}; a coupling "
                    "needs revolute or prismatic joints"
                )
            index.append((jmodel.idx_q, jmodel.idx_v))
        if self.joint == self.leader:
            raise InvalidParameter(f"joint '{self.joint}' cannot mimic itself")
        (self.iq, iv), (self.iq_leader, iv_leader) = index
        self.iv, self.iv_leader = iv, iv_leader
        self._rows = JointRows.build(
            [[(self.iq, self.iv, 1.0), (self.iq_leader, self.iv_leader, -self.multiplier)]],
            [self.offset],
            [float(self.stabilization or 0.0)],
        )
        self._jacobian = self._rows.jacobian(model.nv)
        super().bind(system)

    def kinematics(
        self, model: pin.Model, data: pin.Data, q: np.ndarray, t: float
    ) -> ConstraintKinematics:
        """φ = q_m − k q_l − c, its row and no drift, from the row's data
        (:meth:`compiled_rows`)."""
        residual = self._rows.coef @ q[self._rows.iq] - self._rows.offset
        return ConstraintKinematics(residual, self._jacobian, np.zeros(1), np.zeros(1))

    def constraint_rows(self, t, x, q, v, mode, data) -> ConstraintRows:
        """The row the compiled kernels read, evaluated (``JointRows.drift``: Baumgarte's
        ``2ω J v + ω² φ``, as :meth:`Closure.constraint_rows` forms it)."""
        return ConstraintRows(self._jacobian, self._rows.drift(q, v), None, RowKind.BILATERAL)

    def planar_rank(self, normal: np.ndarray) -> int:
        """One row, independent in any mechanism (:meth:`Closure.planar_rank`)."""
        return 1

    def compiled_rows(self, mode: Any) -> JointRows:
        """The coupling row ``a_m − k a_l + 2ω (v_m − k v_l) + ω² (q_m − k q_l − c) = 0``
        (ω = :attr:`stabilization`, 0 when None), stated once when the System is assembled:
        :meth:`kinematics` and :meth:`constraint_rows` evaluate it."""
        return self._rows

    def outputs(self, t, x, q, v, u, mode, step) -> dict[str, np.ndarray]:
        out = super().outputs(t, x, q, v, u, mode, step)
        return {"force": step.force(self.name, 1), **out}

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Units and descriptions of :meth:`outputs`."""
        return {
            **super().output_info(),
            **self.signals(
                {"force": ("N.m or N", f"coupling effort on '{self.joint}' (the multiplier λ)")}
            ),
        }

    def describe(self) -> str:
        return (
            f"mimic coupling '{self.name}' ({self.joint} = {self.multiplier:g} {self.leader}"
            f" + {self.offset:g})"
        )

    def __repr__(self) -> str:
        return f"Mimic({self.joint!r}, {self.leader!r}, {self.multiplier!r}, {self.offset!r})"


def _missing(model: pin.Model, spec: MimicSpec) -> str | None:
    """Why a ``<mimic>`` element cannot couple two DOFs of ``model``, or None if it can."""
    for joint in (spec.joint, spec.leader):
        if model.existJointName(joint):
            continue
        if model.existFrame(joint) and model.frames[model.getFrameId(joint)].type == (
            pin.FrameType.FIXED_JOINT
        ):
            return f"'{joint}' is a fixed joint (a frame of the model, no DOF)"
        close = difflib.get_close_matches(joint, list(model.names)[1:], n=2)
        guess = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        return f"the model has no joint '{joint}'{guess}"
    return None


def build_mimic(robot: Any, options: dict[str, Any]) -> list[Mimic] | None:
    """One :class:`Mimic` per ``<mimic>`` element of the robot's URDF (unless ``mimic=False``).

    An element whose follower or leader is no DOF of the model (example-robot-data's Talos
    grippers put ``<mimic>`` on ``fixed`` joints; a leader the URDF does not define) couples
    nothing: it is left out, with one :class:`SkippedMimicWarning` naming each such element,
    its joints and the URDF."""
    if not options.get("mimic", True):
        return None
    specs = getattr(getattr(robot, "extensions", None), "mimic", {}) or {}
    model = getattr(robot, "model", robot)
    built, skipped = [], []
    for s in specs.values():
        reason = _missing(model, s)
        if reason is None:
            built.append(Mimic(s.joint, s.leader, s.multiplier, s.offset))
        else:
            skipped.append(f"<mimic joint='{s.leader}'> of joint '{s.joint}': {reason}")
    if skipped:
        path = getattr(robot, "path", None)
        where = f"{Path(path).name} ({path})" if path else "the robot's URDF"
        warnings.warn(
            f"{where}: {len(skipped)} <mimic> element(s) left out, they couple no DOF of the "
            f"model: {'; '.join(skipped)}. The robot simulates without those couplings"
            + (f" ({len(built)} other coupling(s) hold)" if built else ""),
            SkippedMimicWarning,
            stacklevel=3,  # System(...) in the user's code
        )
    return built or None
