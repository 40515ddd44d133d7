"""sandbox room."""
