"""Attack corpora for the sandboxed tools: path traversal and shell bypass strings."""
