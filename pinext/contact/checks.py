"""Contact's rows of ``pinext check``: impact and constrained motion against Pinocchio.

:mod:`pinext.check` (the application layer) lists them in its :data:`~pinext.check.ROWS`; this
module imports nothing of it. :func:`relative_error` and :func:`contact_frame` are shared with
the rows of :mod:`pinext.check`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from .constrained import constrained_dynamics
from .coordinates import point_contact
from .impact import plastic_impact


def relative_error(err: np.ndarray, ref: np.ndarray) -> float:
    """max |err| / (1 + max |ref|)."""
    return float(np.max(np.abs(err), initial=0.0) / (1.0 + np.max(np.abs(ref), initial=0.0)))


def contact_frame(model: pin.Model) -> str | None:
    """Name of a body frame on the last joint (for the contact rows)."""
    last = model.njoints - 1
    for f in reversed(model.frames):
        if f.parentJoint == last:
            return f.name
    return None


def _contact_states(model: pin.Model, states: Sequence):
    """(state, frame id, 3D Jacobian) for the states where the last body's frame has a
    full-rank point-contact Jacobian; nothing for models where no such frame exists."""
    frame = contact_frame(model)
    if frame is None or model.nv < 3:
        return
    fid = model.getFrameId(frame)
    data = model.createData()
    for st in states:
        jac = pin.computeFrameJacobian(model, data, st.q, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
        if np.linalg.matrix_rank(jac, tol=1e-9) == 3:
            yield st, fid, jac


def impact_error(model: pin.Model, states: Sequence) -> float | None:
    """``plastic_impact`` against ``pin.impulseDynamics`` for a 3D contact (20.90)-(20.91)."""
    errors = []
    for st, _, jac in _contact_states(model, states):
        v_ref = pin.impulseDynamics(model, model.createData(), st.q, st.v, jac, 0.0, 0.0)
        result = plastic_impact(model, model.createData(), st.q, st.v, jac)
        errors.append(relative_error(result.v_plus - v_ref, v_ref))
    return max(errors) if errors else None


def constrained_error(model: pin.Model, states: Sequence) -> float | None:
    """``constrained_dynamics`` against ``pin.constraintDynamics`` for a 3D point contact."""
    errors = []
    for st, fid, _ in _contact_states(model, states):
        data = model.createData()
        pin.framesForwardKinematics(model, data, st.q)
        anchor = data.oMf[fid].copy()
        frame = model.frames[fid]
        cm = pin.RigidConstraintModel(
            pin.ContactType.CONTACT_3D,
            model,
            frame.parentJoint,
            frame.placement,
            0,
            anchor,
            pin.LOCAL_WORLD_ALIGNED,
        )
        models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        models.append(cm)
        datas.append(cm.createData())
        pin.initConstraintDynamics(model, data, models, datas)
        settings = pin.ProximalSettings(1e-14, 0.0, 1)  # mu = 0: the exact KKT solution
        a_ref = pin.constraintDynamics(model, data, st.q, st.v, st.tau, models, datas, settings)
        contact = point_contact(frame.name, pin.SE3(np.eye(3), anchor.translation), dim=3)
        result = constrained_dynamics(model, model.createData(), st.q, st.v, st.tau, contact)
        errors.append(relative_error(result.acceleration - a_ref, a_ref))
    return max(errors) if errors else None
