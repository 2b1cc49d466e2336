"""A phase handed to the kernels as one pointer (pinext.compiled.struct): the kernels read the
tuple's fields, nested tuples included, without Numba's reference counting, and write into
the tuple's own arrays."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
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
