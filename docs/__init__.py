"""Documentation generated from the op registry."""
