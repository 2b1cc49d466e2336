"""Sphinx configuration of pinext's API reference (``python -m sphinx -W -b html docs out``).

The API pages are written at build time, one per subpackage with one ``automodule`` (with
``:members:``) per module found in it, so new modules and public names appear without editing
the documentation.
"""

from __future__ import annotations

import pkgutil
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import pinext  # noqa: E402

project = "pinext"
author = "the pinext authors"
release = version = pinext.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"undoc-members": False, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True
exclude_patterns = [  # the tables are included by other pages
    "_build",
    "api/_*",
    "robot_zoo_table.md",
    "bench_simulate_table.md",
    "bench_contact_table.md",
]
html_theme = "alabaster"
suppress_warnings = ["ref.python"]

#: Subpackages with a page each; the top-level modules go on the "pinext" page.
SUBPACKAGES = [
    m.name for m in pkgutil.iter_modules(pinext.__path__) if m.ispkg and not m.name.startswith("_")
]


def _modules(package: str) -> list[str]:
    module = __import__(package, fromlist=["__path__"])
    return sorted(
        f"{package}.{m.name}"
        for m in pkgutil.iter_modules(module.__path__)
        if not m.name.startswith("_")
    )


def _page(title: str, package: str, modules: list[str]) -> str:
    lines = [title, "=" * len(title), "", f".. automodule:: {package}", ""]
    for name in modules:
        lines += [name, "-" * len(name), "", f".. automodule:: {name}", "   :members:", ""]
    return "\n".join(lines)


def _write_api_pages() -> None:
    api = HERE / "api"
    api.mkdir(exist_ok=True)
    top = [
        f"pinext.{m.name}"
        for m in pkgutil.iter_modules(pinext.__path__)
        if not m.ispkg and not m.name.startswith("_")
    ]
    pages = {"pinext": _page("pinext", "pinext", sorted(top))}
    for sub in SUBPACKAGES:
        pages[sub] = _page(f"pinext.{sub}", f"pinext.{sub}", _modules(f"pinext.{sub}"))
    for name, text in pages.items():
        path = api / f"{name}.rst"
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)


def _write_examples_page() -> None:
    import ast

    lines = [
        "Examples",
        "========",
        "",
        "Each script in ``examples/`` runs on its own (``python examples/NAME.py``) and writes",
        "to ``./out/``.",
        "",
    ]
    for script in sorted((HERE.parent / "examples").glob("*.py")):
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
        title = script.name
        lines += [title, "-" * len(title), "", doc.strip().splitlines()[0] if doc else "", ""]
        lines += [f".. literalinclude:: ../examples/{script.name}", "   :language: python", ""]
    text = "\n".join(lines)
    path = HERE / "examples.rst"
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


_INLINE = re.compile(r"(:math:`[^`]*`|``[^`]*``|`[^`]*`_?)")


def _escape_bars(app, what, name, obj, options, lines: list[str]) -> None:
    """Docstrings write norms as ``|x|``: outside math and literals, reST would read a
    substitution reference; escape the bars there (math keeps them)."""
    in_block, indent = False, 0
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if in_block:
            if stripped and len(line) - len(stripped) <= indent:
                in_block = False
            else:
                continue
        if stripped.startswith((".. math::", ".. code", "::")) or stripped.endswith("::"):
            in_block, indent = True, len(line) - len(stripped)
            continue
        if "|" in line and not stripped.startswith(("+", "|")):
            parts = _INLINE.split(line)
            lines[i] = "".join(
                part if k % 2 else part.replace("|", "\\|") for k, part in enumerate(parts)
            )


def setup(app) -> None:
    """Register the docstring hook."""
    app.connect("autodoc-process-docstring", _escape_bars)


_write_api_pages()
_write_examples_page()
