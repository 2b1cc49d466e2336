"""Keep Numba's disk cache of the compiled kernels consistent with their sources.

Numba keys a cached function on its own source file only: a kernel that inlines another one
(the integrator inlines the right-hand side, which inlines the ABA) would keep stale machine
code after a change in the inlined file. A digest of every source of this package, stored next
to the cache, discards the whole cache when any of them changes. The Python-side driver
(:data:`DRIVERS`: no kernel is defined there) does not count, so that editing it costs no
recompilation.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The package's sources that define no compiled kernel.
DRIVERS = frozenset({"_cache.py", "path.py"})


def invalidate_stale_cache() -> None:
    """Delete the package's cached kernels when its sources changed since they were cached
    (nothing to do, or nothing possible on a read-only installation)."""
    digest = hashlib.sha256()
    for source in sorted(HERE.glob("*.py")):
        if source.name not in DRIVERS:
            digest.update(source.read_bytes())
    cache = HERE / "__pycache__"
    stamp = cache / "pinext_kernels.sha256"
    try:
        if stamp.read_text() == digest.hexdigest():
            return
    except OSError:
        pass
    try:
        for stale in (*cache.glob("*.nbi"), *cache.glob("*.nbc")):
            stale.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:
        return
