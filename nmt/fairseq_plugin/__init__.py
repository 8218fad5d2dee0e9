"""fairseq ``--user-dir`` plugin: the toolkit's models as fairseq architectures.

Usage (fairseq-fixed 0.12.3.1, see ``docs/scale_out.md``)::

    fairseq-train data-bin/ptb --user-dir nmt/fairseq_plugin --task language_modeling \\
        --arch mogrifier_lm --lm-hidden-dim 128 ...
    fairseq-train data-bin/wmt --user-dir nmt/fairseq_plugin --task translation \\
        --arch cho2014_gru_cpu_small ...
    fairseq-train data-bin/wmt --user-dir nmt/fairseq_plugin --task translation \\
        --arch rnnsearch_cpu_small ...

Registered models / architectures:

* ``cho2014_gru`` (model and architecture; paper sizes), ``cho2014_gru_cpu_base``,
  ``cho2014_gru_cpu_small``, ``cho2014_gru_tiny`` — :class:`nmt.models.gru_encdec.GRUEncoderDecoder`
  behind a ``FairseqEncoder`` / ``FairseqIncrementalDecoder`` pair that call its
  ``encode`` / ``decode`` / ``decode_step``.
* ``rnnsearch_bahdanau`` (model) with architectures ``rnnsearch_paper``, ``rnnsearch_cpu_base``,
  ``rnnsearch_cpu_small``, ``rnnsearch_tiny`` — :class:`nmt.models.rnnsearch.RNNsearch` (Bahdanau et al.
  2015) behind adapters that call its ``start`` / ``forward`` / ``step``; the attention is fairseq's ``attn``.
* ``lstm_lm_nmt``, ``rmn_rm``, ``rmn_rmr``, ``mogrifier_lm`` (plus ``*_paper`` preset
  architectures) — :func:`nmt.models.lm.build_lm` behind a ``FairseqLanguageModel``.

fairseq imports this directory as a top-level package named ``fairseq_plugin``;
it can also be imported as ``nmt.fairseq_plugin`` (registration is idempotent).
Nothing else in :mod:`nmt` imports this package, so ``import nmt`` never needs fairseq.
"""
from . import encdec, lm, rnnsearch  # noqa: F401  (registers the models with fairseq)
from .vocab import IdMap  # noqa: F401

ENCDEC_ARCHS = encdec.ARCHS
LM_ARCHS = lm.ARCHS
RNNSEARCH_ARCHS = rnnsearch.ARCHS
