"""Checks of public arguments, in one place: every public function calls these at its boundary,
before any numerical work, so that a bad argument raises an
:class:`~pinext.exceptions.InvalidParameter` that names it, gives the value and says what is
valid (instead of a NumPy, SciPy or Boost.Python error deep inside, or silent garbage).

The module sits at the bottom of the package (it imports only NumPy, Pinocchio and
:mod:`pinext.exceptions`), so every layer may use it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pinocchio as pin

from .exceptions import InvalidParameter

#: Estimated wall time [s] beyond which a long operation refuses to start unless forced.
LONG_RUN = 600.0

__all__ = [
    "LONG_RUN",
    "as_placement",
    "callable_of",
    "describe",
    "flag",
    "integer",
    "refuse_long_run",
    "thousands",
    "real",
    "stabilization",
    "vector",
]


def describe(value: Any) -> str:
    """A short description of a value for an error message: ``'1.0' (str)``."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def real(
    name: str,
    value: Any,
    *,
    unit: str = "",
    low: float | None = None,
    high: float | None = None,
    strict: bool = False,
    finite: bool = True,
    none: bool = False,
) -> Any:
    """``value`` as a float, checked.

    Args:
        name: The argument's name, as the user wrote it (``"friction"``, ``"motion.duration"``).
        value: A real number (Python or NumPy); text, booleans, arrays and None are refused.
        unit: The unit for the message, e.g. ``"[s]"``.
        low: Smallest valid value (None: no bound).
        high: Largest valid value (None: no bound).
        strict: ``low`` itself is not valid (e.g. a mass > 0).
        finite: Refuse ``±inf`` (NaN is always refused).
        none: Accept None (returned as is).

    Returns:
        The float (or None).

    Raises:
        InvalidParameter: The message names the argument, the value and the valid range.
    """
    if value is None and none:
        return None
    expected = _range_text(low, high, strict, finite, none)
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise InvalidParameter(f"{name} must be {expected} {unit}, got {describe(value)}".strip())
    number = float(value)
    bad = math.isnan(number) or (finite and math.isinf(number))
    bad = bad or (low is not None and (number <= low if strict else number < low))
    bad = bad or (high is not None and number > high)
    if bad:
        raise InvalidParameter(f"{name} must be {expected} {unit}, got {number:g}".strip())
    return number


def _range_text(low, high, strict, finite, none) -> str:
    text = "a finite number" if finite else "a number (not NaN)"
    if low is not None and high is not None:
        text += f" in {'(' if strict else '['}{low:g}, {high:g}]"
    elif low is not None:
        text += f" {'>' if strict else '>='} {low:g}"
    elif high is not None:
        text += f" <= {high:g}"
    return f"None or {text}" if none else text


def integer(
    name: str, value: Any, *, low: int | None = None, high: int | None = None, what: str = ""
) -> int:
    """``value`` as an int in ``[low, high]``; floats with an integral value are accepted.

    Raises:
        InvalidParameter: Text, booleans, fractions or a value out of range; the message
            names the argument and the valid range (and ``what`` the bound means).
    """
    if isinstance(value, (bool, np.bool_)):
        ok = False
    elif isinstance(value, (int, np.integer)):
        ok = True
    elif isinstance(value, (float, np.floating)):
        ok = math.isfinite(value) and float(value).is_integer()
    else:
        ok = False
    bounds = (
        f" in [{low}, {high}]"
        if low is not None and high is not None
        else (f" >= {low}" if low is not None else (f" <= {high}" if high is not None else ""))
    )
    if ok:
        number = int(value)
        if (low is None or number >= low) and (high is None or number <= high):
            return number
    raise InvalidParameter(
        f"{name} must be an integer{bounds}{what}, got {describe(value)}".replace("  ", " ")
    )


