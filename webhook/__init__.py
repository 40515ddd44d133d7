"""webhook room."""
