"""pinext.visualization."""
