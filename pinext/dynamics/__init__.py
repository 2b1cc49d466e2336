"""pinext.dynamics."""
