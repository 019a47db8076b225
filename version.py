"""busca's version, on the ground floor: every layer that stamps it (a build's manifest, the
User-Agent, the server's headers) imports it from here; `busca.__version__` reads it too."""

__version__ = "0.1.0"
