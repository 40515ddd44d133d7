"""controller room."""
