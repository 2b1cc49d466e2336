"""The kernels' disk cache (:mod:`pinext.compiled.jit`): a new process loads the cached machine
code without parsing its bitcode, computes what the compiling process computed bit for bit, and
still links a loaded kernel into a kernel it compiles later."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext import compiled

from .conftest import pendulum_urdf

pytestmark = pytest.mark.skipif(not compiled.enabled(), reason="the compiled path is off")
BOTH_PATHS = False  # about the compiled kernels: the Python path has none

#: Run in a new process: a pendulum on the compiled path, its final state (hex) and whether
#: DOP853's kernel came from the cache with its bitcode left unparsed.
SIMULATION = """
import json, sys
import numpy as np
import pinext as px
from pinext.compiled import dop853

robot = px.load_urdf(sys.argv[1])
system = px.System(robot)
x0 = system.initial_state(q=np.array([0.3, -0.2, 0.1]))
traj = px.simulate(system, 0.5, x0=x0, method="DOP853", progress=False)
libraries = [o.library for o in dop853.advance.overloads.values()]
print(json.dumps({
    "x": [float(v).hex() for v in traj.x[-1]],
    "lazy": [type(lib).__name__ == "_Library" and lib._bitcode is not None for lib in libraries],
}))
"""

#: Run twice in new processes sharing a cache folder: a helper compiled (no Python entry point:
#: it is only inlined) and cached by the first, loaded by the second, then inlined into a new
#: uncached kernel; then called from Python.
LINKING = """
import json
import numba
import numpy as np
from pinext.compiled.spatial import motion_cross

v, m, out = np.arange(6.0).reshape(1, 6), np.arange(6.0, 12.0).reshape(1, 6), np.zeros((1, 6))
motion_cross.compile(tuple(numba.typeof(a) for a in (v, 0, m, 0, out, 0)))
result = next(iter(motion_cross.overloads.values()))
library = result.library
lazy = type(library).__name__ == "_Library" and library._bitcode is not None

@numba.njit
def once(v, m, out):
    motion_cross(v, 0, m, 0, out, 0)

@numba.njit
def twice(v, m, out):
    motion_cross(v, 0, m, 0, out, 0)
    out[0] *= 2.0

once(v, m, out)
doubled = np.zeros((1, 6))
twice(v, m, doubled)
found = library.get_pointer_to_function(result.fndesc.mangled_name) != 0
entry = library.get_pointer_to_function(result.fndesc.llvm_cpython_wrapper_name) != 0
from_python = np.zeros((1, 6))
motion_cross(v, 0, m, 0, from_python, 0)  # through a twin with a Python entry point
print(json.dumps({"out": out[0].tolist(), "doubled": doubled[0].tolist(), "lazy": lazy,
                  "found": found, "entry": entry, "from_python": from_python[0].tolist()}))
