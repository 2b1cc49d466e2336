"""Cross-check of pinext's formulations against Pinocchio's reference algorithms.

This is what ``pinext check URDF`` runs on the user's own robot: at seeded random states it
compares

========================================  ==========================================
pinext                                    Pinocchio reference
========================================  ==========================================
∂S/∂a + g (Appell inverse dynamics)       ``rnea``
∂²S/∂a² (Gibbs function Hessian)          ``crba``
∂S/∂a at a = 0 (bias b)                   ``nonLinearEffects − computeGeneralizedGravity``
Gauss's principle, unconstrained          ``aba``
Gauss's principle, 3D point contact       ``constraintDynamics``
momentum scheme ṗ, Celentano (2008)       (C + Cᵀ) v + M ``aba`` (C: ``computeCoriolisMatrix``)
∂T/∂q (+ Hamel term)                      Cᵀ v
Christoffel Γ(v, v) (− Hamel term)        C v
========================================  ==========================================

and reports the maximum error of each, relative to 1 + the largest reference value, then the
rows of :data:`ROWS` (the contact package's impact and constrained motion against
``impulseDynamics`` and ``constraintDynamics``), then the rows user code adds through
:func:`register_check`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from pinext.contact.checks import constrained_error, contact_frame, impact_error, relative_error
from pinext.dynamics import gauss as _gauss
from pinext.dynamics import gibbs_appell as _ga
from pinext.dynamics import momentum as _mom

__all__ = [
    "ROWS",
    "CheckReport",
    "CheckRow",
    "check_model",
    "check_urdf",
    "random_state",
    "register_check",
]

#: Functions under test; a test (or a curious user) replaces one through ``functions=``.
DEFAULT_FUNCTIONS: dict[str, Callable] = {
    "appell_inverse_dynamics": _ga.appell_inverse_dynamics,
    "acceleration_energy_terms": _ga.acceleration_energy_terms,
    "gauss_forward_dynamics": _gauss.gauss_forward_dynamics,
    "momentum_rhs": _mom.momentum_rhs,
    "kinetic_energy_gradient": _mom.kinetic_energy_gradient,
    "christoffel_symbols": _ga.christoffel_symbols,
}

#: The rows of other packages, in report order: name -> (``func(model, states) -> error |
#: None``, tolerance, Pinocchio reference). A new row is one line here.
ROWS: dict[str, tuple[Callable, float, str]] = {
    "plastic impact, 3D contact": (impact_error, 1e-9, "impulseDynamics"),
    "constrained motion, 3D contact": (constrained_error, 1e-7, "constraintDynamics"),
}

#: Rows added by user code (:func:`register_check`), after :data:`ROWS`.
_EXTRA: dict[str, tuple[Callable, float, str]] = {}


def register_check(
    name: str, func: Callable, tolerance: float, reference: str = "registered"
) -> None:
    """Add a row to every :func:`check_model` report (user code; pinext's own rows are the
    lines of :data:`ROWS`).

    Args:
        name: Row name.
        func: ``func(model, states) -> float | None``, the maximum (relative) error over
            ``states``, a list of :class:`State`; None when the check does not apply to the
            model (the row is then listed as skipped).
        tolerance: The row fails above this value.
        reference: The Pinocchio algorithm compared with.
    """
    _EXTRA[name] = (func, tolerance, reference)


class CheckRow(NamedTuple):
    """One comparison."""

    name: str
    error: float
    """Maximum error over the states, relative to 1 + max |reference|."""
    tolerance: float
    reference: str
    """The Pinocchio algorithm compared with."""

    @property
    def passed(self) -> bool:
        """error ≤ tolerance (NaN fails)."""
        return bool(self.error <= self.tolerance)


@dataclass
class CheckReport:
    """Result of :func:`check_model`."""

    model_name: str
    samples: int
    seed: int
    rows: list[CheckRow] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every row is within its tolerance."""
        return all(r.passed for r in self.rows)

    @property
    def failed(self) -> list[CheckRow]:
        """The rows above their tolerance."""
        return [r for r in self.rows if not r.passed]

    def table(self) -> str:
        """Plain-text table of the rows, then a verdict line naming the failed rows."""
        head = ("check", "reference", "max error", "tolerance", "status")
        body = [
            (
                r.name,
                r.reference,
                f"{r.error:.2e}",
                f"{r.tolerance:.0e}",
                "ok" if r.passed else "FAIL",
            )
            for r in self.rows
        ]
        widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
        lines = [f"pinext check: {self.model_name} ({self.samples} states, seed {self.seed})"]
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in body
        ]
        for s in self.skipped:
            lines.append(f"skipped: {s}")
        if self.passed:
            lines.append("all checks passed")
        else:
            lines.append("FAILED: " + ", ".join(r.name for r in self.failed))
        return "\n".join(lines)


