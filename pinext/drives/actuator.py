"""General linear actuator (Vukobratović & Potkonjak, §20.3.2, eq. (20.74))."""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import InvalidParameter
from .base import Actuator


class LinearActuator(Actuator):
    """Any actuator with a linear model (20.74)

    .. math::

        \\dot x_j = C_j x_j + f_j M_j + d_j u_j, \\qquad \\ddot\\theta_j = T_j \\dot x_j,

    of state :math:`x_j` (dimension :math:`n_j`), output torque :math:`M_j` and scalar control
    :math:`u_j`, saturated at :math:`\\pm u_{max}`.

    The actuator's shaft angle :math:`\\theta` and velocity :math:`\\dot\\theta` must be two of the
    states (the seed's :math:`k_j = 2`): ``T`` is the unit row selecting the velocity state ``k``,
    and one row ``p`` of the model must read :math:`\\dot x_p = x_k` (the position). The
    velocity row defines the actuator inertia :math:`J_a = -1/f_k` (so ``f[k] < 0``) and its
    active torque :math:`J_a (C_k x + d_k u)`: the shaft torque is
    :math:`M = J_a (C_k x + d_k u) - J_a \\ddot\\theta`. This is (20.78)–(20.82) solved for one
    joint: the inertia joins the mechanism (Pinocchio's armature or the motor-side inertia of an
    elastic transmission), the rest acts as a torque.

    The remaining states :math:`x_o` are integrated through
    :math:`z = x_o - (f_o/f_k)\\, x_k`, whose derivative
    :math:`\\dot z = (C_o - (f_o/f_k) C_k) x + (d_o - (f_o/f_k) d_k) u` does not involve the
    acceleration; ``z`` is what the simulation state stores (``z = x_o`` whenever ``f_o = 0``,
    as for a DC motor's current).

    The actuator is a black box for the energy audit: its input power is counted as the power of
    its active torque, :math:`J_a (C_k x + d_k u) \\dot\\theta`.

    Args:
        C: Shape (n, n). System matrix.
        f: Shape (n,). Output-torque column.
        d: Shape (n,). Control column.
        T: Shape (n,) or (1, n). Unit row selecting the velocity state.
        input_limit: Saturation u_max of the control (> 0), or None.

    Raises:
        InvalidParameter: Shapes do not match, ``T`` is not a unit row, no position row exists,
            or ``f[k] >= 0``.
    """

    def __init__(self, C, f, d, T, *, input_limit: float | None = None) -> None:
        f = np.asarray(f, dtype=float).reshape(-1)
        n = f.size
        C = np.asarray(C, dtype=float)
        if C.size == n * n:
            C = C.reshape(n, n)
        d = np.asarray(d, dtype=float).reshape(-1)
        T = np.asarray(T, dtype=float).reshape(-1)
        if C.shape != (n, n) or d.shape != (n,) or T.shape != (n,) or n < 2:
            raise InvalidParameter(
                f"LinearActuator needs C (n, n), f (n,), d (n,), T (n,) with n >= 2; got "
                f"C {C.shape}, f {f.shape}, d {d.shape}, T {T.shape}"
            )
        if not np.all(np.isfinite(C)) or not np.all(np.isfinite(f)) or not np.all(np.isfinite(d)):
            raise InvalidParameter("LinearActuator matrices must be finite")
        unit = np.flatnonzero(T)
        if unit.size != 1 or T[unit[0]] != 1.0:
            raise InvalidParameter(f"T must be a unit row selecting the velocity state, got {T}")
        k = int(unit[0])
        rows = [
            p
            for p in range(n)
            if p != k and f[p] == 0 and d[p] == 0 and np.array_equal(C[p], np.eye(n)[k])
        ]
        if not rows:
            raise InvalidParameter(
                f"no position state: one row p of (20.74) must read x_p' = x_{k} (the velocity)"
            )
        if not f[k] < 0:
            raise InvalidParameter(
                f"f[{k}] = {f[k]} must be negative: it is -1/J with J the actuator inertia"
            )
        if input_limit is not None and not float(input_limit) > 0:
            raise InvalidParameter(f"input_limit must be positive, got {input_limit}")
        self.C, self.f, self.d, self.T = C, f, d, T
        self.input_limit = None if input_limit is None else float(input_limit)
        self.velocity_index = k
        self.position_index = int(rows[0])
        self.other = np.array([i for i in range(n) if i not in (k, rows[0])], dtype=int)
        self._inertia = -1.0 / f[k]
        ratio = f[self.other] / f[k]
        #: Shape (m, n), (m,). Derivative of the stored states z = x_o - (f_o/f_k) x_k.
        self.z_matrix = C[self.other] - np.outer(ratio, C[k])
        self.z_input = d[self.other] - ratio * d[k]
        self._ratio = ratio

    part = "actuator"
    input_kind = "control"
    state_block = "actuator_states"

    @property
    def inertia(self) -> float:
        """Actuator inertia J_a = -1/f_k [kg.m^2]."""
        return self._inertia

    @property
    def input_bound(self) -> float:
        """``input_limit`` (inf: none)."""
        return math.inf if self.input_limit is None else self.input_limit

    def active_torque(self, states, theta, omega, u) -> float:
        """:math:`J_a (C_k x + d_k u)` with x from the shaft angle, velocity and stored states."""
        return self.torque(self.full_state(theta, omega, states), u)

    def state_derivative(self, states, theta, omega, u) -> np.ndarray:
        """Derivative of the stored states z (free of the shaft acceleration)."""
        return self.z_derivative(self.full_state(theta, omega, states), u)

    @property
    def n_states(self) -> int:
        """States besides position and velocity (stored in the simulation state)."""
        return int(self.other.size)

    def full_state(self, theta: float, omega: float, z: np.ndarray) -> np.ndarray:
        """The actuator state x of (20.74) from shaft angle, velocity and stored states."""
        x = np.empty(self.f.size)
        x[self.position_index] = theta
        x[self.velocity_index] = omega
        x[self.other] = z + self._ratio * omega
        return x

    def torque(self, x: np.ndarray, u: float) -> float:
        """:math:`J_a (C_k x + d_k u)` [N.m] for the full state x of (20.74): the shaft torque
        when the shaft does not accelerate."""
        k = self.velocity_index
        return self._inertia * (float(self.C[k] @ x) + self.d[k] * u)

    def linear_coefficients(self) -> np.ndarray:
        """The active torque and the stored states' derivatives as rows over
        ``(θ, θ̇, z, u)``: :meth:`torque` and :meth:`z_derivative` through
        :meth:`full_state`."""
        m, k = self.other.size, self.velocity_index
        full = np.zeros((self.f.size, 2 + m))  # x of (θ, θ̇, z)
        full[self.position_index, 0] = full[k, 1] = 1.0
        full[self.other, 1] = self._ratio
        full[self.other, 2:] = np.eye(m)
        rows = np.vstack((self._inertia * self.C[k], self.z_matrix)) @ full
        return np.column_stack((rows, np.r_[self._inertia * self.d[k], self.z_input]))

    def z_derivative(self, x: np.ndarray, u: float) -> np.ndarray:
        """Time derivative of the stored states z."""
        return self.z_matrix @ x + self.z_input * u

    def __repr__(self) -> str:
        return (
            f"LinearActuator(n={self.f.size}, inertia={self.inertia:.6g}, "
            f"input_limit={self.input_limit})"
        )
