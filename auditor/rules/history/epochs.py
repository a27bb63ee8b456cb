"""KA8xx history checks (epochs)."""
