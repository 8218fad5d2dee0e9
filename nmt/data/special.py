"""The four reserved token ids, and their surface strings, shared by every vocabulary and model.

Ids: ``PAD`` 0, ``UNK`` 1, ``BOS`` 2, ``EOS`` 3. Surface strings, in id order:
``SPECIALS`` = ``("<pad>", "<unk>", "<s>", "</s>")``.
"""
from __future__ import annotations

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
PAD_TOKEN, UNK_TOKEN, BOS_TOKEN, EOS_TOKEN = SPECIALS
