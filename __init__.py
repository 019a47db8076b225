"""busca: crawl a site into a local index and search it from the terminal."""

__version__ = "0.1.0"
__all__ = ["__version__"]
