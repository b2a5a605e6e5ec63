"""The build: the MkDocs hook, strict execution of the blocks, the labs'
layout, their Run tab data, the notebooks and the cache."""
