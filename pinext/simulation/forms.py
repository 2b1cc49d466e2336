"""The compiled forms of a component's rows and events: plain data that the compiled path
(:mod:`pinext.compiled`) evaluates without calling back into Python.

A component gives them beside its Python functions (:meth:`pinext.simulation.component.
Component.compiled_rows`, :meth:`~pinext.simulation.component.Component.compiled_layer`,
:attr:`pinext.simulation.component.Event.compiled`): constant joint rows
(:class:`JointRows`), rows between two frames (:class:`FrameRows`), a compliant contact layer
(:class:`Layer`), and the events' forms (:class:`Distances`, :class:`Leaving`,
:class:`Reaction`, :class:`Gap`, :class:`LayerForce`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import pinocchio as pin


class Distances(NamedTuple):
    """``g(t, x) = min_k sign[k] (x[entry[k]] − bound[k])``: the nearest of several joint
    stops (``entry``: indices into the public state)."""

    entry: np.ndarray
    sign: np.ndarray
    bound: np.ndarray


#: A row that left its surface and stays within this distance [rad or m] of where it left,
#: at a rate below :data:`REST_SPEED`, rests there, held by other rows (rounding, not motion).
REST_TOLERANCE = 1e-12
#: The rate [rad/s or m/s] below which such a row rests: the velocity a row held by others
#: (a gripper joint coupled by ``<mimic>`` to one on its stop) keeps from their Baumgarte
#: stabilisation, ~1e-12 (the same bound as a joint at rest on its limit at a run's start).
REST_SPEED = 1e-9


class Leaving(NamedTuple):
    """``g(t, x) = (sign (x[entry] − bound) − d0) / (t − t0)²`` (1 at t ≤ t0, and where the
    row rests where it left within :data:`REST_TOLERANCE` and :data:`REST_SPEED`
    ``x[rate_entry]``): the separation test of a row that left its stop at t0
    (:func:`pinext.contact.limits.leaving_distance`)."""

    entry: int
    sign: float
    bound: float
    t0: float
    d0: float
    rate_entry: int


class JointRows(NamedTuple):
    """Constraint rows linear in q and v with constant coefficients over one-DOF joints: the
    compiled form of rows with a constant Jacobian (McClamroch (1986) (23) with ``B``
    constant). Row r has the entries ``k = ptr[r] .. ptr[r + 1] - 1`` and reads

    .. math::

        J_r a + \\gamma_r = 0, \\quad J_r a = \\sum_k c_k\\, a[iv_k], \\quad
        \\gamma_r = 2 \\omega_r J_r v + \\omega_r^2 \\phi_r, \\quad
        \\phi_r = \\sum_k c_k\\, q[iq_k] - \\mathrm{offset}_r,

    Baumgarte's stabilisation of the residual φ_r (ω_r = 0: none), exactly the rows
    ``J a + γ = 0`` the acceleration step solves. A joint on its lower stop is the row
    ``a[iv] + γ = 0`` with φ = q − lower; on its upper stop ``−a[iv] + γ = 0`` with
    φ = upper − q; a mimic coupling ``q_m = k q_l + c`` the row ``(e_m − k e_l)`` with
    φ = q_m − k q_l − c.
    """

    ptr: np.ndarray  # int64 (m + 1,)
    iq: np.ndarray  # int64 (entries,): index into q of each entry
    iv: np.ndarray  # int64 (entries,): index into v of each entry
    coef: np.ndarray  # (entries,): c_k
    offset: np.ndarray  # (m,)
    omega: np.ndarray  # (m,) Baumgarte frequency of each row [1/s]

    @property
    def m(self) -> int:
        """The number of rows."""
        return int(self.offset.size)

    @classmethod
    def build(
        cls, rows: list[list[tuple[int, int, float]]], offset: list[float], omega: list[float]
    ) -> JointRows:
        """The rows from ``rows[r] = [(iq, iv, c), ...]``, their offsets and frequencies."""
        entries = [e for row in rows for e in row]
        return cls(
            np.cumsum([0] + [len(row) for row in rows]).astype(np.int64),
            np.array([e[0] for e in entries], dtype=np.int64),
            np.array([e[1] for e in entries], dtype=np.int64),
            np.array([e[2] for e in entries], dtype=float),
            np.array(offset, dtype=float),
            np.array(omega, dtype=float),
        )

    @classmethod
    def stack(cls, blocks: list[JointRows]) -> JointRows:
        """The rows of several blocks, one after the other."""
        ends = np.cumsum([0] + [b.iq.size for b in blocks])
        ptrs = [b.ptr[1:] + e for b, e in zip(blocks, ends[:-1], strict=True)]
        return cls(
            np.concatenate([np.zeros(1, dtype=np.int64), *ptrs]).astype(np.int64),
            np.concatenate([np.zeros(0, dtype=np.int64)] + [b.iq for b in blocks]),
            np.concatenate([np.zeros(0, dtype=np.int64)] + [b.iv for b in blocks]),
            np.concatenate([np.zeros(0)] + [b.coef for b in blocks]),
            np.concatenate([np.zeros(0)] + [b.offset for b in blocks]),
            np.concatenate([np.zeros(0)] + [b.omega for b in blocks]),
        )

    def jacobian(self, nv: int) -> np.ndarray:
        """The dense Jacobian J, shape (m, nv)."""
        out = np.zeros((self.m, nv))
        for r in range(self.m):
            for k in range(self.ptr[r], self.ptr[r + 1]):
                out[r, self.iv[k]] += self.coef[k]
        return out

    def drift(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """γ at (q, v), shape (m,): ``2 ω_r J_r v + ω_r² φ_r`` (the Python path's evaluation
        of the rows the compiled kernels read)."""
        row = np.repeat(np.arange(self.m), np.diff(self.ptr))
        phi = np.bincount(row, self.coef * q[self.iq], self.m) - self.offset
        rate = np.bincount(row, self.coef * v[self.iv], self.m)
        return 2.0 * self.omega * rate + self.omega**2 * phi


#: Kinds of :class:`FrameRows` blocks (their rows: :data:`FRAME_ROWS`).
FRAME_POINT, FRAME_HINGE, FRAME_WELD, FRAME_NORMAL = 0, 1, 2, 3
#: The number of rows of each kind of block.
FRAME_ROWS = (3, 5, 6, 1)


class FrameRows(NamedTuple):
    """Constraint rows between two frames of the mechanism: the compiled form of a loop
    closure (McClamroch (1986) (3), (15)–(16); :class:`pinext.Loop` says what each kind
    constrains). Block b joins frame A, placed at ``(rot_a[b], pos_a[b])`` in joint
    ``joint_a[b]``, to frame B', placed at ``(rot_b[b], pos_b[b])`` in joint ``joint_b[b]``
    (joint 0: the world), with the rows of its ``kind`` in world axes:

    * FRAME_POINT (3 rows): ``p_A − p_B' = 0``;
    * FRAME_HINGE (5 rows): the point rows and ``n_iᵀ(ω_A − ω_B) = 0`` across the two
      directions ``normals[b]`` (in B') normal to ``axis[b]`` (in A);
    * FRAME_WELD (6 rows): the point rows and ``ω_A − ω_B = 0``;
    * FRAME_NORMAL (1 row): ``nᵀ(p_A − p_B') = 0`` along the z axis n of B' (a point on a
      plane, B' the plane's frame: Vukobratović & Potkonjak's functional coordinate z).

    The compiled kernels (:mod:`pinext.compiled.frames`) evaluate the Jacobians, the
    residuals and the drifts ``J̇ v`` from compiled kinematics, and stabilise the residuals with
    Baumgarte's frequency ``omega[b]`` as :class:`JointRows` do.

    A FRAME_NORMAL block may sit on the mass of a dynamic environment (model (c),
    Vukobratović & Potkonjak (20.92)–(20.94)): ``env[b]`` is the state index of its
    displacement s_e (ṡ_e follows it; −1: a fixed plane) and ``inverse_mass[b]`` its 1/m_e.
    The row then reads ``nᵀ(p_A − p_B') − s_e = 0`` and its reaction λ accelerates the mass
    by ``−λ / m_e`` on top of the environment's own (linear) law. Behind a compliant layer
    (model (d)), ``layer[b]`` is the state index of the layer's compression w: the surface
    then sits at ``s_e − w`` (the approach gap ``nᵀ(p_A − p_B') − s_e + w``).
    """

    kind: np.ndarray  # int64 (blocks,)
    joint_a: np.ndarray  # int64 (blocks,)
    rot_a: np.ndarray  # (blocks, 3, 3)
    pos_a: np.ndarray  # (blocks, 3)
    joint_b: np.ndarray  # int64 (blocks,)
    rot_b: np.ndarray  # (blocks, 3, 3)
    pos_b: np.ndarray  # (blocks, 3)
    axis: np.ndarray  # (blocks, 3)
    normals: np.ndarray  # (blocks, 3, 2)
    omega: np.ndarray  # (blocks,) [1/s]
    env: np.ndarray  # int64 (blocks,) state index of s_e (−1: none)
    inverse_mass: np.ndarray  # (blocks,) 1/m_e [1/kg]
    layer: np.ndarray  # int64 (blocks,) state index of w (−1: none)

    @property
    def m(self) -> int:
        """The number of rows."""
        return int(sum(FRAME_ROWS[k] for k in self.kind.tolist()))

    @classmethod
    def block(
        cls,
        kind: int,
        joint_a: int,
        frame_a: pin.SE3,
        joint_b: int,
        frame_b: pin.SE3,
        omega: float = 0.0,
        axis: np.ndarray | None = None,
        normals: np.ndarray | None = None,
        env: int = -1,
        inverse_mass: float = 0.0,
        layer: int = -1,
    ) -> FrameRows:
        """One block; frames A and B' as placements in their joints."""
        return cls(
            np.array([kind], dtype=np.int64),
            np.array([joint_a], dtype=np.int64),
            np.array([frame_a.rotation], dtype=float),
            np.array([frame_a.translation], dtype=float),
            np.array([joint_b], dtype=np.int64),
            np.array([frame_b.rotation], dtype=float),
            np.array([frame_b.translation], dtype=float),
            np.array([np.zeros(3) if axis is None else axis], dtype=float),
            np.array([np.zeros((3, 2)) if normals is None else normals], dtype=float),
            np.array([omega], dtype=float),
            np.array([env], dtype=np.int64),
            np.array([inverse_mass], dtype=float),
            np.array([layer], dtype=np.int64),
        )

    @classmethod
    def stack(cls, blocks: list[FrameRows]) -> FrameRows:
        """The blocks one after the other (none: no rows)."""
        shapes = ((), (), (3, 3), (3,), (), (3, 3), (3,), (3,), (3, 2), (), (), (), ())
        ints = (0, 1, 4, 10, 12)
        return cls(
            *(
                np.concatenate(
                    [np.zeros((0, *shape), dtype=np.int64 if f in ints else float)]
                    + [b[f] for b in blocks]
                )
                for f, shape in enumerate(shapes)
            )
        )


class Gap(NamedTuple):
    """``g(t, x) = φ`` with φ the residual of ``block`` (a one-row :class:`FrameRows`: the
    approach gap of a point to a plane), or, for a row that left its surface at ``t0`` from
    the gap ``d0``, :func:`pinext.contact.limits.leaving_distance` of it (the separation
    test): the compiled form of a contact's approach event.

    ``restitution`` > 0 lets the compiled loop apply the contact's bounce itself
    (:mod:`pinext.compiled.impacts`: a unilateral frictionless point on a fixed surface, Newton's
    coefficient and the Zeno cut ``rest_velocity`` as the component's impact uses them); 0
    leaves every impact to the component's action."""

    block: FrameRows
    t0: float = -np.inf
    d0: float = 0.0
    restitution: float = 0.0
    rest_velocity: float = 0.0


class Layer(NamedTuple):
    """A compliant contact layer pressed by a frame: the compiled form of a contact with a
    model (d) environment while it touches (Vukobratović & Potkonjak §20.5.3).

    ``block`` is the tool point on the environment's plane (:data:`FRAME_NORMAL`, its
    ``env`` the state index of the mass's s_e, followed by ṡ_e and the layer's compression
    w), ``constants`` are ``(1/m_e, k, b, k_c, c_c)``: the mass, its spring and damper, and
    the layer's. The layer's force ``F = k_c w + c_c ẇ`` with ``ẇ = ṡ_e − J v`` pushes the
    robot (``Jᵀ F``) and the mass (``m_e s̈_e = −k s_e − b ṡ_e − F``); it dissipates
    ``b ṡ_e² + c_c ẇ²``. The compiled path evaluates the owner's whole effort, state
    derivatives and power in the mode from it (:mod:`pinext.compiled.layers`)."""

    block: FrameRows
    constants: np.ndarray


class LayerForce(NamedTuple):
    """``g(t, x) = F``, the force of the phase's compliant layer (:class:`Layer`): the
    compiled form of its lift-off event."""


class Reaction(NamedTuple):
    """``g(t, x, step) = sign · λ + bound`` with λ the reaction of the owning component's
    constraint row ``row`` (its rows in the order of :meth:`Component.compiled_rows`): a
    lift-off (λ falls through 0), or a friction cone's edge (``F_c ± λ``). The compiled path
    adds the rows of the components before it in the phase
    (:func:`pinext.compiled.rows.row_offsets`)."""

    row: int
    sign: float = 1.0
    bound: float = 0.0
