"""KA8xx history checks (offsets)."""
