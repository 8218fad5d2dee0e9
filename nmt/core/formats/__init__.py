"""The field's file formats that both floors read and write (torch-free): the Moses phrase table, the n-best list."""
