"""index/postgres/: the PostgreSQL home (the extra busca[postgres]): schema, connections, documents,
builds, posting lists, rankers, replicas."""
