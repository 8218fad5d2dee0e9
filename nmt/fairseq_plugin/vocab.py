"""Id mapping between a fairseq ``Dictionary`` and the toolkit's id conventions.

fairseq puts ``<s>=0, <pad>=1, </s>=2, <unk>=3`` first; the toolkit's models
hard-wire ``PAD=0, UNK=1, BOS=2, EOS=3`` (padding index of the embeddings, the
RMN's empty memory slots, the encoder's length mask). :class:`IdMap` is a
permutation of the vocabulary: fairseq ids are mapped to model ids on the way
in and the model's logits are permuted back to fairseq order on the way out,
so the wrapped modules run unchanged.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from nmt.data.special import BOS, EOS, PAD, UNK


class IdMap(nn.Module):
    """``to_model[i]`` = model id of fairseq id ``i``; ``logits_to_fairseq`` permutes the last dim."""

    def __init__(self, dictionary):
        super().__init__()
        size = len(dictionary)
        special = {dictionary.pad(): PAD, dictionary.unk(): UNK, dictionary.bos(): BOS, dictionary.eos(): EOS}
        if len(special) != 4:
            raise ValueError("the dictionary's pad/unk/bos/eos symbols must be four distinct ids")
        to_model = torch.empty(size, dtype=torch.long)
        for fs_id, model_id in special.items():
            to_model[fs_id] = model_id
        rest = [i for i in range(size) if i not in special]
        to_model[rest] = torch.arange(4, size, dtype=torch.long)
        # buffers, not persistent: they follow the module's device but stay out of checkpoints
        self.register_buffer("to_model", to_model, persistent=False)
        self.fs_pad = dictionary.pad()
        self.fs_eos = dictionary.eos()
        self.size = size

    def tokens(self, fs_tokens: Tensor) -> Tensor:
        return self.to_model[fs_tokens]

    def logits_to_fairseq(self, logits: Tensor) -> Tensor:
        # fairseq id i <-> model id to_model[i]: out[..., i] = logits[..., to_model[i]]
        return logits.index_select(-1, self.to_model)
