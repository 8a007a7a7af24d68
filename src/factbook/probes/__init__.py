"""Probes: small stdlib-only functions that run ON the box and return an observed value."""
