"""Exceptions raised by pinext.

Every error derives from :class:`PinextError`. Messages say what was wrong, what was
expected and, for names, which ones exist.
"""

from __future__ import annotations

import difflib
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
        suggestions: The closest of them (``difflib``), at most three.
    """

    def __init__(self, kind: str, name: str, available: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.available = list(available)
        close = difflib.get_close_matches(str(name), [str(a) for a in self.available], n=3)
        self.suggestions = close
        guess = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        listing = (
            f" Available {kind} names: {', '.join(map(str, self.available))}"
            if self.available
            else ""
        )
        super().__init__(f"unknown {kind} '{name}'.{guess}{listing}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class InvalidParameter(PinextError, ValueError):
    """A physical parameter out of its valid range (negative mass, zero ratio, ...)."""


class NotAtEquilibrium(InvalidParameter):
    """A state given as an equilibrium (``pinext.linearize(..., require_equilibrium=True)``)
    where the System does not rest: a velocity or a state derivative is not zero.

    Attributes:
        residuals: ``"d/dt <state name>"`` -> its value at x0 [the state's unit per second],
            for the states that move.
        tol: The relative tolerance of the test.
    """

    def __init__(self, residuals: dict[str, float], tol: float) -> None:
        self.residuals = dict(residuals)
        self.tol = float(tol)
        worst = sorted(self.residuals.items(), key=lambda kv: -abs(kv[1]))[:6]
        listing = ", ".join(f"{name} = {value:.3g}" for name, value in worst)
        super().__init__(
            f"x0 is not an equilibrium under u0 (relative tolerance {self.tol:g}): {listing}; "
            "pass x0=None to find the equilibrium, or require_equilibrium=False to linearize "
            "about a moving state"
        )


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


class EventError(ConstraintError):
    """An event's map has no solution in a run (an impact that the System's other rows make
    impossible: a prescribed motion or a loop driving a joint through its stop).

    Attributes:
        event: The event's name.
        components: The components whose rows took part (the phase's constrained ones).
        time: The time of the event [s].
        state: The public state at the event.
    """

    def __init__(
        self, message: str, event: str, components: list[str], time: float, state: np.ndarray
    ) -> None:
        self.event = event
        self.components = list(components)
        self.time = float(time)
        self.state = np.array(state, copy=True)
        super().__init__(
            f"{event} at t = {self.time:.9g} s (rows of {', '.join(self.components)}): "
            f"{message}; state = {np.array2string(self.state, precision=6, threshold=40)}"
        )


class InconsistentInitialConditions(ConstraintError):
    """The closures (loops, mimic couplings) do not hold at the start of a run and cannot be
    made to (McClamroch (1986) (32), (39): consistent initial conditions).

    Attributes:
        residuals: Closure description -> its largest residual [m or rad] (or closure
            velocity [m/s or rad/s] when ``quantity`` says so), for the open ones.
        quantity: ``"residual"`` or ``"velocity"``.
    """

    def __init__(self, message: str, residuals: dict[str, float], quantity: str = "residual"):
        self.residuals = dict(residuals)
        self.quantity = quantity
        super().__init__(message)


class UnactuatedLoad(ConstraintError):
    """The constraint forces cannot carry the load on the joints declared unactuated: no
    multipliers λ give them zero torque (McClamroch (1986) §5, ``B_pᵀ λ = (M ẍ + G)_p`` has
    no solution), e.g. a load held at one point asked to turn about it.

    Attributes:
        joints: The unactuated joints left with a torque.
        torque: Joint name -> the torque (or force) that no constraint force balances
            [N.m or N], per DOF.
    """

    def __init__(self, torque: dict[str, np.ndarray]) -> None:
        self.torque = {name: np.array(t, dtype=float) for name, t in torque.items()}
        self.joints = list(self.torque)
        listing = ", ".join(
            f"'{name}' {np.array2string(t, precision=4)}" for name, t in self.torque.items()
        )
        super().__init__(
            f"the constraints cannot carry the load on the unactuated joints: {listing} "
            "[N.m or N] would remain, balanced by no constraint force; actuate those joints "
            "(leave them out of unactuated=) or ask for a motion the constraints can carry"
        )


class ExtensionError(FileFormatError, InvalidParameter):
    """A value in a URDF's ``<pinext>`` block or sidecar that is out of range or not a number.

    Both a :class:`FileFormatError` (it names the file and the table) and an
    :class:`InvalidParameter` (what the same value given in Python raises).
    """


class RobotNotFound(NameNotFound):
    """A robot name that :func:`pinext.load_robot` does not know.

    Attributes:
        hint: How to get more robots (the optional ``[robots]`` extra).
    """

    def __init__(self, name: str, available: Iterable[str], hint: str = "") -> None:
        super().__init__("robot", name, available)
        self.hint = hint
        if hint:
            self.args = (f"{str(self.args[0]).rstrip('.')}. {hint.rstrip('.')}.",)


class SingularConfiguration(PinextError):
    """A kinematic singularity: met along a prescribed end-effector motion (``time`` given),
    or at the configuration of a task-space computation (``time`` None).

    Attributes:
        time: The time [s] at which the smallest singular value of the task Jacobian fell
            below the threshold; None for a single configuration.
        singular_value: That smallest singular value [m/rad or rad/rad], or its ratio to the
            largest one when ``quantity`` says so.
        threshold: The threshold it was compared with.
        frame: The frame whose Jacobian is singular.
        quantity: What ``singular_value`` is (for the message).
        remedy: What to pass to go through the singularity.
    """

    def __init__(
        self,
        time: float | None,
        singular_value: float,
        threshold: float,
        frame: str,
        *,
        quantity: str = "the smallest singular value of the Jacobian",
        remedy: str = "pass damping= (damped least squares) to go through it, or change the path",
    ) -> None:
        self.time = None if time is None else float(time)
        self.singular_value = float(singular_value)
        self.threshold = float(threshold)
        self.frame = frame
        self.quantity = quantity
        self.remedy = remedy
        where = "" if self.time is None else f" at t = {self.time:.9g} s"
        super().__init__(
            f"singular configuration{where}: {quantity} of frame '{frame}' is "
            f"{self.singular_value:.3g} < threshold {self.threshold:.3g}; {remedy}"
        )


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


class UnsupportedModel(InvalidParameter):
    """A Pinocchio model that a compiled kernel cannot handle (an unsupported joint type).

    Callers catch it and fall back to Pinocchio's own algorithms.

    Attributes:
        joint: The name of the offending joint.
        joint_type: Its Pinocchio type (``JointModelHelicalX``, ...).
        supported: The joint types that are supported.
    """

    def __init__(self, joint: str, joint_type: str, supported: Iterable[str]) -> None:
        self.joint = joint
        self.joint_type = joint_type
        self.supported = list(supported)
        super().__init__(
            f"joint '{joint}' has type {joint_type}, which the compiled kernels do not support; "
            f"supported types: {', '.join(self.supported)}"
        )


class OutputExists(PinextError, FileExistsError):
    """An output path names a file that pinext did not write (it is not a previous report of
    the same kind); it is kept unless overwriting is asked for (``--force``, ``force=True``).

    Attributes:
        path: The existing file.
    """

    def __init__(self, path: str, what: str) -> None:
        self.path = str(path)
        super().__init__(
            f"{what} {self.path} exists and was not written by pinext; choose another path, "
            "or pass --force (force=True) to overwrite it"
        )


class MeshNotFound(PinextError, FileNotFoundError):
    """A mesh of a robot description that none of the searched folders holds.

    Attributes:
        mesh: The mesh's ``package://<package>/<path>`` URI.
        roots: The folders searched, in order (``<root>/<package>/<path>`` was tried).
    """

    def __init__(self, mesh: str, roots: Iterable[str]) -> None:
        self.mesh = mesh
        self.roots = list(roots)
        searched = ", ".join(self.roots) if self.roots else "none"
        super().__init__(
            f"mesh {mesh} not found; searched the roots: {searched}. Pass the folder that "
            "holds its package as package_dirs= (or add it to $ROS_PACKAGE_PATH)"
        )

    def __str__(self) -> str:  # OSError would format its own message
        return str(self.args[0])


class InfeasibleDesign(PinextError):
    """No design of an optimization meets every limit (:func:`pinext.planning.optimize`).

    Attributes:
        constraint: The limit closest to being met in the best design found.
        margin: Its margin there (negative: by how much the limit is exceeded, as a fraction
            of the limit).
        design: That best design (variable name -> value).
        evaluations: The designs evaluated.
        violated: Every violated limit of that design -> its margin.
    """

    def __init__(
        self,
        constraint: str,
        margin: float,
        design: dict,
        evaluations: int,
        violated: dict[str, float],
    ) -> None:
        self.constraint = constraint
        self.margin = float(margin)
        self.design = dict(design)
        self.evaluations = int(evaluations)
        self.violated = dict(violated)
        listing = ", ".join(f"'{k}' {100 * v:+.1f} %" for k, v in self.violated.items())
        super().__init__(
            f"no design meets every limit after {self.evaluations} evaluations; the least "
            f"violating design {self.design} still exceeds {len(self.violated)} limit(s) "
            f"(margins: {listing}); the constraint closest to feasible is '{constraint}', "
            f"exceeded by {100 * -self.margin:.3g} % of its limit: widen the variables' "
            "ranges (larger motors, other ratios) or relax the limits"
        )
