"""pinext.planning."""
