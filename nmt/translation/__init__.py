"""The encoder–decoders' room: data, training run, beam search, translate, evaluation, model I/O, rescoring engine."""
