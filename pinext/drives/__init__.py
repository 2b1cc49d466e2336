"""pinext.drives."""
