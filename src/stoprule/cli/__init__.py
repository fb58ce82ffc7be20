"""Command-line interface: a thin layer of argparse wiring over plain functions.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
