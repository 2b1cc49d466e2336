"""The linear model record: state space, poles, damped modes, frequency responses.

.. math::

    \\dot{\\delta x} = A\\,\\delta x + B\\,\\delta u, \\qquad
    \\delta y = C\\,\\delta x + D\\,\\delta u

(continuous time), or ``δx[k+1] = A δx[k] + B δu[k]`` once discretized with a zero-order
hold (:meth:`LinearModel.discretize`, ``dt`` set).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg

from ..exceptions import InvalidParameter, MissingDependency, NameNotFound

__all__ = ["LinearModel", "Mode", "frequency_response"]


class Mode(NamedTuple):
    """One oscillating mode of a linear model: a pair of complex conjugate poles."""

    frequency: float
    """Undamped natural frequency |λ|/2π [Hz]."""
    damping_ratio: float
    """−Re λ / |λ| [-]: 0 undamped, negative for a growing oscillation."""
    damped_frequency: float
    """Im λ / 2π [Hz]: the frequency of the free oscillation."""
    shape: np.ndarray
    """Shape (n_states,), complex. The eigenvector over :attr:`LinearModel.state_names`,
    scaled so that its largest configuration entry (``q``/``dq`` states and the components'
    angles) is 1."""
    eigenvalue: complex
    """λ [1/s], Im λ > 0."""


@dataclass(frozen=True, repr=False)
class LinearModel:
    """A System linearized about ``(x0, u0)`` (:func:`pinext.linearize`).

    The states, inputs and outputs are deviations from the linearization point; the state is
    the tangent-space deviation described in :mod:`pinext.linear_models.names`.
    """

    A: np.ndarray
    """Shape (n, n). State matrix [1/s] (continuous) or transition matrix (discrete)."""
    B: np.ndarray
    """Shape (n, m). Input matrix."""
    C: np.ndarray
    """Shape (p, n). Output matrix."""
    D: np.ndarray
    """Shape (p, m). Feedthrough matrix."""
    state_names: tuple[str, ...]
    """n names (``q:<joint>``, ``dq:<joint>[<axis>]``, ``v:<joint>``,
    ``drives.motor_angle[<joint>]``...)."""
    input_names: tuple[str, ...]
    """m names (``tau:<joint>`` or ``drives.<joint>.voltage``...)."""
    output_names: tuple[str, ...]
    """p names."""
    state_units: tuple[str, ...]
    """SI unit of each state."""
    input_units: tuple[str, ...]
    """SI unit of each input."""
    output_units: tuple[str, ...]
    """SI unit of each output."""
    x0: np.ndarray
    """Shape (nx,). The System's public state at the linearization point."""
    u0: np.ndarray
    """Shape (m,). The inputs at the linearization point."""
    t0: float = 0.0
    """The time of the linearization point [s]."""
    dt: float | None = None
    """Sampling period [s] of a discretized model; None in continuous time."""
    method: str = "analytic"
    """How A and B were obtained: ``"analytic"`` (Pinocchio's ABA derivatives and the
    components' terms) or ``"central difference"`` of the System's right-hand side."""
    notes: tuple[str, ...] = ()
    """What was differenced numerically and why."""

    def __repr__(self) -> str:
        n, m, p = self.A.shape[0], self.B.shape[1], self.C.shape[0]
        time = "continuous time" if self.dt is None else f"discrete, dt = {self.dt:g} s"
        return (
            f"LinearModel({n} states, {m} inputs, {p} outputs; {time}; {self.method}; "
            f"inputs {', '.join(self.input_names)})"
        )

    # -- conversions -----------------------------------------------------------------------
    def discretize(self, dt: float) -> LinearModel:
        """The zero-order-hold discretization with sampling period ``dt`` [s] (scipy's
        ``cont2discrete``: ``A_d = exp(A dt)``, ``B_d = ∫_0^dt exp(A s) ds B``)."""
        if self.dt is not None:
            raise InvalidParameter(f"the model is already discrete (dt = {self.dt} s)")
        dt = float(dt)
        if not (np.isfinite(dt) and dt > 0.0):
            raise InvalidParameter(f"dt must be a positive sampling period [s], got {dt}")
        import scipy.signal  # on first use: `import pinext` does not load scipy.signal

        a, b, c, d, _ = scipy.signal.cont2discrete((self.A, self.B, self.C, self.D), dt, "zoh")
        return dataclasses.replace(self, A=a, B=b, C=c, D=d, dt=dt)

    def to_scipy(self) -> Any:
        """The model as ``scipy.signal.StateSpace`` (with ``dt`` when discrete)."""
        import scipy.signal

        matrices = (self.A, self.B, self.C, self.D)
        if self.dt is None:
            return scipy.signal.StateSpace(*matrices)
        return scipy.signal.StateSpace(*matrices, dt=self.dt)

    def to_control(self) -> Any:
        """The model as python-control's ``StateSpace`` with the names of the states, inputs
        and outputs.

        Raises:
            MissingDependency: python-control is not installed.
        """
        try:
            import control
        except ImportError:
            raise MissingDependency("LinearModel.to_control", ["control"], "control") from None
        return control.ss(
            self.A,
            self.B,
            self.C,
            self.D,
            0 if self.dt is None else self.dt,
            states=list(self.state_names),
            inputs=list(self.input_names),
            outputs=list(self.output_names),
        )

    # -- analysis --------------------------------------------------------------------------
    def poles(self) -> np.ndarray:
        """The eigenvalues of A [1/s] (continuous; for a discrete model, of the transition
        matrix), sorted by real part then imaginary part."""
        values = np.linalg.eigvals(self.A)
        return values[np.lexsort((values.imag, values.real))]

    def modes(self) -> list[Mode]:
        """The oscillating modes (pairs of complex poles), by ascending frequency.

        Continuous time only. A pole counts as complex when ``Im λ > 1e-6 |λ|_max``: rounding
        splits a double zero pole (a free rigid-body motion) into ``±√ε |λ|_max``, not a
        mode.
        """
        if self.dt is not None:
            raise InvalidParameter("modes() needs the continuous-time model (dt None)")
        values, vectors = np.linalg.eig(self.A)
        scale = max(float(np.abs(values).max()) if values.size else 0.0, 1e-300)
        positions = [
            k
            for k, name in enumerate(self.state_names)
            if name.startswith(("q:", "dq:")) or name.split("[")[0].endswith("angle")
        ]
        modes = []
        for k in np.flatnonzero(values.imag > 1e-6 * scale):
            lam = complex(values[k])
            shape = vectors[:, k]
            part = shape[positions] if positions else shape
            pivot = part[np.argmax(np.abs(part))]
            shape = shape / pivot if abs(pivot) > 0 else shape
            modes.append(
                Mode(
                    abs(lam) / (2 * np.pi),
                    -lam.real / abs(lam),
                    lam.imag / (2 * np.pi),
                    shape,
                    lam,
                )
            )
        return sorted(modes, key=lambda m: m.frequency)

    def zeros(self, input: str | int, output: str | int) -> np.ndarray:
        """The finite transmission zeros [1/s] of one input-output channel (anti-resonances
        at ``±i ω``): the finite generalized eigenvalues of the Rosenbrock pencil
        ``[[A, b], [c, d]] - s [[I, 0], [0, 0]]``."""
        i, o = self._index(input, "input"), self._index(output, "output")
        n = self.A.shape[0]
        pencil = np.block([[self.A, self.B[:, [i]]], [self.C[[o]], self.D[[o]][:, [i]]]])
        mass = np.zeros((n + 1, n + 1))
        mass[:n, :n] = np.eye(n)
        alpha, beta = scipy.linalg.eig(pencil, mass, right=False, homogeneous_eigvals=True)
        finite = np.abs(beta) > 1e-12 * np.abs(alpha).max()
        values = alpha[finite] / beta[finite]
        return values[np.lexsort((values.imag, values.real))]

    def _index(self, key: str | int, kind: str) -> int:
        names = self.input_names if kind == "input" else self.output_names
        if isinstance(key, (int, np.integer)):
            if not 0 <= int(key) < len(names):
                raise InvalidParameter(
                    f"{kind} index {key} out of range: the model has {len(names)} {kind}s"
                )
            return int(key)
        if key not in names:
            raise NameNotFound(kind, key, names)
        return names.index(key)


