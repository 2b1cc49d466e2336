"""A kernel's data handed over as one pointer: a ``NamedTuple`` of arrays (a
:class:`pinext.compiled.phase.PhaseKernel`) as a :class:`View` of a structure of the same fields.

Numba passes a tuple by value: each array as its data pointer, shape, strides and owner, so a
phase's ~125 arrays become ~900 scalar arguments of every kernel that takes them, of every call
between two kernels and of every kernel's Python wrapper, which unboxes each array at each call
(about 35 µs). Building, printing and parsing the IR of those arguments was about 260 s of a
first simulation's compilation (the six-DOF arm on an empty cache, 2026-12-07).

:func:`view` copies the tuple's fields once into a Numba structure (``StructRef``, built by a
compiled constructor with Numba's reference counting, which keeps the arrays alive), and hands
the kernels a pointer to it: a :class:`KernelView` reads ``P.field`` as the tuple's, with the
same types, and without reference counting (the kernels are compiled without it,
:data:`pinext.compiled.spatial.kernel`). The arrays are the tuple's own: what a kernel writes
into them the tuple sees. Nested tuples (the packed model) are stored whole in the structure.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba.core import cgutils, imputils, types
from numba.core.datamodel import models
from numba.core.extending import (
    NativeValue,
    infer_getattr,
    lower_getattr_generic,
    overload,
    register_model,
    typeof_impl,
    unbox,
)
from numba.core.typing.templates import AttributeTemplate
from numba.experimental import structref

from .jit import cached


@structref.register
class KernelStruct(types.StructRef):
    """The Numba type of a structure with a ``NamedTuple``'s fields."""

    def preprocess_fields(self, fields: Any) -> tuple:
        return tuple((name, types.unliteral(kind)) for name, kind in fields)


class KernelProxy(structref.StructRefProxy):
    """A :class:`KernelStruct` in Python (owned by a :class:`View`)."""


structref.define_boxing(KernelStruct, KernelProxy)


def _struct_of(data):  # type: ignore[no-untyped-def]  # (compiled only)
    """The structure of ``data`` (a NamedTuple), in compiled code."""


@overload(_struct_of)
def _struct_of_impl(data):  # type: ignore[no-untyped-def]  # (typing: data a Numba type)
    kind = KernelStruct(list(zip(data.fields, data.types, strict=True)))
    lines = ["def impl(data):", "    st = new(kind)"]
    lines += [f"    st.{name} = data.{name}" for name in data.fields]
    lines.append("    return st")
    scope = {"new": structref.new, "kind": kind}
    exec("\n".join(lines), scope)
    return scope["impl"]


@cached()
def _as_struct(data):
    """``data`` (a NamedTuple) as a :class:`KernelStruct` holding its fields."""
    return _struct_of(data)


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


class View:
    """A NamedTuple's fields in one structure, handed to kernels as one pointer
    (:class:`KernelView`). Keep it, and the tuple for Python, while kernels use it."""

    __slots__ = ("address", "numba_type", "struct")

    def __init__(self, data: Any) -> None:
        self.struct = _as_struct(data)
        self.address = self.struct._meminfo.data
        self.numba_type = KernelView(self.struct._type)


@typeof_impl.register(View)
def _typeof_view(value: View, context: Any) -> KernelView:
    return value.numba_type


def view(data: Any) -> View:
    """``data`` (a NamedTuple of arrays, scalars and nested NamedTuples) as a :class:`View`."""
    return View(data)
