"""Reports of an optimal design (:func:`~pinext.planning.optimize`): the Pareto front as a
plot; the HTML page (the result's tables, :meth:`OptimalDesign.sections`: the chosen design,
the criteria, every margin with the limits that bind, the catalogue neighbours that fail; then
the ``pinext design`` report of the chosen drives); and :func:`write_design_spec`, the result
as a ``pinext design`` specification (:meth:`OptimalDesign.table` is the text report).
"""

from __future__ import annotations

import html as html_lib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..drives import ElasticTransmission, Gear
from ..exceptions import InvalidParameter
from .catalogue import _read_toml
from .drive_problem import DriveProblem
from .elastic_tracking import ElasticTracking
from .optimize_problem import BINDING, OptimalDesign

__all__ = ["pareto_figure", "write_design_spec", "write_optimize_html"]


def pareto_figure(result: OptimalDesign) -> Any:
    """The Pareto front (matplotlib Figure), the chosen design marked."""
    from matplotlib.figure import Figure

    if not result.pareto or result.problem is None:
        raise InvalidParameter("the result has no Pareto front (optimize with two criteria)")
    first, second = list(result.problem.minimize)
    fig = Figure(figsize=(6, 4.2), layout="constrained")
    ax = fig.subplots()
    ax.plot(
        [p.criteria[first] for p in result.pareto],
        [p.criteria[second] for p in result.pareto],
        "o-",
        label="Pareto front (ε-constraint)",
    )
    ax.plot(result.criteria[first], result.criteria[second], "r*", ms=14, label="chosen")
    ax.set_xlabel(first)
    ax.set_ylabel(second)
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def write_optimize_html(
    result: OptimalDesign,
    path: str | Path,
    *,
    title: str | None = None,
    samples: int | None = None,
    playback: Callable[..., Path] | None = None,
) -> Path:
    """Write the self-contained HTML report: the optimization's tables (and Pareto plot),
    then the ``pinext design`` report of the chosen drives. A design verified by simulation
    (:class:`~pinext.planning.ElasticTracking`) gets its run as a 3-D playback, written next
    to the report (``<stem>_playback.html``, self-contained) by ``playback`` and linked from
    it.

    Args:
        result: From :func:`~pinext.planning.optimize` of a :class:`DriveProblem`.
        path: Output file.
        title: Page title (default the problem's).
        samples: Samples of the motion for the drive report (default the problem's).
        playback: ``playback(trajectory, path, system) -> path``, the writer of the verifying
            simulation's page (:func:`pinext.visualization.export_html`, which ``pinext
            optimize`` passes; the design layer does not import the viewer); None: no
            playback.

    Returns:
        The path written.
    """
    from .design_report import _png, _table, write_design_html

    problem = result.problem
    if not isinstance(problem, DriveProblem):
        raise InvalidParameter(
            "write_optimize_html needs the result of a DriveProblem (drives to report on); "
            f"got {type(problem).__name__}: use result.table() for the text report"
        )
    sections = [
        f"<p>Optimal design (Vukobratović &amp; Potkonjak, §20.4.1): objective "
        f"{result.objective:.6g} after {result.evaluations} evaluations, "
        f"{html_lib.escape(result.method)}. Margins are 1 − value/limit; a margin under "
        f"{100 * BINDING:.0f} % binds.</p>"
    ]
    for name, (header, rows) in result.sections().items():
        classes = ["fail" if "FAIL" in row else ("pass" if "pass" in row else "") for row in rows]
        sections += [
            f"<h2>{html_lib.escape(name.capitalize())}</h2>",
            _table(header, rows, classes),
        ]
    if result.pareto:
        sections.append(
            f'<img alt="Pareto front" src="data:image/png;base64,{_png(pareto_figure(result))}">'
        )
    if playback and result.verifications and isinstance(problem.verify, ElasticTracking):
        movie = _playback(result, problem.verify, Path(path), playback)
        sections.append(
            f'<h2>The chosen design, simulated</h2><p><a href="{html_lib.escape(movie.name)}">'
            "3-D playback</a> of the run that verified it: elastic transmissions under "
            "feedforward and motor PD (its margins are the <code>verify:</code> rows).</p>"
        )
    sections.append("<h2>The chosen design, checked (pinext design)</h2>")
    report, check = problem.check_of(result.design, samples)
    return write_design_html(
        report,
        check,
        path,
        title=title or problem.title,
        limits=problem.limits_of(result.design),
        sections=sections,
    )


