"""Reports of an optimal design (:func:`~pinext.planning.optimize`): the chosen design, the
criteria, every constraint's margin with the limits that bind, the catalogue neighbours that
fail, the Pareto front as a plot; the HTML page adds the ``pinext design`` report of the chosen
drives, and :func:`write_design_spec` writes the result as a ``pinext design`` specification.
"""

from __future__ import annotations

import html as html_lib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..drives import ElasticTransmission, Gear
from ..exceptions import InvalidParameter

if TYPE_CHECKING:
    from .optimize import OptimalDesign

__all__ = ["pareto_figure", "text_report", "write_design_spec", "write_optimize_html"]

#: A margin below this binds (the limit is active) [fraction of the limit].
BINDING = 0.05


def _value(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _columns(rows: list[list[str]], header: list[str]) -> str:
    cells = [header, *rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _sections(result: OptimalDesign) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Title -> (header, rows) of each table of the report."""
    out = {
        "design": (["variable", "value"], [[k, _value(v)] for k, v in result.design.items()]),
        "criteria": (["criterion", "value"], [[k, f"{v:.6g}"] for k, v in result.criteria.items()]),
        "constraints": (
            ["constraint", "margin", ""],
            [
                [
                    k,
                    f"{100 * m:+.2f} %",
                    "binds" if 0 <= m < BINDING else ("FAIL" if not m >= 0 else ""),
                ]
                for k, m in sorted(result.constraints.items(), key=lambda kv: kv[1])
            ],
        ),
    }
    if result.neighbours:
        out["catalogue neighbours (one size smaller)"] = (
            ["variable", "smaller", "best of its group", "result", "tightest constraint", "margin"],
            [
                [
                    n.variable,
                    str(n.design[n.variable]),
                    ", ".join(
                        f"{k}={_value(v)}"
                        for k, v in n.design.items()
                        if k.split(".")[0] == n.variable.split(".")[0] and k != n.variable
                    ),
                    "pass" if n.feasible else "FAIL",
                    n.constraint,
                    f"{100 * n.margin:+.2f} %",
                ]
                for n in result.neighbours
            ],
        )
    if result.pareto:
        names = list(result.problem.minimize) if result.problem is not None else []
        out["Pareto front"] = (
            [*names, "design"],
            [
                [
                    *(f"{p.criteria[c]:.6g}" for c in names),
                    ", ".join(f"{k}={_value(v)}" for k, v in p.design.items()),
                ]
                for p in result.pareto
            ],
        )
    return out


def text_report(result: OptimalDesign) -> str:
    """The plain-text report of :meth:`OptimalDesign.table`."""
    parts = [
        f"optimal design: objective {result.objective:.6g} after {result.evaluations} "
        f"evaluations ({result.method})"
        + (f"; {result.verifications} verified by simulation" if result.verifications else "")
    ]
    for title, (header, rows) in _sections(result).items():
        parts += ["", f"{title}:", _columns(rows, header)]
    return "\n".join(parts)


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


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html_lib.escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cls = ""
        if "FAIL" in row:
            cls = ' class="fail"'
        elif "pass" in row:
            cls = ' class="pass"'
        cells = "".join(f"<td>{html_lib.escape(c)}</td>" for c in row)
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def write_optimize_html(
    result: OptimalDesign, path: str | Path, *, title: str | None = None, samples: int | None = None
) -> Path:
    """Write the self-contained HTML report: the optimization's tables (and Pareto plot),
    then the ``pinext design`` report of the chosen drives.

    Args:
        result: From :func:`~pinext.planning.optimize` of a :class:`DriveProblem`.
        path: Output file.
        title: Page title (default the problem's).
        samples: Samples of the motion for the drive report (default the problem's).

    Returns:
        The path written.
    """
    from .design_report import _png, write_design_html
    from .optimize import DriveProblem

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
    for name, (header, rows) in _sections(result).items():
        sections += [f"<h2>{html_lib.escape(name.capitalize())}</h2>", _html_table(header, rows)]
    if result.pareto:
        sections.append(
            f'<img alt="Pareto front" src="data:image/png;base64,{_png(pareto_figure(result))}">'
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


def write_design_spec(result: OptimalDesign, path: str | Path) -> Path:
    """Write the chosen design as a ``pinext design`` specification (the source file's
    robot, motion and limits; ``[drives.JOINT]`` with the chosen catalogue motor and ratio);
    ``pinext design`` reloads it. Paths are rewritten relative to the new file.

    Raises:
        InvalidParameter: The result is not of a :class:`DriveProblem` read from a file.
    """
    from .design import _read_toml
    from .optimize import DriveProblem

    problem = result.problem
    if not isinstance(problem, DriveProblem) or problem.source is None:
        raise InvalidParameter(
            "write_design_spec needs the result of a specification file (pinext optimize "
            "SPEC.toml); write the drives of a Python problem with problem.drives_of(design)"
        )
    path = Path(path)
    source = problem.source
    table = _read_toml(source)
    for key in ("variables", "objective", "html"):
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
        elif isinstance(transmission, Gear):
            entry["gear"] = {
                "ratio": float(transmission.ratio),
                "efficiency": float(transmission.efficiency),
            }
        drives[joint] = entry
    table["drives"] = drives
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
