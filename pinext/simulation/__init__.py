"""pinext.simulation."""
