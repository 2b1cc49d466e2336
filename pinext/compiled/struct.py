"""A kernel's data handed over as one pointer: a ``NamedTuple`` of arrays (a
:class:`pinext.compiled.phase.PhaseKernel`) as a :class:`View` of a structure of the same fields.

Numba passes a tuple by value: each array as its data pointer, shape, strides and owner, so a
phase's ~125 arrays become ~900 scalar arguments of every kernel that takes them, of every call
between two kernels and of every kernel's Python wrapper, which unboxes each array at each call
(about 35 µs). Building, printing and parsing the IR of those arguments was about 260 s of a
first simulation's compilation (the six-DOF arm on an empty cache, 2026-12-07).

:func:`view` writes the tuple's fields once, from Python, into a buffer laid out as Numba lays
out a structure of those fields (a ``StructRef``'s payload: each array as its data pointer,
shape and strides, each scalar as its value, nested tuples whole; at the offsets LLVM gives
Numba's data model, computed once per kind of tuple by :func:`_layout`), and hands the
kernels a pointer to it: a :class:`KernelView` reads
``P.field`` as the tuple's, with the same types, and without reference counting (the kernels
are compiled without it, :data:`pinext.compiled.spatial.kernel`), so the arrays' meminfo is
left null and the :class:`View` keeps the tuple alive. The arrays are the tuple's
own: what a kernel writes into them the tuple sees. A compiled constructor did this before,
at 7.5 s of compilation for each new kind of tuple (more than a new scene kind's budget).
"""

from __future__ import annotations

import ctypes
from typing import Any, NamedTuple

import numba
import numpy as np
from llvmlite import ir
from numba._dispatcher import compute_fingerprint
from numba.core import cgutils, imputils, types
from numba.core.datamodel import models
from numba.core.extending import (
    NativeValue,
    infer_getattr,
    lower_getattr_generic,
    register_model,
    typeof_impl,
    unbox,
)
from numba.core.registry import cpu_target
from numba.core.typing.templates import AttributeTemplate
from numba.experimental import structref


@structref.register
class KernelStruct(types.StructRef):
    """The Numba type of a structure with a ``NamedTuple``'s fields."""

    def preprocess_fields(self, fields: Any) -> tuple:
        return tuple((name, types.unliteral(kind)) for name, kind in fields)


#: The C type of each scalar as Numba stores it in a structure (a boolean as a byte).
_SCALARS: dict[Any, Any] = {
    types.float64: ctypes.c_double,
    types.float32: ctypes.c_float,
    types.int64: ctypes.c_int64,
    types.int32: ctypes.c_int32,
    types.uint64: ctypes.c_uint64,
    types.uint8: ctypes.c_uint8,
    types.boolean: ctypes.c_uint8,
}


