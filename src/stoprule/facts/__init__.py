"""Facts: the fact schema and its validation, reading facts (JSON, NDJSON), batches over processes."""
