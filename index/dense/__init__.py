"""index/dense/: dense vectors: encoders (e5-small, USE, OpenAI-compatible servers), exact vector
search, the vector cache, the re-ranking client."""
