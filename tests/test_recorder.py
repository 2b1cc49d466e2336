"""The recorder of simulate's segments."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import pinext as px
from pinext.simulation.chart import Chart
from pinext.simulation.recorder import Recorder


def test_a_continuing_segment_that_did_not_advance_ends_where_it_started():
    """A restart whose solver stops at once (its only sample is the start, which the previous
    segment recorded) ends at (t, x); it raised IndexError on an empty segment."""
    system = px.System(px.load_robot("six_dof_arm"))
    x = system.initial_state()
    chart = Chart(system, x, False)
    phase = system.initial_phase(0.0, x)
    y = chart.to_internal(x)[:, None]
    record = Recorder(system)
    first = SimpleNamespace(t=np.array([0.0, 0.25]), y=np.hstack((y, y)), t_events=None)
    record.segment(first, chart, 0.0, x, phase, None, physical=False, continuing=False)
    again = SimpleNamespace(t=np.array([0.25]), y=y, t_events=None)
    t_end, x_end = record.segment(
        again, chart, 0.25, x, phase, None, physical=False, continuing=True
    )
    assert t_end == 0.25 and np.array_equal(x_end, x)
