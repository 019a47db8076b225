"""busca's version: one module at the ground floor, so every layer can name it without
importing the package face (`busca/__init__.py`, which re-exports it)."""

__version__ = "0.1.0"
