"""Facts: the fact schema and its validation, reading facts (JSON, NDJSON), batches over processes.

    schema          the pack's fact schema: fields, types, defaults; validation and warnings
    errors          a fact's validation errors, built where it fails (field paths, did-you-mean, --strict)
    fast_validator  the validator a run of many facts generates (straight-line code)
    parse           facts from JSON and NDJSON text, each error naming its line
    batch           many facts over worker processes, in input order

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