def frequency_response(
    model: LinearModel, input: str | int, output: str | int, f: Any
) -> np.ndarray:
    """The frequency response of one channel of a continuous linear model,

    .. math::

        G(i \\omega) = c\\,(i\\omega I - A)^{-1} b + d, \\qquad \\omega = 2 \\pi f.

    Args:
        model: A continuous-time :class:`LinearModel`.
        input: Input name (or index).
        output: Output name (or index).
        f: Frequencies [Hz], any shape.

    Returns:
        Complex array of the shape of ``f`` [output unit / input unit]; infinite at a pole
        on the imaginary axis (f = 0 of an integrator).

    Raises:
        NameNotFound: Unknown input or output (the valid ones are listed).
        InvalidParameter: A discrete model, or frequencies that are not finite.
    """
    if model.dt is not None:
        raise InvalidParameter("frequency_response needs the continuous-time model (dt None)")
    i, o = model._index(input, "input"), model._index(output, "output")
    freqs = np.asarray(f, dtype=float)
    if not np.all(np.isfinite(freqs)):
        raise InvalidParameter("f must hold finite frequencies [Hz]")
    n = model.A.shape[0]
    b, c, d = model.B[:, i], model.C[o], model.D[o, i]
    out = np.empty(freqs.size, dtype=complex)
    identity = np.eye(n)
    for k, fk in enumerate(freqs.reshape(-1)):
        try:
            out[k] = c @ np.linalg.solve(2j * np.pi * fk * identity - model.A, b) + d
        except np.linalg.LinAlgError:  # a pole on the axis (f = 0 of an integrator)
            out[k] = complex(np.inf, 0.0)
    return out.reshape(freqs.shape)
