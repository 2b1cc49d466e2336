"""The decorator of the package's kernels: Numba's ``njit`` with a disk cache that loads machine
code without parsing what only a new compilation needs, and kernels compiled once however many
kernels call them.

Numba links a copy of every function a kernel calls into the kernel's own module, then
optimises and compiles the whole module: a function called from twenty kernels is optimised
and compiled twenty-one times. The right-hand side of the equations of motion is such a
function (the integrators' stages, starts, event location and output all call it), and its
copies were most of a first simulation's compilation (the six-DOF arm on an empty cache: 1 174
s of CPU, 908 s of it in LLVM, 2026-12-07, 2 cores). A kernel of this package that is not
inlined (:func:`cached` without ``forceinline``) is therefore compiled once, and every kernel
that calls it calls its symbol (:class:`_Declared`); a cached caller names the kernels it calls
so that a new process loads them first (:func:`_dependencies`, :func:`_load`). Helpers
(``forceinline``) are still linked and inlined where they are called.

Numba stores beside each cached function's machine code the LLVM bitcode of everything it
links, so that a later compilation can inline it, and parses that bitcode whenever it loads the
function. A run that only loads its kernels never needs it, yet parsing it was three quarters
of a process's first simulation (go1: about 0.9 s of 1.2 s, measured with cProfile). The
kernels of this package (:func:`cached`) therefore load their machine code alone and parse the
bitcode when a compilation first links it (:class:`_Library`); other Numba users in the
process are left as they are.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import llvmlite.binding as ll
from numba import njit
from numba.core import types
from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile
from numba.core.codegen import JITCodeLibrary
from numba.core.registry import CPUDispatcher

from ._cache import source_digest

HERE = Path(__file__).resolve()


class _Library(JITCodeLibrary):
    """A library loaded from the cache whose bitcode is parsed on first use, when a new
    compilation links it (``_shared_module``); its symbols are then registered with the
    engine as Numba registers them at load. Until then they are found in the loaded machine
    code."""

    _bitcode: bytes | None = None

    @property
    def _shared_module(self) -> Any:
        if self._bitcode is not None:
            module = self.__dict__["_shared"] = ll.parse_bitcode(self._bitcode)
            self._bitcode = None
            self._codegen._engine._load_defined_symbols(module)
        return self.__dict__.get("_shared")

    @_shared_module.setter
    def _shared_module(self, module: Any) -> None:
        self.__dict__["_shared"] = module

    def get_pointer_to_function(self, name: str) -> int:
        if self._bitcode is None:
            return super().get_pointer_to_function(name)
        self._ensure_finalized()
        return self._codegen._engine.get_function_address(name)

    @classmethod
    def _unserialize(cls, codegen: Any, state: tuple) -> JITCodeLibrary:
        name, kind, data = state
        if kind != "object":
            return super()._unserialize(codegen, state)
        library = codegen.create_library(name)
        object_code, library._bitcode = data
        library.enable_object_caching()
        library._set_compiled_object(object_code)
        library._finalize_final_module()
        return library


class _Declared:
    """A kernel's library as its callers link it: an empty module. The kernel's machine code is
    already in the process's engine (compiled or loaded before its caller is), so its callers
    call its symbol instead of linking, optimising and compiling a copy of its body each; a
    caller's cache entry names it (:func:`_dependencies`) so that it is loaded first."""

    def __init__(self, library: Any, key: tuple) -> None:
        self._library = library
        self.key = key  # (module, qualname, argument types, symbol)

    @property
    def _reload_init(self) -> Any:
        return self._library._reload_init

    def _ensure_finalized(self) -> None:
        self._library._ensure_finalized()

    def _get_module_for_linking(self) -> Any:
        codegen = self._library._codegen
        return ll.parse_assembly(str(codegen._create_empty_module("declared")))


def _dependencies(library: Any, seen: set | None = None) -> list[tuple]:
    """The kernels ``library`` calls by symbol, directly or through the helpers it inlines."""
    seen = set() if seen is None else seen
    found = list(getattr(library, "_pinext_dependencies", ()))
    for linked in getattr(library, "_linking_libraries", ()):
        if isinstance(linked, _Declared):
            found.append(linked.key)
        elif id(linked) not in seen:
            seen.add(id(linked))
            found += _dependencies(linked, seen)
    return list(dict.fromkeys(found))


def _load(dependencies: list[tuple]) -> bool:
    """Compile or load each kernel a cached caller calls by symbol, before the caller's machine
    code is loaded; False when one has another symbol now (the caller then compiles again)."""
    for module, qualname, args, symbol in dependencies:
        kernel: Any = importlib.import_module(module)
        for name in qualname.split("."):
            kernel = getattr(kernel, name, None)
        if kernel is None or not hasattr(kernel, "overloads"):
            return False
        kernel.compile(args)
        if kernel.overloads[args].fndesc.mangled_name != symbol:
            return False
    return True


