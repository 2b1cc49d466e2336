"""Keep Numba's disk cache of the compiled kernels consistent with their sources.

Numba keys a cached function on its own source file only: a kernel that inlines another one
(the integrator inlines the right-hand side, which inlines the ABA) would keep stale machine
code after a change in the inlined file. Each module of this package therefore gets a digest
of its own source and of every pinext source it imports, directly or through others; a
module whose digest changed since its kernels were cached loses its cached kernels, and the
others keep theirs. The Python-side driver (:data:`DRIVERS`: no kernel is defined there) has
no cached kernels, so editing it costs no recompilation.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The package's sources that define no compiled kernel.
DRIVERS = frozenset({"_cache.py", "notice.py", "path.py", "rows.py"})
_IMPORT = re.compile(r"^from (\.+)([\w.]*) import (.+)$", re.MULTILINE)


def _imports(source: Path) -> set[Path]:
    """The pinext sources that ``source`` imports with relative imports."""
    found = set()
    for dots, module, names in _IMPORT.findall(source.read_text()):
        base = source.parent
        for _ in range(len(dots) - 1):
            base = base.parent
        parts = [p for p in module.split(".") if p]
        candidates = [base.joinpath(*parts)] if parts else []
        if not parts:  # from . import a, b
            candidates = [base / n.strip().split(" ")[0] for n in names.strip("()").split(",")]
        for stem in candidates:
            path = stem.with_suffix(".py") if stem.suffix != ".py" else stem
            if path.is_file():
                found.add(path)
            elif (stem / "__init__.py").is_file():
                found.add(stem / "__init__.py")
    return found


def _closure(source: Path) -> list[Path]:
    """``source`` and every pinext source it imports, directly or not, sorted."""
    seen, todo = {source}, [source]
    while todo:
        for dep in _imports(todo.pop()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return sorted(seen)


def invalidate_stale_cache(here: Path = HERE) -> None:
    """Delete the cached kernels of each module of the package in ``here`` whose sources
    changed since they were cached (nothing to do, or nothing possible on a read-only
    installation)."""
    cache = here / "__pycache__"
    for source in sorted(here.glob("*.py")):
        if source.name in DRIVERS or source.name == "__init__.py":
            continue
        digest = hashlib.sha256()
        for dep in _closure(source):
            digest.update(dep.read_bytes())
        stamp = cache / f"{source.stem}.pinext.sha256"
        try:
            if stamp.read_text() == digest.hexdigest():
                continue
        except OSError:
            pass
        try:
            for stale in (*cache.glob(f"{source.stem}.*.nbi"), *cache.glob(f"{source.stem}.*.nbc")):
                stale.unlink(missing_ok=True)
            cache.mkdir(exist_ok=True)
            stamp.write_text(digest.hexdigest())
        except OSError:
            continue