def _playback(
    result: OptimalDesign, verify: ElasticTracking, path: Path, export_html: Callable[..., Path]
) -> Path:
    """The verifying run of the chosen design (the last run of ``verify``, or run again) as
    a self-contained HTML animation next to ``path``."""
    if verify.last is None or verify.last[0] != result.design:
        verify.run(result.design)
    assert verify.last is not None
    _, trajectory, system = verify.last
    return export_html(trajectory, path.with_name(f"{path.stem}_playback.html"), system)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise InvalidParameter(f"cannot write {value!r} to TOML")


def _write_structure(result: OptimalDesign, problem: DriveProblem, table: dict) -> None:
    """The chosen link sections into ``[links.LINK]`` (``section``, its dimensions [m],
    ``density``, ``young_modulus``, ``sublinks``: the section moduli follow from them) and the
    payload into ``[payload]`` (``mass``, ``frame``), in place."""
    links = dict(table.get("links", {}))
    for link, section in problem.sections.items():
        entry = {k: v for k, v in links.get(link, {}).items() if k != "section_modulus"}
        entry.update(section=section.kind, **section.dims(result.design))
        entry.update(density=section.density, young_modulus=section.young_modulus)
        entry["sublinks"] = int(section.spec.sublinks)
        links[link] = entry
    if links:
        table["links"] = links
    if problem.payload is not None:
        mass = problem.payload.mass_of(result.design)
        table["payload"] = {"mass": float(mass), "frame": problem.payload.frame}


def write_design_spec(result: OptimalDesign, path: str | Path) -> Path:
    """Write the chosen design as a ``pinext design`` specification (the source file's
    robot, motion and limits; ``[drives.JOINT]`` with the chosen catalogue motor and ratio;
    ``[links.LINK]`` with the chosen section of a flexible link; ``[payload]``); ``pinext
    design`` reloads the same robot and drives. Paths are rewritten relative to the new file.

    Raises:
        InvalidParameter: The result is not of a :class:`DriveProblem` read from a file.
    """
    problem = result.problem
    if not isinstance(problem, DriveProblem) or problem.source is None:
        raise InvalidParameter(
            "write_design_spec needs the result of a specification file (pinext optimize "
            "SPEC.toml); write the drives of a Python problem with problem.drives_of(design)"
        )
    path = Path(path)
    source = problem.source
    table = _read_toml(source)
    for key in ("variables", "objective", "html", "harmonic_drives", "verify"):
        table.pop(key, None)
    for key in ("robot", "catalogue", "extensions"):
        if isinstance(table.get(key), str):
            absolute = (source.parent / table[key]).resolve()
            table[key] = os.path.relpath(absolute, path.parent.resolve())
    drives = dict(table.get("drives", {}))
    for joint in problem.fixed:
        entry: dict[str, Any] = dict(drives.get(joint, {}))
        if f"{joint}.motor" in result.design:
            entry["catalogue_motor"] = result.design[f"{joint}.motor"]
            entry.pop("motor", None)
        transmission = problem.drives_of(result.design)[joint].transmission
        if isinstance(transmission, ElasticTransmission):
            entry.pop("gear", None)
            entry["elastic_transmission"] = {
                "ratio": float(transmission.ratio),
                "stiffness": float(transmission.stiffness),
                "damping": float(transmission.damping),
            }
            if transmission.input_inertia:
                entry["elastic_transmission"]["input_inertia"] = float(transmission.input_inertia)
        if f"{joint}.harmonic_drive" in result.design:  # its ratings as the joint's limits
            size = problem.harmonic_drives[result.design[f"{joint}.harmonic_drive"]]
            ratings = {"gear_rated_torque": size.rated_torque, "gear_peak_torque": size.peak_torque}
            limits = dict(table.get("limits", {}))
            limits[joint] = {
                **{k: v for k, v in ratings.items() if v is not None},
                **limits.get(joint, {}),
            }
            table["limits"] = limits
        elif isinstance(transmission, Gear):
            entry["gear"] = {
                "ratio": float(transmission.ratio),
                "efficiency": float(transmission.efficiency),
            }
        drives[joint] = entry
    table["drives"] = drives
    _write_structure(result, problem, table)
    lines = [f"# written by pinext optimize from {source.name}: objective {result.objective:.6g}"]
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    lines += [f"{k} = {_toml(v)}" for k, v in scalars.items()]
    for key, value in table.items():
        if not isinstance(value, dict):
            continue
        if key in ("drives", "limits", "links"):
            for name, sub in value.items():
                lines += ["", f"[{key}.{name}]"]
                lines += [f"{k} = {_toml(v)}" for k, v in sub.items()]
        else:
            lines += ["", f"[{key}]"]
            lines += [f"{k} = {_toml(v)}" for k, v in value.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
