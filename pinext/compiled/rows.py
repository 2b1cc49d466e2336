"""The constraint rows of a phase as the compiled right-hand side solves them.

Each constrained component of the phase gives its rows' compiled form
(:meth:`pinext.simulation.component.Component.compiled_rows`): :class:`JointRows` (constant
Jacobians: joints on their stops, mimic couplings, stuck joints) or :class:`FrameRows`
(between two frames: loop closures). :func:`pinext.compiled.phase._locked_rows` solves the
joint rows first, then the frame rows; :func:`row_offsets` says where each component's rows
sit among them, :func:`fold` prepares the constant rows that depend on one another, and
:func:`hybrid_fields` says when the hybrid ABA holds the rows instead
(:func:`pinext.compiled.phase._held_rows`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..simulation.caches import cache as engine_cache
from ..simulation.component import Event, FrameRows, GearTorque, JointRows, Phase
from .notice import announce

if TYPE_CHECKING:
    from ..simulation.system import System
    from .model import PackedModel


def phase_rows(
    system: System, phase: Phase
) -> tuple[frozenset[str], JointRows | None, FrameRows | None] | None:
    """(the names of the constrained components, their joint rows stacked, their frame rows
    stacked): the compiled rows of every constrained component of the phase, each kind in the
    acceleration step's order (:attr:`AccelerationStep.constrained`, the System's component
    order). None when one of them has no compiled form, or the phase has a replaced
    mechanism (added inertia goes into the packed model's armature)."""
    step = system.acceleration_step(phase)
    if step.mechanism is not None:
        return None
    joints: list[JointRows] = []
    frames: list[FrameRows] = []
    for comp, mode in step.constrained:
        rows = comp.compiled_rows(mode)
        if rows is None:
            return None
        if isinstance(rows, FrameRows):
            frames.append(rows)
        elif rows.m:
            joints.append(rows)
    return (
        frozenset(comp.name for comp, _ in step.constrained),
        JointRows.stack(joints) if joints else None,
        FrameRows.stack(frames) if frames else None,
    )


def row_offsets(system: System, phase: Phase) -> dict[str, int]:
    """The index of each constrained component's first row among the phase's compiled rows:
    after the joint rows of the components before it, or, for frame rows, after all the joint
    rows and the frame rows before it (:class:`Reaction` rows are the component's own).
    Kept per structure of the phase's modes, as its kernel (the rows follow the structure)."""
    cache = engine_cache(system, "row_offsets")
    key = phase.structure
    if key not in cache:
        cache[key] = _offsets(system, phase)
    return cache[key]


def _offsets(system: System, phase: Phase) -> dict[str, int]:
    blocks = [
        (comp.name, comp.compiled_rows(mode))
        for comp, mode in system.acceleration_step(phase).constrained
    ]
    n_joint = sum(r.m for _, r in blocks if isinstance(r, JointRows))
    offsets, start = {}, [0, n_joint]
    for name, rows in blocks:
        kind = int(isinstance(rows, FrameRows))
        offsets[name] = start[kind]
        start[kind] += 0 if rows is None else rows.m
    return offsets


def fold(jacobian: np.ndarray, n_frame: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(basis, fold, spread) of the constant rows J (m × nv): the independent rows
    ``J₁ = J[basis]`` (taken in order, each one that raises the rank), ``T`` with
    ``J = T J₁``, ``fold = (TᵀT)⁻¹ Tᵀ`` and ``spread = T (TᵀT)⁻¹`` (identities when the rows
    are independent); see :func:`pinext.compiled.phase._locked_rows`. The ``n_frame`` frame
    rows after them (their Jacobian varies) are all kept."""
    if n_frame:
        joint, folded, spread = fold(jacobian)
        m, r = jacobian.shape[0], joint.size
        return (
            np.r_[joint, m + np.arange(n_frame)].astype(np.int64),
            np.block([[folded, np.zeros((r, n_frame))], [np.zeros((n_frame, m)), np.eye(n_frame)]]),
            np.block([[spread, np.zeros((m, n_frame))], [np.zeros((n_frame, r)), np.eye(n_frame)]]),
        )
    m = jacobian.shape[0]
    scale = float(np.abs(jacobian).max(initial=0.0)) or 1.0
    if np.linalg.matrix_rank(jacobian / scale, tol=1e-10) == m:  # independent: one test
        return np.arange(m, dtype=np.int64), np.eye(m), np.eye(m)
    basis: list[int] = []
    for i in range(m):
        trial = jacobian[basis + [i]] / scale
        if np.linalg.matrix_rank(trial, tol=1e-10) > len(basis):
            basis.append(i)
    if len(basis) == m:
        return np.arange(m, dtype=np.int64), np.eye(m), np.eye(m)
    j1 = jacobian[basis]
    t = jacobian @ j1.T @ np.linalg.inv(j1 @ j1.T)
    gram = np.linalg.inv(t.T @ t)
    return np.array(basis, dtype=np.int64), gram @ t.T, t @ gram


def hybrid_fields(packed: PackedModel, held: JointRows, n_frame: int, momentum: bool) -> dict:
    """The :class:`pinext.compiled.phase.PhaseKernel` fields of the hybrid ABA
    (:func:`pinext.compiled.phase._held_rows`): ``hybrid`` when it holds the joint rows (each
    one entry, on a one-axis joint, a unit column of S, of its own; no frame rows; not the
    momentum form), ``locked`` (then 1.0 at each row's dof) and its workspace ``held``."""
    nv = packed.dof_axis.size
    one_axis = np.zeros(nv, dtype=bool)
    for j in range(1, packed.parent.size):
        if packed.nv[j] == 1:
            one_axis[packed.idx_v[j]] = packed.dof_axis[packed.idx_v[j]] >= 0
    hybrid = (
        held.m > 0
        and not n_frame
        and not momentum
        and bool(np.all(np.diff(held.ptr) == 1) and np.all(held.coef != 0.0))
        and np.unique(held.iv).size == held.m
        and bool(np.all(one_axis[held.iv]))
    )
    locked = np.zeros(nv)
    locked[held.iv] = float(hybrid)
    return {"hybrid": hybrid, "locked": locked, "held": np.zeros(nv)}


def inertia_fields(
    system: System, phase: Phase, packed: PackedModel, events: list[Event], momentum: bool
) -> tuple[PackedModel, dict] | None:
    """The packed model with the phase's added inertia in its armature (a moving lossy gear's
    ``e J N²`` in place of ``J N²``: the acceleration step's copy of the model, as the kernels'
    ABA reads it), and the :class:`~pinext.compiled.phase.PhaseKernel` fields of that
    inertia's work in the dissipated power (:meth:`Component.inertia_power`), of the states
    driven by an acceleration (:meth:`Component.acceleration_coupling`) and of the
    accelerations the phase's GEAR events read; None in the momentum form (said once)."""
    added = system.acceleration_step(phase).added
    fields = {}
    if added is not None:
        packed = packed._replace(armature=packed.armature + added)
        fields["added"] = added
    powers = [
        c
        for comp in system.components
        if (c := comp.inertia_power(phase.get(comp.name))) is not None
    ]
    if powers:
        fields["inertia_power"] = np.sum(powers, axis=0)
    couplings = [
        coupling
        for comp in system.components
        if (coupling := comp.acceleration_coupling(phase.get(comp.name))) is not None
    ]
    if couplings and not system.euclidean:
        announce("a state driven by an acceleration on a non-Euclidean model is not compiled")
        return None
    if couplings:  # (a Euclidean state: the public index is the internal one)
        row, dof, coef = (np.concatenate(parts) for parts in zip(*couplings, strict=True))
        fields.update(
            couple_row=row.astype(np.int64), couple_dof=dof.astype(np.int64), couple_coef=coef
        )
    if any(isinstance(e.compiled, GearTorque) for e in events):
        fields["acc"] = np.zeros(system.model.nv)
    if momentum and (added is not None or fields):
        announce("added inertia or its work in the momentum form is not compiled")
        return None
    return packed, fields
