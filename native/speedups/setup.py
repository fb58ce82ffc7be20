"""Builds the one C module (the project's metadata is in pyproject.toml)."""

from setuptools import Extension, setup

setup(
    ext_modules=[Extension("stoprule_speedups", ["stoprule_speedups.c"], extra_compile_args=["-O2", "-std=c11"])],
    py_modules=[],
)
