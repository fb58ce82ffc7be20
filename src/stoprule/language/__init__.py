"""The policy language: a pack's YAML files -> the checked policy. Knows no engine.

    files, source     which files make up a pack; YAML read with the location of every value
    spec              the file format (pydantic models; unknown keys are errors)
    conditions        ``when:`` syntax trees; operators and patterns: each operator in one entry
    templates         message templates, rendered
    template_compiler message templates parsed from a pack, and generated as code for many facts
    checked           the immutable checked policy every consumer reads
    compiler          the check stages: load, resolve, typecheck
    schema_export     JSON Schemas of pack files and of a pack's facts
    inventory         what a checked pack declares, as data (``stoprule inspect``, the console)

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
