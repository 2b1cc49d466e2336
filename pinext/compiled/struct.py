"""A kernel's data handed over as one pointer: a ``NamedTuple`` of arrays (a
:class:`pinext.compiled.phase.PhaseKernel`) as a :class:`View` of a structure of the same fields.

Numba passes a tuple by value: each array as its data pointer, shape, strides and owner, so a
phase's ~125 arrays become ~900 scalar arguments of every kernel that takes them, of every call
between two kernels and of every kernel's Python wrapper, which unboxes each array at each call
(about 35 µs). Building, printing and parsing the IR of those arguments was about 260 s of a
first simulation's compilation (the six-DOF arm on an empty cache, 2026-12-07).

:func:`view` writes the tuple's fields once, from Python, into a buffer laid out as Numba lays
out a structure of those fields (a ``StructRef``'s payload: each array as its data pointer,
shape and strides, each scalar as its value, nested tuples whole; the offsets are LLVM's for
Numba's data model), and hands the kernels a pointer to it: a :class:`KernelView` reads
``P.field`` as the tuple's, with the same types, and without reference counting (the kernels
are compiled without it, :data:`pinext.compiled.spatial.kernel`), so the arrays' meminfo is
left null and the :class:`View` keeps the tuple alive. The arrays are the tuple's
own: what a kernel writes into them the tuple sees. A compiled constructor did this before,
at 7.5 s of compilation for each new kind of tuple (a third of a new scene kind's budget).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numba
import numpy as np
from llvmlite import ir
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


def _write(address: int, kind: Any, value: Any, name: str) -> None:
    """Write ``value`` (of Numba type ``kind``) at ``address`` as Numba's data model lays it
    out in memory: an array's parent is the array (the object boxing returns to Python), its
    meminfo is null (the kernels do not count references)."""
    kind = types.unliteral(kind)
    context = cpu_target.target_context
    layout = context.data_model_manager[kind].get_data_type()
    target = context.target_data
    if isinstance(kind, types.Array):  # meminfo, parent, nitems, itemsize, data, shape, strides

        def put(member: int, number: int, k: int = 0) -> None:
            at = address + layout.get_element_offset(target, member) + 8 * k
            ctypes.c_int64.from_address(at).value = int(number)

        put(1, id(value))  # the array itself, as boxing returns it (the View keeps it alive)
        put(2, value.size)
        put(3, value.itemsize)
        put(4, value.ctypes.data)
        for k in range(kind.ndim):
            put(5, value.shape[k], k)
            put(6, value.strides[k], k)
    elif isinstance(kind, types.BaseTuple):
        members: Any = kind  # its items' types
        for i, (item_kind, item) in enumerate(zip(members, value, strict=True)):
            if isinstance(layout, ir.ArrayType):
                offset = i * layout.element.get_abi_size(target)
            else:
                offset = layout.get_element_offset(target, i)
            _write(address + offset, item_kind, item, f"{name}[{i}]")
    elif kind in _SCALARS:
        _SCALARS[kind].from_address(address).value = value
    else:
        raise TypeError(
            f"field {name!r} of a kernel's data has type {kind}, which a View "
            f"does not lay out (arrays, tuples and {', '.join(map(str, _SCALARS))})"
        )


class View:
    """A NamedTuple's fields in one structure, handed to kernels as one pointer
    (:class:`KernelView`). It keeps the tuple (whose arrays the structure points into) and
    the structure alive; keep it while kernels use it."""

    __slots__ = ("address", "buffer", "data", "numba_type")

    def __init__(self, data: Any) -> None:
        kind = numba.typeof(data)
        struct = KernelStruct(list(zip(kind.fields, kind.types, strict=True)))
        payload = cpu_target.target_context.data_model_manager[struct.get_data_type()]
        layout = payload.get_data_type()
        target = cpu_target.target_context.target_data
        self.data = data
        self.buffer = np.zeros(layout.get_abi_size(target) // 8 + 1, dtype=np.int64)
        self.address = self.buffer.ctypes.data
        for i, (name, field_kind) in enumerate(struct.field_dict.items()):
            offset = layout.get_element_offset(target, i)
            _write(self.address + offset, field_kind, getattr(data, name), name)
        self.numba_type = KernelView(struct)


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
