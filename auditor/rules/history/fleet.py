"""KA8xx history checks (fleet)."""
