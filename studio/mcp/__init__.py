"""Studio as a Model Context Protocol client: which servers a run may use, their
connections, and their tools (redacted)."""
