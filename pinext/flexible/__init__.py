"""pinext.flexible."""
