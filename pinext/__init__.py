"""pinext: what Pinocchio lacks from the classic robot-dynamics literature."""

__version__ = "0.1.0"
