"""index/home/: the local home: its builds on disk (LocalHome, Index, LocalBuildWriter), the manifest,
the query log, the build lock and the disk-full error."""
