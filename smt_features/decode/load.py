"""Building a :class:`~smt_features.decode.decoder.Decoder` from a moses.ini (the moses.ini builder of smt-decode)."""
from __future__ import annotations

from collections.abc import Mapping

from nmt.core.io import DataError

from smt_features.decode.decoder import Decoder
from smt_features.decode.options import SearchOptions, search_options_from_config
from smt_features.decode.table import PhraseTable, load_phrase_table
from smt_features.model.features import (
    DistortionFeature, Feature, FeatureSet, PhrasePenaltyFeature, PhraseTableFeature,
    UnknownWordPenaltyFeature, WordPenaltyFeature,
)
from smt_features.model.kenlm import DEFAULT_LOAD
from smt_features.model.kenlm_feature import KenLMFeature
from smt_features.model.moses_ini import MosesIniError, check_feature_files, resolve_feature_path
from smt_features.model.reordering import NUM_VALUES, LexicalReorderingFeature, check_type

STATELESS_TYPES = {"WordPenalty": WordPenaltyFeature, "PhrasePenalty": PhrasePenaltyFeature}


def build_decoder(config, *, table: PhraseTable | None = None, options: SearchOptions | None = None,
                  table_limit: int | None = None, lm_scorers: Mapping[str, object] | None = None,
                  lm_load: str | None = None) -> Decoder:
    """A :class:`Decoder` from a :class:`smt_features.model.moses_ini.MosesConfig`.

    Loads the phrase table (unless ``table`` is given) and the KenLM models
    (unless ``lm_scorers`` maps a feature name to a scorer). Search options
    come from the config's sections unless ``options`` is given;
    ``table_limit`` overrides the feature line's ``table-limit``. A KenLM binary is loaded per ``lm_load``
    (:data:`smt_features.model.kenlm.LOAD_METHODS`), else per its feature line's ``lazyken`` (Moses's
    option: 1 lazy, 0 populate), else lazily.
    """
    src = config.path or "<moses.ini>"
    # a missing table or LM is named at its moses.ini line, before anything is loaded
    check_feature_files(config, only={
        fl.name for fl in config.features
        if (fl.type.startswith("PhraseDictionary") and table is None)
        or (fl.type == "KENLM" and (lm_scorers or {}).get(fl.name) is None) or fl.type == "LexicalReordering"})
    if options is None:
        options = search_options_from_config(config)
    features: list[Feature] = []
    tm_lines = []
    for fl in config.features:
        if fl.type.startswith("PhraseDictionary"):
            tm_lines.append(fl)
            if len(tm_lines) > 1:
                raise MosesIniError(src, fl.line_no, "only one phrase table is supported")
        features.append(_feature(fl, config, options, table_limit, lm_scorers or {}, lm_load))
    if not tm_lines:
        raise MosesIniError(src, 0, "no PhraseDictionary feature")
    fs = FeatureSet(features)
    weights = {}
    for f in fs:
        if f.name in config.weights:
            weights[f.name] = config.weights[f.name]
        elif isinstance(f, UnknownWordPenaltyFeature):
            weights[f.name] = f.default_weights()
        else:
            raise MosesIniError(src, 0, f"no weights for feature {f.name} in [weight]")
    if table is None:
        path = resolve_path(tm_lines[0].get("path"), config)
        table = load_phrase_table(path)
        if not len(table):
            raise DataError(f"{path}: empty phrase table (no phrase pairs)")
    tm = fs.of_kind(PhraseTableFeature)[0]
    if table.num_scores and table.num_scores != tm.num_values:
        raise MosesIniError(src, tm_lines[0].line_no, f"{tm.name} declares num-features={tm.num_values} but the "
                                                      f"phrase table {table.path or ''} has {table.num_scores} "
                                                      "score(s) per line")
    return Decoder(fs, weights, table, options)


def _feature(fl, config, options: SearchOptions, table_limit: int | None, lm_scorers: Mapping[str, object],
             lm_load: str | None = None) -> Feature:
    """The feature of one ``[feature]`` line."""
    tuneable_arg = fl.get("tuneable")
    tuneable = None if tuneable_arg is None else tuneable_arg == "true"
    extra = {k: v for k, v in fl.args.items() if k != "name"}
    if fl.type.startswith("PhraseDictionary"):
        limit = table_limit if table_limit is not None else int(fl.get("table-limit", str(options.table_limit)))
        return PhraseTableFeature(fl.name, int(fl.get("num-features")), tuneable is not False,
                                  path=fl.get("path"), table_limit=limit, args=extra, kind=fl.type)
    if fl.type == "KENLM":
        scorer = lm_scorers.get(fl.name)
        path = resolve_path(fl.get("path"), config)
        lazyken = fl.get("lazyken")
        if lazyken not in (None, "0", "1", "true", "false"):
            raise MosesIniError(config.path or "<moses.ini>", fl.line_no,
                                f"lazyken={lazyken}: 1 (lazy loading) or 0 (read at start)")
        load = lm_load or ("populate" if lazyken in ("0", "false") else DEFAULT_LOAD)
        try:
            return KenLMFeature(scorer, name=fl.name, path=path if scorer is None else fl.get("path"),
                                order=int(fl.get("order")) if fl.get("order") else None,
                                tuneable=tuneable is not False, args=extra, load=load)
        except (OSError, RuntimeError, ValueError) as err:
            detail = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise MosesIniError(config.path or "<moses.ini>", fl.line_no,
                                f"cannot load KenLM model {path}: {detail}") from None
    if fl.type == "Distortion":
        return DistortionFeature(fl.name, 1, tuneable is not False, extra)
    if fl.type == "LexicalReordering":
        return _reordering_feature(fl, config, tuneable is not False, extra)
    if fl.type in STATELESS_TYPES:
        return STATELESS_TYPES[fl.type](fl.name, 1, tuneable is not False, extra)
    if fl.type == "UnknownWordPenalty":
        return UnknownWordPenaltyFeature(fl.name, 1, tuneable is True, extra)
    raise MosesIniError(config.path or "<moses.ini>", fl.line_no,
                        f"feature type {fl.type!r} is not supported by this decoder")


def _reordering_feature(fl, config, tuneable: bool, extra: dict) -> LexicalReorderingFeature:
    """A ``LexicalReordering`` line: msd-bidirectional-fe, its table read like a phrase table (sidecar too)."""
    where = config.path or "<moses.ini>"
    why = check_type(fl.get("type"))
    if why is None and fl.get("num-features", str(NUM_VALUES)) != str(NUM_VALUES):
        why = f"num-features={fl.get('num-features')}, but msd-bidirectional-fe has {NUM_VALUES} scores"
    unknown = sorted(set(extra) - {"type", "num-features", "input-factor", "output-factor", "path", "tuneable"})
    if why is None and unknown:
        why = f"argument(s) {', '.join(unknown)} not supported"
    if why is not None:
        raise MosesIniError(where, fl.line_no, f"{fl.name}: {why}")
    path = resolve_path(fl.get("path"), config)
    table = load_phrase_table(path)
    if not len(table):
        raise DataError(f"{path}: empty reordering table (no phrase pairs)")
    if table.num_scores != NUM_VALUES:
        raise DataError(f"{path}: {table.num_scores} score(s) per line, a {fl.get('type')} table has {NUM_VALUES}")
    return LexicalReorderingFeature(fl.name, NUM_VALUES, tuneable, extra, table=table, path=fl.get("path"))


def resolve_path(path: str | None, config) -> str:
    """A feature's ``path=`` as the decoder opens it (:func:`resolve_feature_path`); ``""`` when there is none."""
    return "" if path is None else str(resolve_feature_path(path, config))
