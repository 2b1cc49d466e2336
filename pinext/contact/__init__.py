"""pinext.contact."""
