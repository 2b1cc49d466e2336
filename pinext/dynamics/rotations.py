"""Rotation vectors at an anchor: the local chart of a quaternion joint.

A free-flyer's or a spherical joint's orientation is integrated as a rotation vector φ at an
anchor orientation q₀ (Pinocchio's (x, y, z, w) quaternions): ``q = q₀ ⊗ exp(φ)``. With ω the
joint's angular velocity in its own frame (Pinocchio's convention), ``φ̇ = J_r(φ)⁻¹ ω``, J_r
the right Jacobian of SO(3) (Pinocchio's ``Jexp3``), whose inverse has the closed form
(Solà, Deray & Atchuthan 2018, eq. (144))

.. math::

    J_r^{-1}(φ) = I + \\tfrac12 [φ]_× + \\Big(\\frac{1}{θ^2}
        - \\frac{1 + \\cos θ}{2 θ \\sin θ}\\Big) [φ]_×^2, \\qquad θ = |φ|.

The functions are plain Python on arrays and offsets, so that the Python path calls them as
they are and the compiled path compiles the same source (:mod:`pinext.compiled.phase`).
"""

from __future__ import annotations

import math

__all__ = ["log_at", "jr_inverse", "rotate", "exp_at"]


def exp_at(anchor, ia, phi, ip, out, io, same_side=False):
    """``out[io:io+4] = anchor[ia:ia+4] ⊗ exp(phi[ip:ip+3])``, normalised; ``same_side``: the
    sign that keeps it on the side of the anchor (Pinocchio's free-flyer ``integrate``)."""
    w0, w1, w2 = phi[ip], phi[ip + 1], phi[ip + 2]
    theta = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    k = 0.5 - theta * theta / 48.0 if theta < 1e-4 else math.sin(0.5 * theta) / theta
    x, y, z, w = w0 * k, w1 * k, w2 * k, math.cos(0.5 * theta)
    a, b, c, d = anchor[ia], anchor[ia + 1], anchor[ia + 2], anchor[ia + 3]
    nx = d * x + a * w + b * z - c * y
    ny = d * y - a * z + b * w + c * x
    nz = d * z + a * y - b * x + c * w
    nw = d * w - a * x - b * y - c * z
    n = math.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
    if same_side and nx * a + ny * b + nz * c + nw * d < 0.0:
        n = -n
    out[io], out[io + 1], out[io + 2], out[io + 3] = nx / n, ny / n, nz / n, nw / n


def log_at(anchor, ia, quat, iq, out, io):
    """``out[io:io+3] = log(anchor[ia:ia+4]⁻¹ ⊗ quat[iq:iq+4])``, the rotation vector of
    angle at most π."""
    a, b, c, d = -anchor[ia], -anchor[ia + 1], -anchor[ia + 2], anchor[ia + 3]  # conjugate
    x, y, z, w = quat[iq], quat[iq + 1], quat[iq + 2], quat[iq + 3]
    # the products that cancel at the anchor summed in pairs: log of the anchor itself is
    # exactly zero, not 1e-17 (a rounding that the first step's guess divides by atol)
    rx = (d * x + a * w) + (b * z - c * y)
    ry = (d * y + b * w) + (c * x - a * z)
    rz = (d * z + c * w) + (a * y - b * x)
    rw = d * w - a * x - b * y - c * z
    if rw < 0.0:  # the same rotation, on the short side
        rx, ry, rz, rw = -rx, -ry, -rz, -rw
    s = math.sqrt(rx * rx + ry * ry + rz * rz)
    k = 2.0 / rw * (1.0 - s * s / (3.0 * rw * rw)) if s < 1e-6 else 2.0 * math.atan2(s, rw) / s
    out[io], out[io + 1], out[io + 2] = k * rx, k * ry, k * rz


def rotate(quat, iq, vec, iv, out, io):
    """``out[io:io+3] = R(quat[iq:iq+4]) vec[iv:iv+3]``."""
    x, y, z, w = quat[iq], quat[iq + 1], quat[iq + 2], quat[iq + 3]
    v0, v1, v2 = vec[iv], vec[iv + 1], vec[iv + 2]
    c0, c1, c2 = y * v2 - z * v1, z * v0 - x * v2, x * v1 - y * v0  # r × v
    e0, e1, e2 = y * c2 - z * c1, z * c0 - x * c2, x * c1 - y * c0  # r × (r × v)
    out[io] = v0 + 2.0 * (w * c0 + e0)
    out[io + 1] = v1 + 2.0 * (w * c1 + e1)
    out[io + 2] = v2 + 2.0 * (w * c2 + e2)


def jr_inverse(phi, ip, omega, iw, out, io):
    """``out[io:io+3] = J_r(φ)⁻¹ ω`` (module docstring), φ = phi[ip:ip+3], ω = omega[iw:iw+3]."""
    p0, p1, p2 = phi[ip], phi[ip + 1], phi[ip + 2]
    w0, w1, w2 = omega[iw], omega[iw + 1], omega[iw + 2]
    t2 = p0 * p0 + p1 * p1 + p2 * p2
    if t2 < 1e-8:
        c = 1.0 / 12.0 + t2 / 720.0
    else:
        t = math.sqrt(t2)
        c = 1.0 / t2 - (1.0 + math.cos(t)) / (2.0 * t * math.sin(t))
    x0, x1, x2 = p1 * w2 - p2 * w1, p2 * w0 - p0 * w2, p0 * w1 - p1 * w0  # φ × ω
    y0, y1, y2 = p1 * x2 - p2 * x1, p2 * x0 - p0 * x2, p0 * x1 - p1 * x0  # φ × (φ × ω)
    out[io] = w0 + 0.5 * x0 + c * y0
    out[io + 1] = w1 + 0.5 * x1 + c * y1
    out[io + 2] = w2 + 0.5 * x2 + c * y2
