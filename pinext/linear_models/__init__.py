"""Linear models of Systems for control design: A, B, C, D about an equilibrium or any
state, poles, damped modes, transmission zeros and frequency responses.

* :func:`linearize` — the linear model (analytic where Pinocchio's derivatives reach);
* :func:`equilibrium` — a rest state under constant inputs (Newton);
* :class:`LinearModel` — the record: ``discretize(dt)``, ``poles()``, ``modes()``,
  ``zeros(input, output)``, ``to_scipy()``, ``to_control()``;
* :func:`frequency_response` — ``G(i 2π f)`` of one input-output channel.
"""

from .linearize import STEP_ERROR, central_jacobian, equilibrium, linearize
from .model import LinearModel, Mode, frequency_response

__all__ = [
    "LinearModel",
    "Mode",
    "STEP_ERROR",
    "central_jacobian",
    "equilibrium",
    "frequency_response",
    "linearize",
]