class _Impl(CompileResultCacheImpl):
    """Rebuilds a cached compile result with :class:`_Library` as the codegen's library,
    after the kernels it calls by symbol (:class:`_Declared`)."""

    def reduce(self, cres: Any) -> Any:
        return (_dependencies(cres.library), super().reduce(cres))

    def rebuild(self, target_context: Any, payload: Any) -> Any:
        if not (isinstance(payload, tuple) and len(payload) == 2 and isinstance(payload[0], list)):
            return None  # an entry of another layout (an older pinext): compile again
        dependencies, payload = payload
        if not _load(dependencies):
            return None
        cres = self._rebuild(target_context, payload)
        cres.library._pinext_dependencies = dependencies
        return cres

    def _rebuild(self, target_context: Any, payload: Any) -> Any:
        codegen = target_context.codegen()
        codegen._library_class = _Library  # this load only (the class keeps Numba's own)
        try:
            return super().rebuild(target_context, payload)
        except AttributeError:  # a Numba whose libraries are built otherwise: load as it does
            pass
        finally:
            del codegen._library_class
        return super().rebuild(target_context, payload)


class _Index(IndexDataCacheFile):
    """Numba's index of a kernel's cached overloads, read as empty when it names a type this
    process cannot import (the index pickles every overload's argument types: a NamedTuple of
    a test module, given to :func:`pinext.compiled.struct.view`, made every later load in a
    script that does not import that module fail with ``ModuleNotFoundError``); the next
    save rewrites it with this process's overloads."""

    def _load_index(self) -> dict:
        try:
            return super()._load_index()
        except (ImportError, AttributeError):
            return {}


class _KernelCache(FunctionCache):
    """Numba's cache of one kernel, keyed also on the sources the kernel's module imports
    (:func:`pinext.compiled._cache.source_digest`): Numba's own key covers the function's
    bytecode and its file's time stamp only, not the kernels it inlines from other files."""

    _impl_class = _Impl

    def __init__(self, py_func: Callable, entry: bool = True) -> None:
        super().__init__(py_func)
        self._entry = entry  # with a Python entry point: its twin's entries are apart
        index = self._cache_file
        self._cache_file = _Index(
            index._cache_path, index._index_name[: -len(".nbi")], index._source_stamp
        )

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        source = Path(self._py_func.__code__.co_filename)
        # this module's own sources too: a kernel made of another package's function (a
        # rotation helper of pinext.dynamics) does not import them, but its entry's layout
        # (:meth:`_Impl.reduce`) and its machine code's linking are theirs
        key = (*super()._index_key(sig, codegen), source_digest(source), source_digest(HERE))
        return key if self._entry else (*key, "compiled only")


#: The options of a kernel that only compiled code calls: no Python entry point, no C
#: callback wrapper (:class:`_CompiledOnly`).
COMPILED_ONLY = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


class _CompiledOnly(CPUDispatcher):
    """A kernel built without a Python entry point (``no_cpython_wrapper``, as Numba builds
    its own ``@overload`` implementations), for the compiled code that calls or inlines it.
    Called from Python (a test, a benchmark), it compiles and caches a twin with the entry
    point and calls that: Numba would otherwise jump to a null address."""

    _pinext_options: dict[str, Any]  # the options it was compiled with

    def get_call_template(self, args: Any, kws: Any) -> Any:
        """The call from compiled code typed with its constants' plain types: a helper called
        with the constants 0, 1 and 2 at three places compiles once, not three times."""
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        twin = self.__dict__.get("_twin")
        if twin is None:
            options = {**self._pinext_options, "no_cpython_wrapper": False}
            twin = self.__dict__["_twin"] = cached(**options)(self.py_func)
        return twin(*args, **kwargs)


def cached(**options: Any) -> Callable[[Callable], Any]:
    """``numba.njit(cache=True, **options)`` whose cached machine code loads without parsing
    its bitcode (:class:`_Library`). A kernel that is not inlined (no ``forceinline``) is
    compiled once and called by symbol from every caller (:class:`_Declared`). With
    ``no_cpython_wrapper`` it has no Python entry point until Python calls it
    (:class:`_CompiledOnly`): the wrappers that unbox the arguments of helpers only compiled
    code calls were a third of a first simulation's compilation (83 → 56 s of CPU)."""
    jit = njit(cache=True, **options)

    def decorate(function: Callable) -> Any:
        dispatcher = jit(function)
        if options.get("no_cpython_wrapper"):
            dispatcher.__class__ = _CompiledOnly
            dispatcher._pinext_options = options
        dispatcher._cache = _KernelCache(function, entry=not options.get("no_cpython_wrapper"))
        if not options.get("forceinline"):
            dispatcher.add_overload = _declaring(dispatcher, dispatcher.add_overload)
        return dispatcher

    return decorate


def _declaring(dispatcher: Any, add_overload: Callable) -> Callable:
    """``dispatcher.add_overload`` that has the new overload's callers link it as a
    :class:`_Declared` library."""

    def add(cres: Any) -> None:
        add_overload(cres)
        if cres.objectmode:
            return
        function = dispatcher.py_func
        key = (
            function.__module__,
            function.__qualname__,
            tuple(cres.signature.args),
            cres.fndesc.mangled_name,
        )
        for _, implementation in dispatcher.targetctx._defns[cres.entry_point].versions:
            if getattr(implementation, "libs", ()) == (cres.library,):
                implementation.libs = (_Declared(cres.library, key),)

    return add
