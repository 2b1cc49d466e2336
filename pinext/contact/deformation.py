"""Contact deformation on both sides: the tool's compliance in series with the environment's
(Vukobratović & Potkonjak, §20.5.1, Problem 9 of Fig. 20.11).

"The general approach, however, would require the analysis of deformation on both sides of
contact: environment and robot (Problem 9) ... With some applications, such as peg-in-hole
assembly, it is a real situation. The same material is used for the peg and for the object
with the hole." The robot's side is a massless spring k_t with a damper d_t in the tool (the
peg, the pen) at the contact frame; the environment's side is the contact layer k_c, c_c of
model (d) of Fig. 20.15 (none: a rigid face) in front of the environment mass m_e of (20.94)
(none: an immobile surface). The two massless Kelvin–Voigt elements carry one force F:

.. math::

    F = k_t w_t + d_t \\dot w_t = k_c w_c + c_c \\dot w_c, \\qquad w = w_t + w_c,

with w the total compression of the contact, whose rate the kinematics give
(``ẇ = −(ṡ^c − ṡ_e)``). Without dampers the split is static, ``w_t = k_c w / (k_t + k_c)``,
and ``F = k w`` with the series stiffness

.. math::

    k = \\frac{k_t k_c}{k_t + k_c};

with dampers the tool's compression is a state,
``(d_t + c_c)\\,\\dot w_t = k_c (w − w_t) − k_t w_t + c_c \\dot w``. Each side stores
``½ k_t w_t²`` and ``½ k_c w_c²`` and dissipates ``d_t ẇ_t²`` and ``c_c ẇ_c²``; off contact
each element relaxes by itself (``d ẇ = −k w``, at once without a damper). No impact: a
compliance in series makes the contact a transient (the remark after (20.97)).

A tool with a mass of its own is a body on a spring: :func:`compliant_tool` adds it to the
robot's model as an elastic prismatic joint at the contact frame (the ``[[contacts]]`` table's
``tool_mass``), so that the contact (rigid, or against the environment's layer and mass)
touches the tool's body, and the simulation, the modal analysis and the energy audit see it
as any elastic joint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from ..simulation.forms import damper_power, kelvin_voigt, series_rate
from ..validation import real, vector

if TYPE_CHECKING:
    from ..model import Robot

__all__ = ["SeriesCompliance", "compliant_tool", "series_stiffness"]


def series_stiffness(*stiffnesses: float) -> float:
    """``1 / Σ 1/k_i`` [N/m]: springs in series (an infinite stiffness is a rigid element)."""
    finite = [float(k) for k in stiffnesses if not np.isinf(k)]
    if not finite:
        return float("inf")
    if any(k <= 0 for k in finite):
        return 0.0
    return 1.0 / sum(1.0 / k for k in finite)


def _check(name: str, value: float, positive: bool = False) -> float:
    return real(name, value, low=0.0, strict=positive)


@dataclass(frozen=True)
class SeriesCompliance:
    """A tool's spring and damper in series with the environment's contact layer.

    Args:
        tool_stiffness: k_t [N/m] (> 0), or None: a rigid tool.
        tool_damping: d_t [N.s/m] (≥ 0).
        surface_stiffness: k_c [N/m] of the environment's layer (> 0), or None: rigid.
        surface_damping: c_c [N.s/m] (≥ 0).
    """

    tool_stiffness: float | None = None
    tool_damping: float = 0.0
    surface_stiffness: float | None = None
    surface_damping: float = 0.0

    def __post_init__(self) -> None:
        if self.tool_stiffness is None and self.surface_stiffness is None:
            raise InvalidParameter("a compliance in series needs a tool or a surface stiffness")
        for name in ("tool_stiffness", "surface_stiffness"):
            if getattr(self, name) is not None:
                _check(name, getattr(self, name), positive=True)
        _check("tool_damping", self.tool_damping)
        _check("surface_damping", self.surface_damping)
        if self.tool_stiffness is None and self.tool_damping:
            raise InvalidParameter("tool_damping needs a tool_stiffness (a damper alone in series)")
        if self.surface_stiffness is None and self.surface_damping:
            raise InvalidParameter("surface damping needs a surface (contact) stiffness")

    # -- structure -------------------------------------------------------------------------
    @property
    def two_sided(self) -> bool:
        """Both sides deform."""
        return self.tool_stiffness is not None and self.surface_stiffness is not None

    @property
    def has_state(self) -> bool:
        """Whether the tool's compression is a state (both sides, with a damper)."""
        return self.two_sided and self.tool_damping + self.surface_damping > 0.0

    @property
    def single(self) -> tuple[float, float] | None:
        """(k, c) of the one spring and damper the series amounts to without a state of its
        own: the deforming side's alone, or the series stiffness of two undamped sides; None
        with a state (:attr:`has_state`)."""
        if self.has_state:
            return None
        if self.tool_stiffness is None:
            return float(self.surface_stiffness), self.surface_damping  # type: ignore[arg-type]
        if self.surface_stiffness is None:
            return float(self.tool_stiffness), self.tool_damping
        return self.stiffness, 0.0

    @property
    def stiffness(self) -> float:
        """The series stiffness k = k_t k_c / (k_t + k_c) [N/m]."""
        return series_stiffness(
            np.inf if self.tool_stiffness is None else self.tool_stiffness,
            np.inf if self.surface_stiffness is None else self.surface_stiffness,
        )

    def _sides(self) -> tuple[float, float, float, float]:
        return (
            float(self.tool_stiffness or 0.0),
            self.tool_damping,
            float(self.surface_stiffness or 0.0),
            self.surface_damping,
        )

    # -- in contact ------------------------------------------------------------------------
    def split(self, w: float, w_t: float) -> tuple[float, float]:
        """(w_t, w_c): the compression of each side [m] for the total w and the tool's state
        w_t (used only when :attr:`has_state`)."""
        if self.tool_stiffness is None:
            return 0.0, w
        if self.surface_stiffness is None:
            return w, 0.0
        if self.has_state:
            return w_t, w - w_t
        k_t, _, k_c, _ = self._sides()
        tool = k_c * w / (k_t + k_c)
        return tool, w - tool

    def tool_rate(self, w: float, w_t: float, wdot: float) -> float:
        """ẇ_t in contact [m/s] (the equilibrium of the massless node between the sides)."""
        k_t, d_t, k_c, c_c = self._sides()
        if self.tool_stiffness is None:
            return 0.0
        if self.surface_stiffness is None:
            return wdot
        if self.has_state:
            return series_rate(k_t, d_t, k_c, c_c, w, w_t, wdot)
        return k_c * wdot / (k_t + k_c)

    def force(self, w: float, w_t: float, wdot: float) -> float:
        """The contact force F [N] (positive: pushes the tool out of the surface)."""
        k_t, d_t, k_c, c_c = self._sides()
        tool, surface = self.split(w, w_t)
        if self.tool_stiffness is None:
            return kelvin_voigt(k_c, c_c, surface, wdot)
        return kelvin_voigt(k_t, d_t, tool, self.tool_rate(w, w_t, wdot))

    def energies(self, w: float, w_t: float) -> tuple[float, float]:
        """(½ k_t w_t², ½ k_c w_c²) [J]: stored in the tool and in the surface layer."""
        k_t, _, k_c, _ = self._sides()
        tool, surface = self.split(w, w_t)
        return 0.5 * k_t * tool * tool, 0.5 * k_c * surface * surface

    def dissipation(self, w: float, w_t: float, wdot: float, touching: bool) -> float:
        """``d_t ẇ_t² + c_c ẇ_c²`` [W]."""
        _, d_t, _, c_c = self._sides()
        tool_rate, surface_rate = self.rates(w, w_t, wdot, touching)
        return damper_power(d_t, tool_rate) + damper_power(c_c, surface_rate)

    # -- both phases -----------------------------------------------------------------------
    def rates(self, w: float, w_t: float, wdot: float, touching: bool) -> tuple[float, float]:
        """(ẇ_t, ẇ_c) [m/s]: in contact from the kinematics' ẇ; off contact each element
        relaxes, ``d ẇ = −k w`` (0 without a damper: it relaxed at lift-off)."""
        if touching:
            tool_rate = self.tool_rate(w, w_t, wdot)
            return tool_rate, wdot - tool_rate
        k_t, d_t, k_c, c_c = self._sides()
        tool, surface = self.split(w, w_t)
        tool_rate = -k_t * tool / d_t if d_t > 0 else 0.0
        surface_rate = -k_c * surface / c_c if c_c > 0 else 0.0
        return tool_rate, surface_rate

    def relaxed(self, w: float, w_t: float) -> tuple[float, float]:
        """(w, w_t) at lift-off (F = 0): the elements without a damper are at rest length."""
        k_t, d_t, k_c, c_c = self._sides()
        tool, surface = self.split(w, w_t)
        if d_t == 0.0:
            tool = 0.0
        if c_c == 0.0:
            surface = 0.0
        return tool + surface, tool


