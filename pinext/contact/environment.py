"""Dynamic environment, Vukobratović & Potkonjak §20.5.3 (20.92)–(20.97) and Fig. 20.15 (c), (d).

Model (c): the surface belongs to an equivalent mass m_e on a spring k and damper b. Its
displacement s_e along the constrained coordinate (negative into the environment, measured
from its loaded rest position, so gravity on m_e is absorbed in the rest position) obeys

.. math::

    m_e \\ddot s_e = -F - k s_e - b \\dot s_e \\quad (20.94)

In contact the tip moves with the mass, ``s^c(q) = s_e``, so with (20.92) (sign typo fixed:
``H q̈ + h = τ + J_6ᵀ F``) and (20.93) the coupled motion is

.. math::

    (J H^{-1} J^T + m_e^{-1})\\,F = m_e^{-1}(-k s_e - b\\dot s_e) - J H^{-1}(\\tau - h) - A
    + \\text{Baumgarte}

The approach ends with a plastic impact with the mass (:func:`pinext.contact.plastic_impact`
with ``environment_mass``; the seed's (20.95)–(20.97) are degenerate as printed, see
:mod:`pinext.contact.impact`).

Model (d): an external massless spring k_c (with damper c_c) in series in front of the mass:
no impact, the contact force is ``F = k_c w + c_c ẇ`` where ``w ≥ 0`` is the compression of
the layer. In contact ``ẇ = -(ṡ^c - ṡ_e)``; after lift-off the layer relaxes
(``c_c ẇ = -k_c w``, instantly when c_c = 0) and the tip touches it again when
``s^c - s_e + w`` reaches 0. The layer's energy ``½ k_c w²`` and dissipation ``c_c ẇ²`` are
accounted for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import InvalidParameter
from ..simulation.forms import damper_power, mass_acceleration


@dataclass
class DynamicEnvironment:
    """A massive, compliant environment behind a surface-type contact (m = 1).

    Args:
        mass: Equivalent mass m_e [kg] (> 0; ``inf`` for an immobile surface).
        stiffness: Spring k [N/m] (≥ 0).
        damping: Damper b [N.s/m] (≥ 0).
        contact_stiffness: k_c [N/m] of the external massless spring of model (d); None for
            model (c).
        contact_damping: c_c [N.s/m] in parallel with k_c (model (d) only).
    """

    mass: float
    stiffness: float
    damping: float
    contact_stiffness: float | None = None
    contact_damping: float = 0.0

    def __post_init__(self) -> None:
        if not self.mass > 0:  # NaN fails too; inf is an immobile surface
            raise InvalidParameter(
                f"environment mass must be positive [kg] (inf: immobile), got {self.mass}"
            )
        for name, unit in (
            ("stiffness", "[N/m]"),
            ("damping", "[N.s/m]"),
            ("contact_damping", "[N.s/m]"),
        ):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise InvalidParameter(
                    f"environment {name} must be a finite number >= 0 {unit}, got {value}"
                )
        if self.contact_stiffness is not None and not (
            np.isfinite(self.contact_stiffness) and self.contact_stiffness > 0
        ):
            raise InvalidParameter(
                f"environment contact_stiffness must be a finite positive number [N/m] (or "
                f"None for model c), got {self.contact_stiffness}"
            )

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> DynamicEnvironment:
        """From the ``[environment]`` table: mass, stiffness, damping, contact_stiffness,
        contact_damping."""
        known = {"mass", "stiffness", "damping", "contact_stiffness", "contact_damping"}
        unknown = set(spec) - known
        if unknown:
            raise InvalidParameter(
                f"unknown environment keys {sorted(unknown)}; "
                f"valid keys: {', '.join(sorted(known))}"
            )
        if "mass" not in spec:
            raise InvalidParameter(
                f"environment needs a 'mass' [kg]; valid keys: {', '.join(sorted(known))}"
            )

        def optional(key: str) -> float | None:
            return None if spec.get(key) is None else number(key, 0.0)

        def number(key: str, default: float) -> float:
            value = spec.get(key, default)
            try:
                if isinstance(value, bool):
                    raise TypeError
                return float(value)
            except (TypeError, ValueError):
                raise InvalidParameter(
                    f"environment {key} must be a number, got {value!r}"
                ) from None

        return cls(
            number("mass", np.nan),
            number("stiffness", 0.0),
            number("damping", 0.0),
            optional("contact_stiffness"),
            number("contact_damping", 0.0),
        )

    @property
    def model(self) -> str:
        """``"c"`` (mass, impact) or ``"d"`` (massless spring in series, no impact)."""
        return "c" if self.contact_stiffness is None else "d"

    @property
    def inverse_mass(self) -> float:
        """1 / m_e [1/kg] (0 for an infinite mass)."""
        return 0.0 if np.isinf(self.mass) else 1.0 / self.mass

    # -- dynamics ----------------------------------------------------------------------------
    def acceleration(self, s_e: float, sdot_e: float, force: float) -> float:
        """s̈_e of (20.94) for a contact force F on the robot (−F on the mass) [m/s^2]
        (:func:`pinext.simulation.forms.mass_acceleration`, as the compiled path)."""
        return mass_acceleration(
            self.inverse_mass, self.stiffness, self.damping, s_e, sdot_e, force
        )

    def coupled_force(
        self,
        delassus: float,
        free_acceleration: float,
        drift: float,
        s_e: float,
        sdot_e: float,
        reference: float = 0.0,
    ) -> float:
        """The contact force F of the coupled motion (20.92)–(20.94) [N].

        Args:
            delassus: J H⁻¹ Jᵀ [1/kg].
            free_acceleration: J H⁻¹ (τ − h) [m/s^2].
            drift: A [m/s^2].
            s_e: Displacement of the mass [m].
            sdot_e: Its velocity [m/s].
            reference: Baumgarte term on the gap ``s^c - s_e`` [m/s^2].
        """
        rhs = self.acceleration(s_e, sdot_e, 0.0) - free_acceleration - drift
        return (rhs + reference) / (delassus + self.inverse_mass)

    def energy(self, s_e: float, sdot_e: float, w: float = 0.0) -> float:
        """``½ m_e ṡ_e² + ½ k s_e² + ½ k_c w²`` [J] (mass kinetic energy 0 if m_e = ∞)."""
        kinetic = 0.0 if np.isinf(self.mass) else 0.5 * self.mass * sdot_e**2
        layer = 0.5 * float(self.contact_stiffness or 0.0) * w * w
        return kinetic + 0.5 * self.stiffness * s_e**2 + layer

    def dissipation(self, sdot_e: float, wdot: float = 0.0) -> float:
        """``b ṡ_e² + c_c ẇ²`` [W]."""
        return damper_power(self.damping, sdot_e) + damper_power(self.contact_damping, wdot)