"""


def _run(script: str, *args: str, env: dict | None = None) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_new_process_runs_the_cached_kernels_bit_for_bit_without_parsing_their_bitcode(
    tmp_path,
):
    urdf = tmp_path / "pendulum.urdf"
    urdf.write_text(pendulum_urdf())
    robot = px.load_urdf(urdf)
    system = px.System(robot)
    x0 = system.initial_state(q=np.array([0.3, -0.2, 0.1]))
    here = px.simulate(system, 0.5, x0=x0, method="DOP853", progress=False).x[-1]
    there = _run(SIMULATION, str(urdf))  # the cache now holds every kernel this run needs
    assert there["lazy"] and all(there["lazy"])
    assert [float.fromhex(v) for v in there["x"]] == here.tolist()


def test_a_kernel_loaded_without_its_bitcode_still_links_into_a_new_kernel(tmp_path):
    """The first process compiles and caches the helper; the second loads it lazily and
    inlines it into a kernel it compiles (the bitcode parsed then), and still finds the
    helper's own symbol by name afterwards. The helper has no Python entry point; called from
    Python, it runs through a twin that has one (not a jump to a null address)."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    first, second = _run(LINKING, env=env), _run(LINKING, env=env)
    assert not first["lazy"] and second["lazy"]
    assert first["found"] and second["found"]  # its symbols, once linked, as Numba's own
    assert not first["entry"] and not second["entry"]  # no Python wrapper compiled for it
    v, m = np.arange(6.0), np.arange(6.0, 12.0)
    expected = (pin.Motion(v[:3], v[3:]).cross(pin.Motion(m[:3], m[3:]))).vector
    for result in (first, second):
        np.testing.assert_allclose(result["out"], expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(result["doubled"], 2.0 * expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(result["from_python"], expected, rtol=0, atol=1e-12)


#: A package of two modules: ``top.twice`` inlines ``low.value``, each a cached kernel.
LOW = "from pinext.compiled.jit import cached\n\n\n@cached()\ndef value():\n    return {}\n"
TOP = """from pinext.compiled.jit import cached

from .low import value


@cached()
def twice():
    return 2.0 * value()
"""
RUN_TOP = """
import json
from toy.top import twice
print(json.dumps({"twice": twice(), "cached": bool(twice.stats.cache_hits)}))
"""


@pytest.mark.parametrize("where", ["NUMBA_CACHE_DIR", "beside the sources"])
def test_an_edit_of_an_inlined_source_reaches_the_cached_kernel_that_inlines_it(tmp_path, where):
    """Numba keys a cached kernel on its own file: ``top.twice`` inlines ``low.value``, and
    after ``low.py`` changes a new process must not load the old machine code of ``twice``,
    wherever the cache lives (a folder of its own through ``NUMBA_CACHE_DIR``, as in CI and
    containers, or ``__pycache__`` beside the sources); an unchanged package loads it."""
    package = tmp_path / "src" / "toy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text(LOW.format("1.0"))
    (package / "top.py").write_text(TOP)
    env = {"PYTHONPATH": os.pathsep.join([str(package.parent), os.environ.get("PYTHONPATH", "")])}
    if where == "NUMBA_CACHE_DIR":
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    first = _run(RUN_TOP, env=env)
    again = _run(RUN_TOP, env=env)
    assert (first, again) == ({"twice": 2.0, "cached": False}, {"twice": 2.0, "cached": True})
    (package / "low.py").write_text(LOW.format("21.5"))
    assert _run(RUN_TOP, env=env) == {"twice": 43.0, "cached": False}
    assert _run(RUN_TOP, env=env) == {"twice": 43.0, "cached": True}


RUN_LINKED = """
import json
from toy.top import twice
from toy.low import value
result = twice()
(top,) = twice.overloads.values()
(low,) = value.overloads.values()
symbol = low.fndesc.mangled_name
functions = {f.name: f.is_declaration for f in top.library._final_module.functions}
print(json.dumps({
    "twice": result,
    "cached": [bool(twice.stats.cache_hits), bool(value.stats.cache_hits)],
    # compiled here: the caller's module declares the callee instead of holding a copy of it
    "declared": functions.get(symbol) if not twice.stats.cache_hits else None,
}))
"""


def test_a_kernel_is_compiled_once_and_its_callers_call_it_by_symbol(tmp_path):
    """A kernel that is not inlined (``cached()`` without ``forceinline``) is compiled once:
    a kernel calling it declares its symbol instead of linking, optimising and compiling a
    copy of its body. A new process loads the callee before the caller's machine code; when
    the callee's cache entry is gone and it compiles again, the caller is either loaded (same
    symbol) or compiled again, never left calling a symbol that is not there."""
    package = tmp_path / "src" / "toy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text(LOW.format("1.5"))
    (package / "top.py").write_text(TOP)
    env = {
        "PYTHONPATH": os.pathsep.join([str(package.parent), os.environ.get("PYTHONPATH", "")]),
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
    }
    first = _run(RUN_LINKED, env=env)
    assert first == {"twice": 3.0, "cached": [False, False], "declared": True}
    assert _run(RUN_LINKED, env=env) == {"twice": 3.0, "cached": [True, True], "declared": None}
    for stale in (tmp_path / "cache").rglob("low.value*"):
        stale.unlink()
    third = _run(RUN_LINKED, env=env)
    assert third["twice"] == 3.0 and third["cached"][1] is False


def test_an_entry_of_another_layout_compiles_again():
    """A cache entry written by an older pinext (Numba's payload alone, without the list of
    kernels it calls) is a miss, not an error: the kernel compiles again."""
    from pinext.compiled.jit import _Impl

    impl = _Impl.__new__(_Impl)
    for old in (("name", "object", b"code", 0, 1, 2, 3), ("name", [1, 2])):
        assert impl.rebuild(None, old) is None


#: A NamedTuple of a module of the caller's, handed to view() (its overload cached by
#: Numba under the module's name), then another process's NamedTuple, that module absent.
MINE = """
import json, sys
from typing import NamedTuple
import numpy as np
from pinext.compiled.struct import view
if sys.argv[1] == "first":
    from mine import Mine as Data
else:
    class Data(NamedTuple):
        a: np.ndarray
print(json.dumps({"address": view(Data(np.arange(3.0))).address > 0}))
"""


def test_a_cached_kernel_that_saw_another_programs_type_still_loads(tmp_path):
    """Numba's index of a cached kernel pickles every overload's argument types: once a test
    module's NamedTuple went through view(), every later process without that module failed
    in view() with ``ModuleNotFoundError`` (a user's script after the test suite). The index
    is read as empty instead, and rewritten."""
    (tmp_path / "mine.py").write_text(
        "from typing import NamedTuple\nimport numpy as np\n\n\n"
        "class Mine(NamedTuple):\n    a: np.ndarray\n"
    )
    cache = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    assert _run(MINE, "first", env={**cache, "PYTHONPATH": str(tmp_path)})["address"]
    assert _run(MINE, "second", env=cache)["address"]


def test_the_compile_notice_names_the_method_and_what_it_takes(capsys, monkeypatch):
    """One line, once per process: the method whose kernels compile and the time it takes
    (the figures of benchmarks/bench_compile.py, as docs/performance.md gives them)."""
    from pinext.compiled import notice

    monkeypatch.setattr(notice, "_announced", set())
    notice.compiling_notice("Radau")
    notice.compiling_notice("DOP853")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "kernels for Radau" in err[0]
    assert "about 40 s on an empty cache, 3-20 s for each new kind of scene" in err[0]
