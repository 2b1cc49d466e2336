"""Unilateral contact: impact, bouncing, resting and lift-off (McClamroch 1986, §6;
Vukobratović & Potkonjak, §20.5.2).

A :class:`Contact` is one constraint of the robot with its hybrid behaviour:

* **approach** (free motion) ends when the approach gap crosses zero from above;
* **impact**: Newton's law with restitution e (e = 0: the seed's plastic impact (20.90)–
  (20.91)). If the rebound velocity ``e |ṡ⁻|`` exceeds ``rest_velocity`` the tip bounces and
  the motion stays free; otherwise the impact is made plastic and the contact rests. This
  threshold is how the Zeno accumulation of a bouncing ball (infinitely many impacts before
  a finite time) is cut: below it the ball comes to rest, so the event loop is finite;
* **constrained motion** (20.88)–(20.89) while the reaction pushes (F ≥ 0 along a
  unilateral surface's normal);
* **lift-off** when the reaction would pull (F crosses 0 downwards): back to free motion.

Constraints with m > 1 (peg-in-hole, 3D/6D points) are bilateral once engaged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin
from numba import njit

from ..exceptions import InvalidParameter
from ..validation import flag, real, stabilization
from .coordinates import (
    COORDINATE_NAMES,
    Constraint,
    FunctionalCoordinates,
    peg_in_hole,
    plane,
    point_contact,
)

#: Default rebound velocity below which a bounce becomes resting contact [m/s].
REST_VELOCITY = 1e-3


@dataclass
class Contact:
    """A constraint with its contact behaviour (restitution, unilaterality, stabilisation).

    Args:
        constraint: The :class:`Constraint` (plane, peg-in-hole, point, implicit surface).
        restitution: Newton's coefficient e ∈ [0, 1] (0: plastic impact).
        rest_velocity: Rebound velocity [m/s] below which the contact rests (Zeno cut).
        unilateral: Lift off when the reaction would pull; default: True when m = 1.
        stabilization: Baumgarte natural frequency ω [1/s] of the constraint error
            (None or 0: none).
        name: Label used in event names (default: the frame name).
        friction: Coulomb's coefficient μ ≥ 0 (0: frictionless); μ > 0 on a plane makes it a
            :class:`pinext.contact.friction.FrictionalContact` (stick/slip modes).
        tool_stiffness: k_t [N/m] of the robot's side (the tool, the peg: a massless spring at
            the contact frame along the normal), in series with the environment's
            compliance (:mod:`pinext.contact.deformation`); None: a rigid tool.
        tool_damping: d_t [N.s/m] in parallel with ``tool_stiffness``.
    """

    constraint: Constraint
    restitution: float = 0.0
    rest_velocity: float = REST_VELOCITY
    unilateral: bool | None = None
    stabilization: float | None = 20.0
    name: str | None = None
    friction: float = 0.0
    tool_stiffness: float | None = None
    tool_damping: float = 0.0

    def __post_init__(self) -> None:
        self.friction = real("friction", self.friction, unit="(Coulomb's μ) [-]", low=0.0)
        self.restitution = real("restitution", self.restitution, unit="[-]", low=0.0, high=1.0)
        self.rest_velocity = real("rest_velocity", self.rest_velocity, unit="[m/s]", low=0.0)
        self.stabilization = stabilization("stabilization", self.stabilization)
        if self.unilateral is not None:
            self.unilateral = flag("unilateral", self.unilateral)
        if self.unilateral is None:
            self.unilateral = self.constraint.m == 1
        if self.unilateral and self.constraint.m != 1:
            raise InvalidParameter("only one-row (surface) constraints can be unilateral")
        if self.name is None:
            self.name = str(self.constraint.frame)
        self.tool_stiffness = real(
            "tool_stiffness",
            self.tool_stiffness,
            unit="[N/m] (None: a rigid tool)",
            low=0.0,
            strict=True,
            none=True,
        )
        self.tool_damping = real("tool_damping", self.tool_damping, unit="[N.s/m]", low=0.0)
        if self.tool_stiffness is not None:
            if self.constraint.m != 1 or not self.unilateral:
                raise InvalidParameter(
                    "tool_stiffness acts along the normal of a unilateral surface contact (m = 1)"
                )
            if self.friction:
                raise InvalidParameter("a compliant tool on a frictional contact is not modelled")
        if self.tool_damping and self.tool_stiffness is None:
            raise InvalidParameter("tool_damping needs a tool_stiffness")

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> Contact:
        """A contact from a ``[[contacts]]`` table / ``<contact .../>`` element.

        Keys: ``frame`` (required); ``surface`` = ``"plane"`` (default; ``point`` [m] and
        ``normal``), ``"ground"`` (the horizontal plane through ``point``, default z = 0,
        normal +z: the feet of a legged robot), ``"peg_in_hole"`` (``point``, ``rpy`` of the
        hole frame, hole axis = its z), ``"point3d"`` / ``"point6d"`` (``point``, ``rpy``), or
        ``"functional"`` (``point``, ``rpy``, ``constrained`` = list of names among x y z roll
        pitch yaw, ``approach``); ``restitution``, ``rest_velocity``, ``unilateral``,
        ``stabilization``, ``name``, ``friction``; ``tool_stiffness`` [N/m] and
        ``tool_damping`` [N.s/m] of the robot's side of the contact (with ``tool_mass`` [kg]
        and ``tool_axis`` the table is turned into :func:`pinext.contact.compliant_tool` when
        the robot is loaded).
        """
        spec = dict(spec)
        known = {
            "frame",
            "surface",
            "point",
            "normal",
            "rpy",
            "constrained",
            "approach",
            "restitution",
            "rest_velocity",
            "unilateral",
            "stabilization",
            "name",
            "friction",
            "tool_stiffness",
            "tool_damping",
        }
        if "tool_mass" in spec or "tool_axis" in spec:
            raise InvalidParameter(
                "tool_mass and tool_axis make the tool a body of the robot's model: load the "
                "robot with them in its [[contacts]] table, or use "
                "pinext.contact.compliant_tool(robot, frame, ...) and a contact on its frame"
            )
        unknown = set(spec) - known
        if unknown:
            raise InvalidParameter(
                f"unknown contact keys {sorted(unknown)}; valid keys: {', '.join(sorted(known))}"
            )
        if "frame" not in spec:
            raise InvalidParameter("a contact needs a 'frame'")
        frame = spec["frame"]
        surface = spec.get("surface", "plane")
        point = np.asarray(spec.get("point", (0.0, 0.0, 0.0)), dtype=float).reshape(3)
        rotation = pin.rpy.rpyToMatrix(*np.asarray(spec.get("rpy", (0.0, 0.0, 0.0)), dtype=float))
        placement = pin.SE3(rotation, point)
        if surface == "plane":
            constraint: Constraint = plane(frame, point, spec.get("normal", (0.0, 0.0, 1.0)))
        elif surface == "ground":  # the horizontal plane z = point[2], normal up
            if "normal" in spec:
                raise InvalidParameter("the ground's normal is +z; give surface = 'plane'")
            constraint = plane(frame, (0.0, 0.0, point[2]), (0.0, 0.0, 1.0))
        elif surface == "peg_in_hole":
            constraint = peg_in_hole(frame, placement)
        elif surface in ("point3d", "point6d"):
            constraint = point_contact(frame, placement, dim=3 if surface == "point3d" else 6)
        elif surface == "functional":
            names = spec.get("constrained", ("z",))
            names = names.split() if isinstance(names, str) else names
            constraint = FunctionalCoordinates(
                frame, placement, names, approach=spec.get("approach")
            )
        else:
            raise InvalidParameter(
                f"unknown surface {surface!r}; valid surfaces: plane, ground, peg_in_hole, "
                "point3d, point6d, functional"
            )
        return cls(
            constraint,
            restitution=float(spec.get("restitution", 0.0)),
            rest_velocity=float(spec.get("rest_velocity", REST_VELOCITY)),
            unilateral=spec.get("unilateral"),
            stabilization=spec.get("stabilization", 20.0),
            name=spec.get("name"),
            friction=float(spec.get("friction", 0.0)),
            tool_stiffness=None
            if spec.get("tool_stiffness") is None
            else float(spec["tool_stiffness"]),
            tool_damping=float(spec.get("tool_damping", 0.0)),
        )


def bounces(contact: Contact, normal_velocity: float) -> bool:
    """True when an impact at approach velocity ``ṡ⁻ < 0`` rebounds (no resting contact).

    A bounce needs e > 0, a unilateral contact and a rebound speed ``e |ṡ⁻|`` above
    ``rest_velocity`` (the Zeno cut).
    """
    return bool(
        contact.unilateral
        and rebounds(
            float(contact.restitution), float(contact.rest_velocity), float(normal_velocity)
        )
    )


@njit(cache=True)
def rebounds(restitution: float, rest_velocity: float, normal_velocity: float) -> bool:
    """Whether an impact at ``normal_velocity`` rebounds, from Newton's coefficient and the
    Zeno cut: the one rule of :func:`bounces`, a joint limit's impact
    (:class:`pinext.contact.limits.JointLimits`) and the bounces of the compiled loop
    (:mod:`pinext.compiled.impacts`)."""
    return restitution > 0.0 and restitution * abs(normal_velocity) > rest_velocity


def pulls(contact: Contact, force: np.ndarray) -> bool:
    """True when a unilateral contact's reaction would pull (F < 0): it lifts off."""
    return bool(contact.unilateral and float(np.asarray(force).reshape(-1)[0]) < 0.0)


__all__ = ["COORDINATE_NAMES", "REST_VELOCITY", "Contact", "bounces", "pulls"]
