"""Facts: the fact schema and its validation, reading facts (JSON, NDJSON), batches over processes.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
