"""index/text/: from documents to chunks and terms: windows, the chunk rows, analyzers, the
streamed tokenising pass (with its compiled loops), counting, titles."""
