"""The package version, in a module of its own: the checkpoint writer reads it without
importing the package."""

__version__ = "0.2.0"
