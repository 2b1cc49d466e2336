"""Exceptions raised by pinext.

Every error derives from :class:`PinextError`. Messages say what was wrong, what was
expected and, for names, which ones exist.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


class PinextError(Exception):
    """Base class of every pinext error."""


class NameNotFound(PinextError, KeyError):
    """A link, joint, frame or drive name that the model does not have.

    Attributes:
        kind: What was looked up ("link", "joint", "frame", ...).
        name: The name asked for.
        available: The names that do exist.
    """

    def __init__(self, kind: str, name: str, available: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.available = list(available)
        super().__init__(
            f"unknown {kind} '{name}'. Available {kind} names: {', '.join(self.available)}"
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class InvalidParameter(PinextError, ValueError):
    """A physical parameter out of its valid range (negative mass, zero ratio, ...)."""


class FileFormatError(PinextError):
    """A malformed URDF or sidecar file.

    Attributes:
        path: The file.
        where: The element, key or line that is wrong.
    """

    def __init__(self, path: str, where: str, message: str) -> None:
        self.path = str(path)
        self.where = where
        super().__init__(f"{self.path}: {where}: {message}")


class IntegrationError(PinextError):
    """The integrator failed or the state became NaN or infinite.

    Attributes:
        time: The time [s] at which the run stopped.
        state: The last state vector.
    """

    def __init__(self, message: str, time: float, state: np.ndarray) -> None:
        self.time = float(time)
        self.state = np.array(state, copy=True)
        super().__init__(
            f"{message} at t = {self.time:.9g} s; "
            f"state = {np.array2string(self.state, precision=6, threshold=40)}"
        )


class ConstraintError(PinextError):
    """Inconsistent or degenerate constraints (contact tasks, Gauss's principle)."""


class MissingDependency(PinextError, ImportError):
    """An optional dependency is not installed.

    Attributes:
        feature: What needs it (``"pinext.sweep"``, ...).
        packages: The missing distributions.
        extra: The pinext extra that installs them.
    """

    def __init__(self, feature: str, packages: Iterable[str], extra: str) -> None:
        self.feature = feature
        self.packages = list(packages)
        self.extra = extra
        super().__init__(
            f"{feature} needs {', '.join(self.packages)}, which are not installed; "
            f'install them with: pip install "pinext[{extra}]"'
        )
