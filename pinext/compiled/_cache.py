"""Keep Numba's disk cache of the compiled kernels consistent with their sources.

Numba keys a cached function on its own source file only: a kernel that inlines another one
(the integrator inlines the right-hand side, which inlines the ABA) would keep stale machine
code after a change in the inlined file. Each kernel's cache key therefore also holds a
digest of its module's source and of every pinext source that module imports, directly or
through others (:func:`source_digest`, read by :class:`pinext.compiled.jit.cached`): after a
change, a kernel that inlines the changed source is simply not found and compiles again,
wherever the cache lives — beside the sources, in ``NUMBA_CACHE_DIR`` or in Numba's user-wide
cache of a read-only installation — and the kernels that do not inline it keep theirs.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
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


@functools.cache
def source_digest(source: Path) -> str:
    """The SHA-256 of ``source`` and of every pinext source it imports, directly or through
    others: part of the key under which each kernel of ``source`` is cached."""
    digest = hashlib.sha256()
    for dep in _closure(Path(source).resolve()):
        digest.update(dep.read_bytes())
    return digest.hexdigest()
