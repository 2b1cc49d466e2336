"""pinext.constraints: kinematic constraints that meet in the System's acceleration step.

:class:`Prescribed` drives a joint kinematically (a rheonomic constraint, McClamroch (1986)
§2; the kinematic control functions of Negrean et al. (2009) §2 as motion laws).
"""

from .prescribed import Prescribed

__all__ = ["Prescribed"]
