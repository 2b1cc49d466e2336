"""The decorator of the package's kernels: Numba's ``njit`` with a disk cache that loads machine
code without parsing what only a new compilation needs.

Numba stores beside each cached function's machine code the LLVM bitcode of everything it
links, so that a later compilation can inline it, and parses that bitcode whenever it loads the
function. A run that only loads its kernels never needs it, yet parsing it was three quarters
of a process's first simulation (go1: about 0.9 s of 1.2 s, measured with cProfile). The
kernels of this package (:func:`cached`) therefore load their machine code alone and parse the
bitcode when a compilation first links it (:class:`_Library`); other Numba users in the
process are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import llvmlite.binding as ll
from numba import njit
from numba.core.caching import CompileResultCacheImpl, FunctionCache
from numba.core.codegen import JITCodeLibrary

from ._cache import source_digest


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


class _Impl(CompileResultCacheImpl):
    """Rebuilds a cached compile result with :class:`_Library` as the codegen's library."""

    def rebuild(self, target_context: Any, payload: Any) -> Any:
        codegen = target_context.codegen()
        codegen._library_class = _Library  # this load only (the class keeps Numba's own)
        try:
            return super().rebuild(target_context, payload)
        except AttributeError:  # a Numba whose libraries are built otherwise: load as it does
            pass
        finally:
            del codegen._library_class
        return super().rebuild(target_context, payload)


class _KernelCache(FunctionCache):
    """Numba's cache of one kernel, keyed also on the sources the kernel's module imports
    (:func:`pinext.compiled._cache.source_digest`): Numba's own key covers the function's
    bytecode and its file's time stamp only, not the kernels it inlines from other files."""

    _impl_class = _Impl

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        source = Path(self._py_func.__code__.co_filename)
        return (*super()._index_key(sig, codegen), source_digest(source))


def cached(**options: Any) -> Callable[[Callable], Any]:
    """``numba.njit(cache=True, **options)`` whose cached machine code loads without parsing
    its bitcode (:class:`_Library`)."""
    jit = njit(cache=True, **options)

    def decorate(function: Callable) -> Any:
        dispatcher = jit(function)
        dispatcher._cache = _KernelCache(function)
        return dispatcher

    return decorate
