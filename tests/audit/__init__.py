"""The hash-chained audit trail, its store in Redis and pool files."""
