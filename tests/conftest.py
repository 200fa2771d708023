"""Shared pytest configuration. Suites: core (no Django), studio, e2e, scale."""
