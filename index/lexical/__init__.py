"""index/lexical/: lexical scoring: TF-IDF, BM25 and sparse weights, their rankers, MaxScore and
the compiled postings."""
