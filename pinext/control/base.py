"""The controller contract: ``u = law(t, q, v, sensors)``.

:class:`Controller` and :func:`as_state_law` are defined with the other control inputs in
:mod:`pinext.simulation.controls` (the assembly layer, where :func:`pinext.simulate` and the
time stepping check a run's law); this module is their place among the built-in laws.
"""

from __future__ import annotations

from ..simulation.controls import Controller, as_state_law

__all__ = ["Controller", "as_state_law"]
