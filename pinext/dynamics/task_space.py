"""Dynamics in the task space (Lynch & Park, *Modern Robotics*, ch. 8; Khatib 1987).

The joint-space dynamics ``M(q) q̈ + h(q, q̇) = τ`` seen through a frame's Jacobian
``V = J(q) q̇`` (so ``V̇ = J q̈ + J̇ q̇``) becomes the wrench–acceleration relation

.. math::

    F = \\Lambda(q)\\,\\dot V + \\eta(q, \\dot q) + F_{tip},\\qquad \\tau = J^T F,

    \\Lambda = (J M^{-1} J^T)^{-1},\\qquad
    \\bar J = M^{-1} J^T \\Lambda,\\qquad
    \\eta = \\bar J^T h - \\Lambda \\dot J \\dot q.

For a square, invertible J these are Lynch & Park's ``Λ = J⁻ᵀ M J⁻¹`` and
``η = J⁻ᵀ h − Λ J̇ J⁻¹ V`` (their notes print ``V̇ = J θ̈ − J̇ θ̇`` and ``Λ J J⁻¹ V``:
both typos, the sign is + and the factor is J̇). For a redundant arm (nv > 6) J̄ is Khatib's
(1987) dynamically consistent generalized inverse: ``J J̄ = I``, and torques
``(I − Jᵀ J̄ᵀ) τ₀`` of its null space produce no task acceleration. ``F_tip`` is the wrench
that the frame applies to the environment (it adds to the wrench the joints must produce).

What V, V̇ and F are, by ``reference`` (components ordered ``[linear, angular]`` as in
Pinocchio; Lynch & Park order them ``(ω, v)``):

* ``"world"`` — Pinocchio's ``LOCAL_WORLD_ALIGNED`` (pinext's wrench convention):
  ``V = [ṗ, ω]``, the velocity of the frame's origin and the angular velocity, in world
  axes; ``V̇ = [p̈, ω̇]``, the *classical* acceleration of the origin; ``F = [f, m]``, force
  and moment about the frame's origin, in world axes.
* ``"local"`` — Pinocchio's ``LOCAL``, Lynch & Park's *end-effector (body) frame*: V the body
  twist in the frame's axes, V̇ its time derivative (the spatial acceleration in the frame's
  axes, which differs from the classical one by ``ω × v``), F the wrench at the origin in
  the frame's axes.
* ``"space"`` — Pinocchio's ``WORLD``, Lynch & Park's *space frame*: V the spatial twist
  (``v`` is the velocity of the body point passing through the world's origin), V̇ its time
  derivative, F the wrench about the world's origin in world axes.

Near a singularity ``J M⁻¹ Jᵀ`` loses rank. By default that is a
:class:`~pinext.exceptions.SingularConfiguration`, which gives the conditioning (the ratio
``σ_min / σ_max`` of the singular values of ``J M^(-1/2)``) against ``threshold``;
``damping=δ > 0`` gives the damped inverse ``(J M⁻¹ Jᵀ + δ² I)⁻¹`` and
``pseudo_inverse=True`` the Moore–Penrose pseudo-inverse (Λ is then singular along the lost
directions). ``damping=0`` is no damping: it raises at a singularity as the default does,
instead of returning the inverse of a (numerically) singular matrix, whose entries would be
rounding noise of the order of 1e15.

Pinocchio computes every term: ``computeAllTerms`` (M with armature, h, Jacobians),
``computeMinverse``, ``getFrameJacobian`` and ``getFrameAcceleration`` /
``getFrameClassicalAcceleration`` for ``J̇ q̇``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter, SingularConfiguration
from ..model import resolve_frame
from ..validation import describe, flag, real, vector

#: reference -> Pinocchio's reference frame.
REFERENCES = {
    "world": pin.ReferenceFrame.LOCAL_WORLD_ALIGNED,
    "local": pin.ReferenceFrame.LOCAL,
    "space": pin.ReferenceFrame.WORLD,
}
#: Default relative threshold on the singular values of J M^(-1/2).
SINGULAR_THRESHOLD = 1e-5
#: Largest departure of a quaternion's norm from 1 accepted in a configuration.
QUATERNION_TOLERANCE = 1e-6


class TaskSpaceDynamics(NamedTuple):
    """The task-space dynamics of one frame at one state (:func:`task_space_dynamics`)."""

    inertia: np.ndarray
    """Shape (6, 6). Λ, the task-space inertia [kg, kg.m, kg.m^2 blocks]; symmetric."""
    bias: np.ndarray
    """Shape (6,). η = J̄ᵀ h − Λ J̇ q̇: Coriolis, centrifugal and gravity terms as a wrench."""
    jacobian: np.ndarray
    """Shape (6, nv). J in the chosen reference."""
    consistent_inverse: np.ndarray
    """Shape (nv, 6). J̄ = M⁻¹ Jᵀ Λ (Khatib 1987)."""
    drift: np.ndarray
    """Shape (6,). J̇ q̇, the task acceleration at q̈ = 0 [m/s^2, rad/s^2]."""
    velocity: np.ndarray
    """Shape (6,). V = J q̇ [m/s, rad/s]."""
    mass: np.ndarray
    """Shape (nv, nv). M(q) with armature [kg, kg.m^2]."""
    nonlinear: np.ndarray
    """Shape (nv,). h(q, q̇), Coriolis, centrifugal and gravity [N, N.m]."""
    frame: str
    """The frame's name."""
    reference: str
    """``"world"``, ``"local"`` or ``"space"`` (see the module's docstring)."""

    def wrench(self, acceleration: np.ndarray, tip_wrench: np.ndarray | None = None) -> np.ndarray:
        """Shape (6,). ``F = Λ V̇ + η + F_tip``: the wrench whose joint torques ``Jᵀ F`` give
        the task acceleration V̇ while the frame applies ``tip_wrench`` to the environment.

        Args:
            acceleration: V̇, shape (6,), in this record's reference.
            tip_wrench: F_tip, shape (6,), the wrench the frame applies (None: zero).
        """
        out = self.inertia @ _six(acceleration, "acceleration") + self.bias
        return out if tip_wrench is None else out + _six(tip_wrench, "tip_wrench")

    def acceleration(self, wrench: np.ndarray, tip_wrench: np.ndarray | None = None) -> np.ndarray:
        """Shape (6,). ``V̇ = J M⁻¹ Jᵀ (F − η − F_tip)``: the task acceleration when the
        joints apply ``τ = Jᵀ F`` (the inverse of :meth:`wrench` where Λ is invertible)."""
        f = _six(wrench, "wrench") - self.bias
        if tip_wrench is not None:
            f = f - _six(tip_wrench, "tip_wrench")
        return self.jacobian @ np.linalg.solve(self.mass, self.jacobian.T @ f)

    def torque(self, wrench: np.ndarray) -> np.ndarray:
        """Shape (nv,). ``τ = Jᵀ F`` [N.m or N]."""
        return self.jacobian.T @ _six(wrench, "wrench")

    def null_space_projector(self) -> np.ndarray:
        """Shape (nv, nv). ``I − Jᵀ J̄ᵀ``: torques through it leave the task acceleration
        unchanged (Khatib 1987); zero for a square, invertible J."""
        return np.eye(self.jacobian.shape[1]) - self.jacobian.T @ self.consistent_inverse.T