def _layout(llvm: ir.Type) -> tuple[list[int], int, int]:
    """The members' offsets, the size and the alignment [bytes] of an LLVM type of Numba's
    data model, by the C rules LLVM's data layout applies on x86-64 and AArch64 (each member
    at a multiple of its alignment; checked against LLVM's own in ``tests/test_struct.py``).
    LLVM's answer costs ~0.1 ms a member (it parses a module each time): 0.2 s a phase."""
    if isinstance(llvm, ir.IntType):
        size = max(1, llvm.width // 8)
        return [], size, size
    if isinstance(llvm, ir.DoubleType | ir.PointerType):
        return [], 8, 8
    if isinstance(llvm, ir.FloatType):
        return [], 4, 4
    if isinstance(llvm, ir.ArrayType):
        _, size, align = _layout(llvm.element)
        return [size * i for i in range(llvm.count)], size * llvm.count, align
    if isinstance(llvm, ir.BaseStructType):
        offsets, end, align = [], 0, 1
        for member in llvm.elements:
            _, size, member_align = _layout(member)
            end = -(-end // member_align) * member_align
            offsets.append(end)
            end += size
            align = max(align, member_align)
        return offsets, -(-end // align) * align, align
    raise TypeError(f"no layout for the LLVM type {llvm}")


def _entries(kind: Any, offset: int, path: tuple, name: str) -> list[tuple]:
    """Where each array and scalar of a value of Numba type ``kind`` at ``offset`` goes:
    (offset, path from the tuple to it, its type, an array's member offsets or None)."""
    kind = types.unliteral(kind)
    offsets, _, _ = _layout(cpu_target.target_context.data_model_manager[kind].get_data_type())
    if isinstance(kind, types.Array):  # meminfo, parent, nitems, itemsize, data, shape, strides
        return [(offset, path, kind, offsets)]
    if isinstance(kind, types.BaseTuple):
        members: Any = kind  # its items' types
        found = []
        for i, item in enumerate(members):
            found += _entries(item, offset + offsets[i], (*path, i), f"{name}[{i}]")
        return found
    if kind in _SCALARS:
        return [(offset, path, kind, None)]
    raise TypeError(
        f"field {name!r} of a kernel's data has type {kind}, which a View "
        f"does not lay out (arrays, tuples and {', '.join(map(str, _SCALARS))})"
    )


class _Plan(NamedTuple):
    """How a View lays out a NamedTuple of one Numba type."""

    struct: KernelStruct
    size: int  # of the payload [bytes]
    arrays: list[tuple[tuple, int]]  # (path from the tuple, ndim)
    words: np.ndarray  # where each array's parent, nitems, itemsize, data, shape, strides go
    scalars: list[tuple[int, tuple, Any]]  # (offset, path, C type)


def _plan(data: Any) -> _Plan:
    """The :class:`_Plan` of a NamedTuple, found by its type fingerprint (Numba's dispatch
    key: 15 µs where ``typeof`` of a phase's ~100 arrays takes 1.3 ms)."""
    try:
        key: Any = (type(data), compute_fingerprint(data))
    except (NotImplementedError, ValueError):
        key = numba.typeof(data)
    if key not in _PLANS:
        _PLANS[key] = _typed_plan(numba.typeof(data))
    return _PLANS[key]


_PLANS: dict[Any, _Plan] = {}


def _typed_plan(kind: Any) -> _Plan:
    """:func:`_plan` of a NamedTuple's Numba type."""
    struct = KernelStruct(list(zip(kind.fields, kind.types, strict=True)))
    payload = cpu_target.target_context.data_model_manager[struct.get_data_type()]
    offsets, size, _ = _layout(payload.get_data_type())
    arrays, words, scalars = [], [], []
    for i, (name, field_kind) in enumerate(struct.field_dict.items()):
        for offset, path, item, members in _entries(field_kind, offsets[i], (i,), name):
            if members is None:
                scalars.append((offset, path, _SCALARS[item]))
                continue
            at = [(offset + member) // 8 for member in members]  # (all 8-byte aligned)
            arrays.append((path, item.ndim))
            words += at[1:5] + [at[5] + k for k in range(item.ndim)]
            words += [at[6] + k for k in range(item.ndim)]
    return _Plan(struct, size, arrays, np.array(words, dtype=np.intp), scalars)


def _item(data: Any, path: tuple) -> Any:
    for i in path:
        data = data[i]
    return data


class View:
    """A NamedTuple's fields in one structure, handed to kernels as one pointer
    (:class:`KernelView`). It keeps the tuple (whose arrays the structure points into) and
    the structure alive; keep it while kernels use it. An array's parent is the array (the
    object boxing returns to Python), its meminfo null (the kernels count no references)."""

    __slots__ = ("address", "buffer", "data", "numba_type")

    def __init__(self, data: Any) -> None:
        plan = _plan(data)
        self.data = data
        self.buffer = np.zeros(plan.size // 8 + 1, dtype=np.int64)
        self.address = self.buffer.ctypes.data
        words: list[int] = []
        for path, _ in plan.arrays:
            a = _item(data, path)
            words += [id(a), a.size, a.itemsize, a.__array_interface__["data"][0]]
            words += a.shape
            words += a.strides
        self.buffer[plan.words] = words
        for offset, path, ctype in plan.scalars:
            ctype.from_address(self.address + offset).value = _item(data, path)
        self.numba_type = KernelView(plan.struct)


class KernelView(types.Type):
    """The Numba type of a :class:`View`: a pointer to the payload of a :class:`KernelStruct`,
    its fields read as the structure's, without reference counting."""

    def __init__(self, struct: KernelStruct) -> None:
        self.struct = struct
        super().__init__(name=f"KernelView({struct.name})")


@register_model(KernelView)
class _ViewModel(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: KernelView) -> None:
        super().__init__(dmm, fe_type, ir.IntType(8).as_pointer())


@infer_getattr
class _ViewAttribute(AttributeTemplate):
    key = KernelView

    def generic_resolve(self, typ: Any, attr: str) -> Any:  # type: ignore[override]
        return typ.struct.field_dict.get(attr)


@lower_getattr_generic(KernelView)
def _view_getattr(context: Any, builder: Any, typ: KernelView, value: Any, attr: str) -> Any:
    payload = typ.struct.get_data_type()
    pointer = builder.bitcast(value, context.get_value_type(payload).as_pointer())
    data = cgutils.create_struct_proxy(payload)(context, builder, ref=pointer)
    field = typ.struct.field_dict[attr]
    return imputils.impl_ret_borrowed(context, builder, field, getattr(data, attr))


@unbox(KernelView)
def _unbox_view(typ: KernelView, obj: Any, c: Any) -> NativeValue:
    address = c.pyapi.object_getattr_string(obj, "address")
    pointer = c.pyapi.long_as_voidptr(address)
    c.pyapi.decref(address)
    return NativeValue(pointer, is_error=c.pyapi.c_api_error())


@typeof_impl.register(View)
def _typeof_view(value: View, context: Any) -> KernelView:
    return value.numba_type


def view(data: Any) -> View:
    """``data`` (a NamedTuple of arrays, scalars and nested NamedTuples) as a :class:`View`."""
    return View(data)
