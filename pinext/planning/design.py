"""Design specifications (Vukobratović & Potkonjak, §20.4.1: "the limits that we impose in
the design ... are given to the computer and the software package checks the calculated
characteristics against these limits"): :func:`read_design` reads a TOML specification (robot,
motion, catalogue, drives, limits) once for every tool, and :func:`run_design` runs it for the
``pinext design`` command.

The checks themselves are in :mod:`.design_check`, the motor catalogues in :mod:`.catalogue`;
their names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..drives import Drive, drive_from_spec
from ..exceptions import (
    ExtensionError,
    FileFormatError,
    InvalidParameter,
    NameNotFound,
    OutputExists,
)
from ..validation import flag, integer, real, vector
from .catalogue import CatalogueMotor, _read_toml, catalogue_drive, load_catalogue
from .design_check import CheckRow, DesignCheck, DriveLimits, LinkLimits, check_design
from .drive_sizing import MAX_SAMPLES, DriveReport, drive_requirements
from .link_variables import LINK_KEYS, parse_link, parse_payload
from .motion import RestToRest
from .natural_frequency import frequency_row, min_frequency_limit
from .splines import Spline3m

__all__ = [
    "CatalogueMotor",
    "CheckRow",
    "DesignCheck",
    "DesignResult",
    "DesignSpec",
    "DriveLimits",
    "LinkLimits",
    "catalogue_drive",
    "check_design",
    "load_catalogue",
    "read_design",
    "run_design",
]


class DesignResult(NamedTuple):
    """What :func:`run_design` computed."""

    report: DriveReport
    check: DesignCheck
    html: Path | None
    """The HTML report written, if any."""


#: Keys of a design specification's top level.
TOP_KEYS = (
    "title",
    "robot",
    "extensions",
    "catalogue",
    "html",
    "gravity",
    "samples",
    "motion",
    "drives",
    "limits",
    "links",
    "payload",
    "min_natural_frequency",
)
#: Keys of its ``[motion]`` table, per law.
MOTION_KEYS = {
    "rest_to_rest": ("law", "q0", "dq", "duration"),
    "spline": ("law", "times", "positions", "v0", "a0", "vf", "af"),
}
#: Marks an HTML file as a pinext design report: a later run may overwrite it.
REPORT_MARKER = '<meta name="generator" content="pinext design">'
#: Most samples of the motion in a specification.


def _unknown(path: Path, where: str, table: Mapping[str, Any], valid: tuple[str, ...]) -> None:
    unknown = [key for key in table if key not in valid]
    if unknown:
        import difflib

        hints = [difflib.get_close_matches(key, valid, n=1) for key in unknown]
        guess = "".join(
            f" ('{k}': did you mean '{h[0]}'?)" for k, h in zip(unknown, hints, strict=True) if h
        )
        raise FileFormatError(
            str(path), where, f"unknown keys {unknown}{guess}; valid keys: {', '.join(valid)}"
        )


def _checked(path: Path, where: str, check: Any, *args: Any, **kwargs: Any) -> Any:
    """``check(*args, **kwargs)`` with its InvalidParameter named by file and key."""
    try:
        return check(*args, **kwargs)
    except InvalidParameter as err:
        raise ExtensionError(str(path), where, str(err)) from None


def _top_level(spec: Mapping[str, Any], path: Path) -> None:
    """Refuse unknown keys and values of the wrong kind at the top level of a specification."""
    _unknown(path, "top level", spec, TOP_KEYS)
    if "robot" not in spec or "motion" not in spec:
        raise FileFormatError(str(path), "top level", "needs 'robot' and a [motion] table")
    for key in ("title", "robot", "catalogue", "html"):
        if key in spec and not isinstance(spec[key], str):
            raise FileFormatError(str(path), key, f"must be a text, got {spec[key]!r}")
    if "extensions" in spec and not (
        spec["extensions"] is False or isinstance(spec["extensions"], str)
    ):
        raise FileFormatError(
            str(path), "extensions", f"must be a file name or false, got {spec['extensions']!r}"
        )
    for key in ("motion", "drives", "limits", "links", "payload"):
        if key in spec and not isinstance(spec[key], dict):
            raise FileFormatError(str(path), key, f"must be a table [{key}], got {spec[key]!r}")
    if "gravity" in spec:
        _checked(path, "gravity", flag, "gravity", spec["gravity"])
    if "samples" in spec:
        _checked(path, "samples", integer, "samples", spec["samples"], low=2, high=MAX_SAMPLES)


def _motion(spec: Mapping[str, Any], path: Path, n: int) -> Any:
    """The motion law of a ``[motion]`` table for a robot of ``n`` joints."""
    kind = spec.get("law", "rest_to_rest")
    if kind not in MOTION_KEYS:
        raise FileFormatError(
            str(path), "motion.law", f"must be 'rest_to_rest' or 'spline', got {kind!r}"
        )
    _unknown(path, "motion", spec, MOTION_KEYS[kind])
    try:
        if kind == "rest_to_rest":
            q0 = _checked(path, "motion.q0", vector, "q0", spec["q0"], n, what="one per joint")
            dq = _checked(path, "motion.dq", vector, "dq", spec["dq"], n, what="one per joint")
            duration = _checked(
                path,
                "motion.duration",
                real,
                "duration",
                spec["duration"],
                unit="[s]",
                low=0.0,
                strict=True,
            )
            return RestToRest(q0, dq, duration)
        positions = spec["positions"]
        if not isinstance(positions, list):
            raise FileFormatError(str(path), "motion.positions", "must be a list of knot rows")
        positions = [None if isinstance(p, str) else p for p in positions]
        return _checked(
            path,
            "motion",
            Spline3m,
            spec["times"],
            positions,
            spec.get("v0", 0.0),
            spec.get("a0", 0.0),
            spec.get("vf", 0.0),
            spec.get("af", 0.0),
        )
    except KeyError as err:
        raise FileFormatError(str(path), "motion", f"missing key {err}") from None


def output_path(target: Path, where: str, source: Path, *, force: bool = False) -> Path:
    """Where to write a report: refuse a folder, and a file that pinext did not write unless
    ``force`` (a previous report, with :data:`REPORT_MARKER`, is overwritten).

    Raises:
        FileFormatError: ``target`` is a folder.
        OutputExists: ``target`` is another file, and ``force`` is false.
    """
    if target.is_dir():
        raise FileFormatError(
            str(source), where, f"{target} is a folder; give a file name such as report.html"
        )
    if target.exists() and not force:
        with open(target, "rb") as stream:
            head = stream.read(4096)
        if REPORT_MARKER.encode() not in head:
            raise OutputExists(str(target), f"{where}:")
    return target


class DesignSpec(NamedTuple):
    """A design specification read by :func:`read_design` (every path resolved)."""

    path: Path
    """The TOML file."""
    table: dict[str, Any]
    """The file's tables as read (``[variables]``, ``[objective]``... for the tools that
    extend the format)."""
    title: str
    """Report title."""
    robot: Any
    """The :class:`pinext.Robot`."""
    motion: Any
    """The prescribed motion law."""
    catalogue: dict[str, CatalogueMotor]
    """The motor catalogue (empty without one)."""
    drives: dict[str, Drive]
    """Joint name -> drive (the URDF's, then the file's ``[drives]``)."""
    limits: dict[str, DriveLimits]
    """Joint name -> limits (catalogue ratings, then ``[limits]``)."""
    section_modulus: dict[str, Any]
    """Flexible link name -> section modulus [m^3]."""
    link_limits: dict[str, LinkLimits]
    """Flexible link name -> limits."""
    gravity: bool
    """Include gravity."""
    samples: int
    """Samples of the motion."""
    min_natural_frequency: float | None = None
    """Lower limit of the first natural frequency [Hz] (rigid joints and motors held, the
    elastic transmissions' springs in place), or None."""

    def check(self, report: DriveReport) -> DesignCheck:
        """:func:`~pinext.planning.check_design` of ``report`` against the specification's
        limits, with the first natural frequency's row when it has a lower limit."""
        check = check_design(report, self.limits, self.link_limits)
        if self.min_natural_frequency is not None:
            limit = self.min_natural_frequency
            check.rows.append(frequency_row(self.robot, self.motion, limit, drives=self.drives))
        return check

    def requirements(self, drives: Mapping[str, Drive] | None = None) -> DriveReport:
        """:func:`~pinext.planning.drive_requirements` of the specification (``drives``
        overriding its own)."""
        return _checked(
            self.path,
            "top level",
            drive_requirements,
            self.robot,
            self.motion,
            drives={**self.drives, **(drives or {})},
            gravity=self.gravity,
            section_modulus=self.section_modulus,
            samples=self.samples,
        )


def read_design(spec_path: str | Path, *, extra: tuple[str, ...] = ()) -> DesignSpec:
    """Read a design specification (the format of :func:`run_design`): robot, motion,
    catalogue, drives and limits, checked before any computation.

    Args:
        spec_path: The TOML file.
        extra: Further top-level tables that the calling tool reads itself (e.g.
            ``("variables", "objective")`` for :func:`~pinext.planning.optimize`).

    Returns:
        :class:`DesignSpec`.

    Raises:
        FileFormatError: Malformed file, unknown keys or motors, values of the wrong kind or
            out of range (the message names the file and the key).
    """
    from ..robot import load_urdf

    path = Path(spec_path)
    table = _read_toml(path)
    base = path.parent
    _top_level({k: v for k, v in table.items() if k not in extra}, path)
    extensions = table.get("extensions")
    if isinstance(extensions, str):
        extensions = base / extensions
    robot = load_urdf(base / table["robot"], extensions=extensions)
    catalogue = load_catalogue(base / table["catalogue"]) if "catalogue" in table else {}
    drives: dict[str, Drive] = dict(robot.drives)
    limits: dict[str, DriveLimits] = {}
    for joint, drive_table in table.get("drives", {}).items():
        parts = dict(drive_table)
        name = parts.pop("catalogue_motor", None)
        if name is not None:
            if name not in catalogue:
                raise NameNotFound("catalogue motor", name, list(catalogue))
            drives[joint] = catalogue_drive(
                joint, catalogue[name], parts, robot.transmissions.get(joint)
            )
            limits[joint] = catalogue[name].limits
        else:
            drives[joint] = drive_from_spec(joint, parts, robot.transmissions.get(joint))
    for joint, limit_table in table.get("limits", {}).items():
        merged = {**(limits[joint].__dict__ if joint in limits else {}), **limit_table}
        try:
            limits[joint] = DriveLimits(**merged)
        except (TypeError, InvalidParameter) as err:
            raise FileFormatError(str(path), f"limits.{joint}", str(err)) from None
    moduli, link_limits = {}, {}
    for link, link_table in table.get("links", {}).items():
        link_table = dict(link_table)
        if "section_modulus" in link_table:
            moduli[link] = link_table.pop("section_modulus")
        try:
            link_limits[link] = LinkLimits(
                **{k: v for k, v in link_table.items() if k not in LINK_KEYS}
            )
        except (TypeError, InvalidParameter) as err:
            raise FileFormatError(str(path), f"links.{link}", str(err)) from None
    robot = _sections(path, robot, table.get("links", {}), moduli, extensions)
    if "payload" in table and "payload" not in extra:
        _payload(path, robot, table["payload"])
    try:
        frequency = min_frequency_limit("min_natural_frequency", table.get("min_natural_frequency"))
    except InvalidParameter as err:
        raise FileFormatError(str(path), "min_natural_frequency", str(err)) from None
    return DesignSpec(
        path=path,
        table=table,
        title=table.get("title", f"pinext design: {path.stem}"),
        robot=robot,
        motion=_motion(table["motion"], path, robot.rigid_model.nq),
        catalogue=catalogue,
        drives=drives,
        limits=limits,
        section_modulus=moduli,
        link_limits=link_limits,
        gravity=table.get("gravity", True),
        samples=table.get("samples", 801),
        min_natural_frequency=frequency,
    )


def _sections(
    path: Path, robot: Any, links: Mapping[str, Any], moduli: dict[str, Any], extensions: Any
) -> Any:
    """The robot with the sections of its ``[links.LINK]`` tables (``section``, its
    dimensions [m], ``density``, ``young_modulus``, ``sublinks``: the written result of
    ``pinext optimize``), their section moduli put in ``moduli``."""
    from ..robot import load_urdf

    specs = {spec.link: spec for spec in robot.flexible}
    rebuilt = {}
    for link, link_table in links.items():
        section = {k: v for k, v in link_table.items() if k in LINK_KEYS}
        if not section:
            continue
        where = f"links.{link}"
        if link not in specs:
            raise FileFormatError(
                str(path), where, str(NameNotFound("flexible link", link, list(specs)))
            )
        if link in moduli:
            raise FileFormatError(str(path), where, "give section_modulus or a section, not both")
        try:
            found, variables = parse_link(robot, link, section, extensions, where=where)
        except InvalidParameter as err:
            raise FileFormatError(str(path), where, str(err)) from None
        if variables:
            raise FileFormatError(
                str(path), where, "a section of a design takes numbers [m]; ranges and lists "
                f"are design variables of pinext optimize ({', '.join(v.name for v in variables)})"
            )  # fmt: skip
        rebuilt[link] = found.flexible({})
        moduli[link] = found.section_modulus({})
    if not rebuilt:
        return robot
    specs.update(rebuilt)
    return load_urdf(robot.path, flexible=list(specs.values()), extensions=extensions)


def _payload(path: Path, robot: Any, table: Any) -> None:
    """Add the ``[payload]`` table (``mass`` [kg], ``frame``) to ``robot``."""
    try:
        payload, variables = parse_payload(robot, table)
    except (InvalidParameter, NameNotFound) as err:
        raise FileFormatError(str(path), "payload", str(err)) from None
    if variables:
        raise FileFormatError(
            str(path), "payload", "a design's payload mass is a number [kg]; ranges and lists "
            "are design variables of pinext optimize ([variables.payload])"
        )  # fmt: skip
    payload.add_to(robot, {})


def run_design(
    spec_path: str | Path, html: str | Path | None = None, *, force: bool = False
) -> DesignResult:
    """Run a design specification: drive requirements, checks and the HTML report.

    The TOML file (paths relative to it)::

        title = "..."                      # optional
        robot = "arm.urdf"                 # URDF (its <pinext> block / sidecar is read)
        extensions = false                 # optional: sidecar file, or false to ignore them
        catalogue = "dc_motors.toml"       # optional motor catalogue
        html = "design.html"               # optional report (default <spec stem>.html)
        gravity = true
        samples = 801
        min_natural_frequency = 12.0       # optional lower limit [Hz] of f1, motors held
        [motion]                           # law = "rest_to_rest" (q0, dq, duration) or
        law = "rest_to_rest"               # "spline" (times, positions with "free" at the
        q0 = [...]; dq = [...]; duration = 1.5   # 2nd and 2nd-to-last knots, v0, a0, vf, af)
        [drives.JOINT]
        catalogue_motor = "NAME"           # or a [drives.JOINT.motor] table
        gear = { ratio = 100, efficiency = 0.9 }   # or elastic_transmission = {...}
        [limits.JOINT]                     # optional, overrides the catalogue's ratings
        max_winding_temperature = 100.0
        [links.LINK]                       # flexible links of the URDF
        section_modulus = 1.7e-7           # or a section that rebuilds the link:
        max_stress = 2e8                   # section = "tube", outer_diameter, wall_thickness
        max_tip_deflection = 0.01          # (or "rectangle", width, height) [m], density,
                                           # young_modulus, sublinks
        [payload]                          # optional point mass [kg] at a frame
        mass = 1.5
        frame = "tip"

    Args:
        spec_path: The TOML file.
        html: Where to write the HTML report (overrides the file's ``html``); relative paths
            are taken from the current directory (the file's ``html`` from the file's folder).
        force: Overwrite an existing file that is not a previous pinext report.

    Returns:
        :class:`DesignResult`.

    Raises:
        FileFormatError: Malformed file, unknown keys or motors, values of the wrong kind or
            out of range (the message names the file and the key).
        OutputExists: The report would overwrite a file that pinext did not write.
    """
    from .design_report import write_design_html

    path = Path(spec_path)
    spec = _read_toml(path)
    _top_level(spec, path)
    if html is not None:
        target = output_path(Path(html), "--html", path, force=force)
    else:
        target = output_path(
            path.parent / spec.get("html", f"{path.stem}.html"), "html", path, force=force
        )
    design = read_design(path)
    report = design.requirements()
    check = design.check(report)
    write_design_html(report, check, target, title=design.title, limits=design.limits)
    return DesignResult(report, check, target)
