"""crawler."""