class State(NamedTuple):
    """A random state."""

    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    tau: np.ndarray


def random_state(model: pin.Model, rng: np.random.Generator) -> State:
    """Random configuration within the joint limits (±1 m / ±π where a limit is infinite),
    and standard-normal velocity, acceleration and torque."""
    lo = np.array(model.lowerPositionLimit, dtype=float)
    hi = np.array(model.upperPositionLimit, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        bad = ~(np.isfinite(lo) & np.isfinite(hi)) | (hi - lo > 2 * np.pi) | (hi <= lo)
    lo[bad], hi[bad] = -1.0, 1.0
    u = rng.uniform(size=model.nq)
    q = pin.normalize(model, lo + u * (hi - lo))
    nv = model.nv
    return State(q, rng.standard_normal(nv), rng.standard_normal(nv), rng.standard_normal(nv))


#: Most random states of one check: each costs ~30 ms on a 3-DOF arm (more on larger robots),
#: so 10 000 take ~5 min, and the largest error over random states settles within a few
#: hundred; more only waits (100 000 000 states would take about a month).
MAX_SAMPLES = 10_000


def check_model(
    model: pin.Model,
    *,
    seed: int = 0,
    samples: int = 5,
    name: str | None = None,
    functions: Mapping[str, Callable] | None = None,
) -> CheckReport:
    """Compare pinext's formulations with Pinocchio's reference algorithms on ``model``.

    Args:
        model: Any Pinocchio model (free-flyer, spherical, planar, ... joints allowed).
        seed: Seed of the random states.
        samples: Number of random states, 1 … :data:`MAX_SAMPLES`.
        name: Model name for the report (default ``model.name``).
        functions: Replacements for the functions under test, keyed as in
            :data:`DEFAULT_FUNCTIONS` (a test uses this to break one formulation on purpose).

    Returns:
        :class:`CheckReport`; ``report.passed`` is False when a row exceeds its tolerance.

    Raises:
        InvalidParameter: ``samples`` is not a whole number from 1 to :data:`MAX_SAMPLES`.
    """
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        from pinext.exceptions import InvalidParameter

        raise InvalidParameter(f"samples must be a whole number >= 1 of states, got {samples!r}")
    if samples > MAX_SAMPLES:
        from pinext.exceptions import InvalidParameter

        raise InvalidParameter(
            f"samples = {samples} states is too many: at most {MAX_SAMPLES} (each state costs "
            "~30 ms on a 3-DOF arm, more on larger robots, and the largest error over random "
            "states settles within a few hundred); pass --samples between 1 and "
            f"{MAX_SAMPLES}"
        )
    fn = dict(DEFAULT_FUNCTIONS)
    unknown = set(functions or {}) - set(fn)
    if unknown:
        from pinext.exceptions import NameNotFound

        raise NameNotFound("checked function", sorted(unknown)[0], sorted(fn))
    fn.update(functions or {})
    _ga.clear_cache()
    rng = np.random.default_rng(seed)
    states = [random_state(model, rng) for _ in range(samples)]
    data = model.createData()
    ref = model.createData()
    errs: dict[str, float] = {}

    def record(key: str, value: float) -> None:
        errs[key] = max(errs.get(key, 0.0), value if np.isfinite(value) else np.inf)

    frame = contact_frame(model)
    skipped: list[str] = []
    contact_ok = frame is not None and model.nv >= 3
    for st in states:
        q, v, a, tau = st
        tau_ref = pin.rnea(model, ref, q, v, a)
        record(
            "id",
            relative_error(fn["appell_inverse_dynamics"](model, data, q, v, a) - tau_ref, tau_ref),
        )
        terms = fn["acceleration_energy_terms"](model, data, q, v)
        m_ref = pin.crba(model, ref, q)
        m_ref = np.triu(m_ref) + np.triu(m_ref, 1).T
        record("crba", relative_error(terms.mass_matrix - m_ref, m_ref))
        nle = pin.nonLinearEffects(model, ref, q, v)
        b_ref = nle - pin.computeGeneralizedGravity(model, ref, q)
        record("bias", relative_error(terms.bias - b_ref, b_ref))
        a_ref = pin.aba(model, ref, q, v, tau)
        res = fn["gauss_forward_dynamics"](model, data, q, v, tau)
        record("aba", relative_error(res.a - a_ref, a_ref))
        c_ref = pin.computeCoriolisMatrix(model, ref, q, v)
        p = m_ref @ v
        rhs = fn["momentum_rhs"](model, data, q, p, tau)
        pdot_ref = (c_ref + c_ref.T) @ v + m_ref @ a_ref
        record(
            "momentum",
            max(relative_error(rhs.p_dot - pdot_ref, pdot_ref), relative_error(rhs.v - v, v)),
        )
        hamel = _mom.hamel_term(model, q, v, p)
        ctv = c_ref.T @ v
        grad = fn["kinetic_energy_gradient"](model, data, q, v)
        record("ctv", relative_error(grad + hamel - ctv, ctv))
        gam = fn["christoffel_symbols"](model, data, q)
        cv = c_ref @ v
        record("christoffel", relative_error(np.einsum("ijk,j,k->i", gam, v, v) - hamel - cv, cv))
        if contact_ok and frame is not None:
            contact = _gauss.PointContact(model, frame, "3D")
            a_mat, _ = contact.acceleration_equation(model, data, q, v)
            if np.linalg.matrix_rank(a_mat, tol=1e-9) < 3:
                continue
            rcm = pin.StdVec_RigidConstraintModel()
            rcm.append(contact.rigid_constraint_model(model))
            rcd = pin.StdVec_RigidConstraintData()
            rcd.append(rcm[0].createData())
            cdata = model.createData()
            pin.initConstraintDynamics(model, cdata, rcm, rcd)
            prox = pin.ProximalSettings(1e-14, 1e-12, 1)
            ddq = pin.constraintDynamics(model, cdata, q, v, tau, rcm, rcd, prox)
            res = fn["gauss_forward_dynamics"](model, data, q, v, tau, constraints=[contact])
            record("contact", relative_error(res.a - ddq, ddq))
    rows = [
        CheckRow("dS/da + g (Appell ID)", errs["id"], 1e-9, "rnea"),
        CheckRow("d2S/da2", errs["crba"], 1e-9, "crba"),
        CheckRow("dS/da at a=0 (bias)", errs["bias"], 1e-9, "nonLinearEffects - g"),
        CheckRow("Gauss, unconstrained", errs["aba"], 1e-8, "aba"),
    ]
    if "contact" in errs:
        rows.append(
            CheckRow(f"Gauss, 3D contact at {frame}", errs["contact"], 1e-7, "constraintDynamics")
        )
    else:
        skipped.append(
            "Gauss with a 3D contact (no frame on the last joint, or nv < 3, or a "
            "rank-deficient contact Jacobian)"
        )
    rows += [
        CheckRow("momentum scheme p_dot", errs["momentum"], 1e-9, "(C+C^T) v + M aba"),
        CheckRow("dT/dq (+ Hamel term)", errs["ctv"], 1e-9, "C^T v (computeCoriolisMatrix)"),
        CheckRow("Christoffel G(v,v) (- Hamel)", errs["christoffel"], 1e-9, "C v"),
    ]
    for key, (func, tol, reference) in {**ROWS, **_EXTRA}.items():
        value = func(model, states)
        if value is None:
            skipped.append(f"{key} (does not apply to this model)")
        else:
            rows.append(CheckRow(key, float(value), tol, reference))
    return CheckReport(name or model.name, samples, seed, rows, skipped)


def check_urdf(
    path: str, *, extensions: str | None = None, seed: int = 0, samples: int = 5
) -> CheckReport:
    """Load a URDF (through :func:`pinext.load_urdf` when available) and run :func:`check_model`."""
    try:
        from pinext.robot import load_urdf
    except ImportError:  # pragma: no cover - the core is always there in a full install
        model = pin.buildModelFromUrdf(str(path))
    else:
        model = load_urdf(str(path), extensions=extensions).model
    return check_model(model, seed=seed, samples=samples, name=str(path))
