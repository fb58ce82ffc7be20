"""Command-line interface: a thin layer of argparse wiring over plain functions."""
