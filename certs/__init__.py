"""certs room."""
