"""Private helpers: the few standard-library shims the cold path needs, and file helpers."""
