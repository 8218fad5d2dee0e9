"""The decode room: smt-decode's phrase-based stack decoding (options, tables, searches, moses.ini loading, corpus runs)."""