def compliant_tool(
    robot: Any,
    frame: str,
    *,
    stiffness: float,
    mass: float,
    damping: float = 0.0,
    axis: Sequence[float] = (0.0, 0.0, 1.0),
    name: str | None = None,
) -> Robot:
    """A new Robot whose tool at ``frame`` is a mass on a spring (the robot's side of a contact
    deformed on both sides, with the tool's own mass).

    A prismatic joint ``"<name>_spring"`` along ``axis`` (in the frame's axes) joins the frame
    to a point mass, the tool's body, with the frame ``name`` (default ``"<frame>_tool"``) on
    it: put the contact on that frame. Its coordinate is the tool's extension (negative:
    compressed) [m]; ``joint_stiffness`` and ``joint_damping`` carry k_t and d_t.

    Args:
        robot: A :class:`pinext.Robot` (or a bare ``pin.Model``); it is not changed.
        frame: The robot frame where the tool's spring starts (e.g. the pen's tip).
        stiffness: k_t [N/m] (> 0).
        mass: The tool's mass m_t beyond the spring [kg] (> 0).
        damping: d_t [N.s/m] (≥ 0).
        axis: The spring's direction in the frame's axes (normalised).
        name: The new frame's name.

    Raises:
        InvalidParameter: A non-positive stiffness or mass, a zero axis, or a name in use.
        NameNotFound: An unknown frame.
    """
    from ..model import Robot

    base = robot if isinstance(robot, Robot) else Robot.from_model(robot)
    _check("stiffness (the tool's k_t [N/m])", stiffness, positive=True)
    _check("mass (the tool's m_t [kg])", mass, positive=True)
    _check("damping (the tool's d_t [N.s/m])", damping)
    direction = vector("axis", axis, 3, what="the tool's spring direction")
    if not np.linalg.norm(direction) > 0:
        raise InvalidParameter(f"tool axis must be a nonzero 3-vector, got {list(direction)}")
    direction = direction / np.linalg.norm(direction)
    fid = base.frame_id(frame)
    name = name or f"{frame}_tool"
    if base.model.existFrame(name) or base.model.existJointName(f"{name}_spring"):
        raise InvalidParameter(f"tool name '{name}' is in use; choose another name=")
    model = base.model.copy()
    parent = model.frames[fid]
    big = np.array([np.inf])
    joint = model.addJoint(
        parent.parentJoint,
        pin.JointModelPrismaticUnaligned(direction),
        parent.placement,
        f"{name}_spring",
        big,
        big,
        -big,
        big,
    )
    model.appendBodyToJoint(
        joint, pin.Inertia(float(mass), np.zeros(3), np.zeros((3, 3))), pin.SE3.Identity()
    )
    joint_frame = model.addJointFrame(joint, fid)
    model.addBodyFrame(name, joint, pin.SE3.Identity(), joint_frame)
    assert base.joint_stiffness is not None and base.joint_damping is not None
    return Robot(
        model=model,
        rigid_model=base.rigid_model,
        visual_model=base.visual_model.copy(),
        collision_model=base.collision_model.copy(),
        joint_stiffness=np.concatenate([base.joint_stiffness, [float(stiffness)]]),
        joint_damping=np.concatenate([base.joint_damping, [float(damping)]]),
        drives=dict(base.drives),
        transmissions=dict(base.transmissions),
        flexible=list(base.flexible),
        extensions=base.extensions,
        path=base.path,
        free_bodies=list(base.free_bodies),
        support=base.support,
    )
