"""One module per platform busca reads through its own API: `detect(start)` and `read(ctx,
found)`, registered in crawler/registry.py."""
