"""The checks: every rule in one registry (:mod:`auditor.rules.registry`), the scan rules by family and the
cross-replica rules of ``audit`` (:mod:`auditor.rules.replica`)."""
