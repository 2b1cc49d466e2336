"""The stack level at which a warning names the user's line rather than one of pinext's."""

from __future__ import annotations

import os
import sys
from types import FrameType

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` of :func:`warnings.warn`, called in the function that warns, at
    which the warning names the first frame outside the pinext package: the user's call,
    however many of pinext's functions lie between it and the warning (a
    :class:`~pinext.contact.VelocityLimitWarning` of a run started by
    :func:`pinext.planning.track_rest_to_rest` names the line that called it, not the line
    of ``track_rest_to_rest`` that called :func:`pinext.simulate`)."""
    frame: FrameType | None = sys._getframe(1)  # the function that warns: stack level 1
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