def _six(vector: Any, name: str) -> np.ndarray:
    out = np.asarray(vector, dtype=float).reshape(-1)
    if out.shape != (6,):
        raise InvalidParameter(f"{name} must have shape (6,) ([linear, angular]), got {out.shape}")
    return out


def _model(robot: Any) -> pin.Model:
    """The model of a Robot, a System (with its drives' armature) or a bare pin.Model."""
    if isinstance(robot, pin.Model):
        return robot
    model = getattr(robot, "model", None)
    if isinstance(model, pin.Model):
        return model
    raise InvalidParameter(
        f"robot must be a pinext.Robot, a pinext.System or a pin.Model, got {type(robot).__name__}"
    )


def state(model: pin.Model, q: Any, v: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(q, v)`` checked against ``model``: finite, of shapes (nq,) and (nv,), and every
    quaternion of ``q`` (free flyers, spherical joints) of unit norm.

    Raises:
        InvalidParameter: The message names q or v (and the joint of a quaternion that is
            not of unit norm), gives the value and what is valid.
    """
    q = vector("q", q, model.nq, what="the configuration")
    v = vector("v", v, model.nv, what="the velocity")
    for jid in range(1, model.njoints):
        joint = model.joints[jid]
        if joint.shortname() in ("JointModelFreeFlyer", "JointModelSpherical"):
            start = joint.idx_q + (3 if joint.nq == 7 else 0)
            quaternion = q[start : start + 4]
            norm = float(np.linalg.norm(quaternion))
            if abs(norm - 1.0) > QUATERNION_TOLERANCE:
                raise InvalidParameter(
                    f"q: the quaternion (x, y, z, w) of joint '{model.names[jid]}' is "
                    f"{quaternion.tolist()}, of norm {norm:.6g}; a rotation needs norm 1 "
                    f"(within {QUATERNION_TOLERANCE:g}): normalise it, e.g. "
                    "pinocchio.normalize(model, q)"
                )
    return q, v


def model_data(model: pin.Model, data: Any) -> pin.Data:
    """``data`` if it is a ``pin.Data`` sized for ``model`` (its joints, frames and nv)."""
    if not isinstance(data, pin.Data):
        raise InvalidParameter(
            f"data must be None or a pin.Data of the model (model.createData()), got "
            f"{describe(data)}"
        )
    sizes = (len(data.oMi), len(data.oMf), data.M.shape[0])
    if sizes != (model.njoints, model.nframes, model.nv):
        raise InvalidParameter(
            f"data belongs to another model: it has {sizes[0]} joints, {sizes[1]} frames and "
            f"nv = {sizes[2]}, the model {model.njoints}, {model.nframes} and nv = {model.nv}; "
            "pass data=model.createData() (or None)"
        )
    return data


def task_inverse(
    inverse_inertia: np.ndarray,
    frame: str,
    *,
    damping: float | None = None,
    pseudo_inverse: bool = False,
    threshold: float = SINGULAR_THRESHOLD,
) -> np.ndarray:
    """Λ from ``Λ⁻¹ = J M⁻¹ Jᵀ`` (6×6 symmetric positive semi-definite).

    Its eigenvalues are the squared singular values σ² of ``J M^(-1/2)``; the configuration is
    singular when ``σ_min < threshold σ_max``.

    Args:
        inverse_inertia: ``J M⁻¹ Jᵀ``, shape (6, 6).
        frame: The frame's name (for the error).
        damping: δ [same units as σ]: ``Λ = (J M⁻¹ Jᵀ + δ² I)⁻¹``; None or 0: no damping.
        pseudo_inverse: The Moore–Penrose inverse, eigenvalues below ``threshold² σ_max²``
            taken as zero (True or False).
        threshold: The relative threshold on σ, in (0, 1].

    Raises:
        SingularConfiguration: No damping (None or 0), no pseudo-inverse and
            ``σ_min < threshold σ_max``; the error gives the ratio σ_min / σ_max.
        InvalidParameter: ``damping`` not a finite number >= 0 (text, NaN, negative),
            ``pseudo_inverse`` not a boolean (text such as ``"no"`` is refused),
            ``threshold`` outside (0, 1].
    """
    damping = real("damping", damping, unit="[m/rad or rad/rad]", low=0.0, none=True)
    pseudo_inverse = flag("pseudo_inverse", pseudo_inverse)
    threshold = real("threshold", threshold, unit="[-]", low=0.0, high=1.0, strict=True)
    sym = 0.5 * (inverse_inertia + inverse_inertia.T)
    if not np.all(np.isfinite(sym)):
        raise InvalidParameter(
            f"J M⁻¹ Jᵀ of frame '{frame}' is not finite: check q, v and the model's inertias"
        )
    values, vectors = np.linalg.eigh(sym)
    top = max(float(values[-1]), 0.0)
    if damping:  # δ > 0; δ = 0 is no damping (the singular check below)
        return (vectors / (values + damping**2)) @ vectors.T
    if pseudo_inverse:
        keep = values > threshold**2 * top
        inv = np.zeros_like(values)
        inv[keep] = 1.0 / values[keep]
        return (vectors * inv) @ vectors.T
    ratio = float(np.sqrt(max(values[0], 0.0) / top)) if top > 0 else 0.0
    if ratio < threshold:
        raise SingularConfiguration(
            None,
            ratio,
            threshold,
            frame,
            quantity="the ratio of the smallest to the largest singular value of J M^(-1/2)",
            remedy="pass damping=δ > 0 (damped inverse) or pseudo_inverse=True",
        )
    return np.linalg.inv(sym)


def task_space_dynamics(
    robot: Any,
    q: np.ndarray,
    v: np.ndarray,
    frame: str | int,
    reference: str = "world",
    *,
    damping: float | None = None,
    pseudo_inverse: bool = False,
    threshold: float = SINGULAR_THRESHOLD,
    data: pin.Data | None = None,
) -> TaskSpaceDynamics:
    """Λ, η, J and J̄ of a frame at (q, v): ``F = Λ V̇ + η + F_tip``, ``τ = Jᵀ F``.

    Lynch & Park (ch. 8, dynamics in the task space), generalized to redundant arms with
    Khatib's (1987) dynamically consistent inverse (see the module's docstring for the
    formulas and exactly what V, V̇ and F are in each ``reference``).

    Args:
        robot: A :class:`pinext.Robot`, a :class:`pinext.System` (its model carries the
            drives' reflected inertia as armature) or a ``pin.Model``.
        q: Configuration, shape (nq,).
        v: Velocity, shape (nv,).
        frame: Frame name (or index).
        reference: ``"world"`` (LOCAL_WORLD_ALIGNED, pinext's wrench convention),
            ``"local"`` (the end-effector frame) or ``"space"`` (Lynch & Park's space frame,
            Pinocchio's WORLD).
        damping: δ > 0 for the damped ``Λ = (J M⁻¹ Jᵀ + δ² I)⁻¹``; None or 0: no damping
            (a singular configuration raises, with its conditioning).
        pseudo_inverse: Λ as the pseudo-inverse of ``J M⁻¹ Jᵀ`` (True or False).
        threshold: Relative threshold in (0, 1] on the singular values of ``J M^(-1/2)``
            below which the configuration is singular.
        data: A ``pin.Data`` of the model to work in (default: a new one).

    Returns:
        :class:`TaskSpaceDynamics`.

    Raises:
        InvalidParameter: An unknown reference; q, v of the wrong shape or not finite; a
            quaternion in q not of unit norm; ``damping``, ``pseudo_inverse`` or
            ``threshold`` of the wrong type or out of range; a ``data`` of another model.
        NameNotFound: An unknown frame (the error lists the model's frames).
        SingularConfiguration: J M⁻¹ Jᵀ is (nearly) singular and neither ``damping`` nor
            ``pseudo_inverse`` is given.
    """
    if not isinstance(reference, str) or reference not in REFERENCES:
        raise InvalidParameter(
            f"unknown reference {reference!r}; valid: {', '.join(map(repr, REFERENCES))}"
        )
    model = _model(robot)
    q, v = state(model, q, v)
    real("damping", damping, unit="[m/rad or rad/rad]", low=0.0, none=True)
    flag("pseudo_inverse", pseudo_inverse)
    real("threshold", threshold, unit="[-]", low=0.0, high=1.0, strict=True)
    fid = resolve_frame(model, frame)
    data = model.createData() if data is None else model_data(model, data)
    return evaluate(model, data, q, v, fid, reference, damping, pseudo_inverse, threshold)


def evaluate(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    fid: int,
    reference: str,
    damping: float | None,
    pseudo_inverse: bool,
    threshold: float,
) -> TaskSpaceDynamics:
    """:func:`task_space_dynamics` on arguments already checked (a controller checks its
    options once and calls this at every sample)."""
    ref = REFERENCES[reference]
    pin.computeAllTerms(model, data, q, v)  # M (upper), h, joint Jacobians; data.a at q̈ = 0
    pin.updateFramePlacements(model, data)
    jac = np.array(pin.getFrameJacobian(model, data, fid, ref))
    if ref == pin.ReferenceFrame.LOCAL_WORLD_ALIGNED:
        drift = pin.getFrameClassicalAcceleration(model, data, fid, ref).vector
    else:
        drift = pin.getFrameAcceleration(model, data, fid, ref).vector
    velocity = pin.getFrameVelocity(model, data, fid, ref).vector
    mass = np.triu(data.M) + np.triu(data.M, 1).T
    h = np.array(data.nle)
    minv = pin.computeMinverse(model, data, q)
    minv = np.triu(minv) + np.triu(minv, 1).T
    minv_jt = minv @ jac.T
    inertia = task_inverse(
        jac @ minv_jt,
        model.frames[fid].name,
        damping=damping,
        pseudo_inverse=pseudo_inverse,
        threshold=threshold,
    )
    inverse = minv_jt @ inertia
    bias = inverse.T @ h - inertia @ drift
    return TaskSpaceDynamics(
        inertia,
        bias,
        jac,
        inverse,
        np.array(drift),
        np.array(velocity),
        mass,
        h,
        model.frames[fid].name,
        reference,
    )