def flag(name: str, value: Any) -> bool:
    """``value`` if it is a boolean (True/False, NumPy's too); text such as ``"no"`` is refused
    (``bool("no")`` is True)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidParameter(f"{name} must be true or false, got {describe(value)}")


def vector(
    name: str,
    value: Any,
    size: int | None = None,
    *,
    what: str = "",
    finite: bool = True,
) -> np.ndarray:
    """``value`` as a 1-D float array, of ``size`` entries if given, finite unless told.

    Args:
        name: The argument's name.
        value: A sequence of numbers (a scalar only when ``size`` is 1).
        size: The required number of entries, or None.
        what: What the entries are, for the message (``"the configuration"``).
        finite: Refuse NaN and ±inf.

    Raises:
        InvalidParameter: Text, a wrong shape or non-finite entries; the message names the
            argument, the shape given and the one expected.
    """
    shape = f"shape ({size},)" if size is not None else "a 1-D array"
    about = f" ({what})" if what else ""
    if isinstance(value, (str, bytes)):
        raise InvalidParameter(f"{name} must be numbers{about}, {shape}; got {describe(value)}")
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise InvalidParameter(
            f"{name} must be numbers{about}, {shape}; got {describe(value)} ({err})"
        ) from None
    if array.ndim == 0 and size == 1:
        array = array.reshape(1)
    if array.ndim != 1 or (size is not None and array.size != size):
        raise InvalidParameter(f"{name} must have {shape}{about}, got shape {array.shape}")
    if finite and not np.all(np.isfinite(array)):
        raise InvalidParameter(f"{name} must be finite{about}, got {array}")
    return array


def as_placement(name: str, value: Any, *, none: bool = False) -> pin.SE3 | None:
    """A placement from a ``pin.SE3``, a (4, 4) homogeneous matrix or a translation (3,) [m].

    Raises:
        InvalidParameter: Non-finite entries, a matrix whose upper-left block is not a
            rotation (orthonormal, determinant 1) or whose last row is not ``[0, 0, 0, 1]``,
            or another type; the message names the argument and the accepted forms.
    """
    if value is None and none:
        return None
    forms = "a pin.SE3, a (4, 4) homogeneous matrix or a translation of shape (3,) [m]"
    if isinstance(value, pin.SE3):
        matrix = value.homogeneous
    else:
        if isinstance(value, (str, bytes)):
            raise InvalidParameter(f"{name} must be {forms}, got {describe(value)}")
        try:
            matrix = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise InvalidParameter(f"{name} must be {forms}, got {describe(value)}") from None
        if matrix.shape == (3,):
            if not np.all(np.isfinite(matrix)):
                raise InvalidParameter(f"{name}: the translation must be finite, got {matrix}")
            return pin.SE3(np.eye(3), matrix)
        if matrix.shape != (4, 4):
            raise InvalidParameter(f"{name} must be {forms}, got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise InvalidParameter(f"{name} must be finite, got\n{matrix}")
    rotation = matrix[:3, :3]
    if (
        not np.allclose(matrix[3], [0.0, 0.0, 0.0, 1.0], atol=1e-9)
        or not np.allclose(rotation.T @ rotation, np.eye(3), atol=1e-6)
        or np.linalg.det(rotation) < 0
    ):
        raise InvalidParameter(
            f"{name} is not a rigid placement: the upper-left 3x3 block must be a rotation "
            "(orthonormal, determinant +1) and the last row [0, 0, 0, 1]"
        )
    return value.copy() if isinstance(value, pin.SE3) else pin.SE3(rotation, matrix[:3, 3])


def stabilization(name: str, value: Any) -> float | None:
    """A Baumgarte natural frequency ω [1/s]: None (none), or a finite number >= 0 (a negative
    ω makes the constraint error grow instead of decay)."""
    return real(name, value, unit="[1/s]", low=0.0, none=True)


def callable_of(name: str, value: Any, signature: str, *, none: bool = False) -> Any:
    """``value`` if it is callable (or None when allowed); else an error giving the expected
    ``signature`` (e.g. ``"t -> qd [rad/s]"``)."""
    if value is None and none:
        return None
    if not callable(value):
        raise InvalidParameter(
            f"{name} must be a function {signature}{' or None' if none else ''}, got "
            f"{describe(value)}"
        )
    return value


def thousands(count: float) -> str:
    """An integer with its thousands apart: ``5 000 000``."""
    return f"{int(round(count)):,}".replace(",", " ")


def duration_text(seconds: float) -> str:
    """A wall time in words a user reads at a glance: ``18 min``, ``3.2 h``, ``40 days``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    if seconds < 1e3 * 365 * 86400:
        return f"{seconds / 86400:.3g} days"
    return "longer than a thousand years"


def refuse_long_run(
    what: str, seconds: float, *, force: bool, hint: str, option: str = "force=True"
) -> None:
    """Refuse, before it starts, an operation estimated to take more than :data:`LONG_RUN`.

    Args:
        what: What would run, with its size (``"dt = 1e-07 s for 0.5 s is 5 000 000 steps"``).
        seconds: The estimated wall time [s].
        force: Run anyway (the caller's ``force=True`` / ``--force``).
        hint: What makes it shorter.
        option: How the user forces it.

    Raises:
        InvalidParameter: The estimate exceeds :data:`LONG_RUN` and ``force`` is false.
    """
    if force or not seconds > LONG_RUN:
        return
    raise InvalidParameter(
        f"{what}, about {duration_text(seconds)}; {hint}, or pass {option} to run it anyway"
    )
