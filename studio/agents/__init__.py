"""Agents inside Studio: specs validated against what their owner has, built with
the owner's models and tools; the offline demo model and agents."""
