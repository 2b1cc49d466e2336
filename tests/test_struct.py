"""A phase handed to the kernels as one pointer (pinext.compiled.struct): the kernels read the
tuple's fields, nested tuples included, without Numba's reference counting, and write into
the tuple's own arrays."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
from numba import njit

from pinext.compiled.struct import KernelView, view


class Inner(NamedTuple):
    b: np.ndarray
    k: int


class Outer(NamedTuple):
    a: np.ndarray
    m: np.ndarray
    flag: bool
    scale: float
    inner: Inner


@njit(_nrt=False)  # as the package's kernels are compiled (pinext.compiled.spatial.kernel)
def _read_and_write(P, x):
    P.a[0] += x
    total = P.scale * (P.a[0] + P.m[1, 2] + P.inner.b[P.inner.k])
    return total if P.flag else -total


def test_a_view_reads_the_fields_and_writes_into_the_tuples_arrays():
    data = Outer(
        np.array([1.0, 2.0]),
        np.arange(6.0).reshape(2, 3),
        True,
        0.5,
        Inner(np.array([7.0, 9.0]), 1),
    )
    P = view(data)
    assert isinstance(P.numba_type, KernelView)
    assert _read_and_write(P, 3.0) == 0.5 * (4.0 + 5.0 + 9.0)
    assert data.a[0] == 4.0  # the tuple's own array
    flipped = view(data._replace(flag=False))
    assert _read_and_write(flipped, 0.0) == -0.5 * (4.0 + 5.0 + 9.0)
    assert len(_read_and_write.signatures) == 1  # one type for both: the fields' types


class Layouts(NamedTuple):
    strided: np.ndarray  # every other column of a matrix: its strides, not its copy
    cube: np.ndarray
    small: np.ndarray  # int32 items
    pair: tuple[float, float]
    off: bool
    count: int


@njit(_nrt=False)
def _layouts(P):
    return (
        P.strided[1, 2]
        + P.strided.shape[1]
        + P.cube[1, 2, 3]
        + P.small[2]
        + P.pair[1]
        + (100.0 if P.off else 0.0)
        + P.count
    )


@njit
def _boxed(P):
    return P.small


def test_a_view_lays_out_strided_and_typed_arrays_tuples_and_scalars_as_numba_does():
    """Written from Python (no compiled constructor): each field where Numba's data model
    reads it; a type it cannot lay out is refused by name."""
    matrix = np.arange(20.0).reshape(2, 10)
    data = Layouts(
        matrix[:, ::2],
        np.arange(60.0).reshape(3, 4, 5),
        np.array([5, 6, 7], dtype=np.int32),
        (0.25, 0.75),
        False,
        -3,
    )
    expected = matrix[1, 4] + 5 + data.cube[1, 2, 3] + 7 + 0.75 - 3
    assert _layouts(view(data)) == expected
    assert _layouts(view(data._replace(off=True))) == expected + 100.0
    assert _boxed(view(data)) is data.small  # boxed back to Python: the tuple's own array
    with pytest.raises(TypeError, match="field 'name' of a kernel's data has type unicode"):
        view(_Named(np.zeros(1), "ur5"))


class _Named(NamedTuple):
    a: np.ndarray
    name: str


def test_the_layout_is_llvms():
    """The offsets a View writes at (the C layout rules, computed in Python) are LLVM's own
    for Numba's data model: the nested, strided and typed tuples above and a packed robot."""
    import numba
    from numba.core.registry import cpu_target

    import pinext as px
    from pinext.compiled import pack
    from pinext.compiled.struct import _layout, _typed_plan

    context = cpu_target.target_context
    inner = Inner(np.array([7.0, 9.0]), 1)
    tuples = [
        Outer(np.zeros(2), np.zeros((2, 3)), True, 0.5, inner),
        Layouts(np.zeros((2, 10))[:, ::2], np.zeros((3, 4, 5)), np.zeros(3, np.int32),
                (0.25, 0.75), False, -3),
        pack(px.load_robot("six_dof_arm").model),
    ]  # fmt: skip
    for data in tuples:
        struct, size = _typed_plan(numba.typeof(data))[:2]
        llvm = context.data_model_manager[struct.get_data_type()].get_data_type()
        offsets, _, _ = _layout(llvm)
        assert size == llvm.get_abi_size(context.target_data)
        assert offsets == [
            llvm.get_element_offset(context.target_data, i) for i in range(len(llvm.elements))
        ]
