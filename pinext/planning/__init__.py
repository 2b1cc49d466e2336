"""pinext.planning: design uses of dynamics — reference motions and feedforward control."""

from .feedforward import Feedforward, elastic_drive_feedforward, rest_to_rest, track_rest_to_rest

__all__ = ["Feedforward", "elastic_drive_feedforward", "rest_to_rest", "track_rest_to_rest"]
