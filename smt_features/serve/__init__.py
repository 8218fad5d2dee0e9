"""The serve room: the Python API (load a finished system, translate raw sentences: n-best lists, feature
contributions, segmentation, alignment, attention) and the ``smt-serve`` server on it (JSON, Moses-compatible
XML-RPC, a web page). Importing the API loads neither aiohttp nor torch."""
