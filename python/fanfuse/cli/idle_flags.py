"""The flags that do something only beside another setting, for every command: one table, ``RULES``,
and ``tune``'s level lists read from the table of what it searches (``rules_of`` gives either).

A flag given where it would do nothing is refused before any work (exit 2), naming it, what it goes
with and how to mend the line: a command never runs as if it had read a flag it ignored
(``fuse --collection`` with TREC output, ``eval --seed`` with the t-test, ``fuse --phi`` or
``tune --phis`` without ``--method rbc``). A flag counts as given when it is on the command line,
whatever its value, so ``--tag fanfuse`` beside ``--run-format mtrag`` is refused as any other tag
would be. Where a flag leaves a setting to the environment, a rule reads the environment as the
command does (``FANFUSE_QUERY_EXPANSION=off`` makes ``--max-variants`` idle). The conversation
(``--history``, ``--turn``) is the question's context, not a setting, and is never refused for going
unread, as the service takes it.

`tests/test_cli_idle_flags.py` holds every rule to its flags; `tests/test_cli_flag_effects.py` gives
every flag of ``fuse``, ``eval``, ``search`` and ``tune`` on a small input, expecting each one either to
change what the command writes or to be refused.
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Collection, Sequence

from fanfuse._core import METHODS, TRAINED_METHODS, FusionModel
from fanfuse.cli.flags import LLM_FLAGS
from fanfuse.cli.fusion_options import DEFAULTS
from fanfuse.cli.paths import PARQUET_SUFFIXES, names_parquet
from fanfuse.errors import FusionError, InputError, InvalidSetting
from fanfuse.idle_settings import GoesWith, first_idle, idle_message, read_by_method

# A flag's rule: what it goes with, over the parsed command line.
FlagRule = GoesWith[argparse.Namespace]


# The fusion parameter each flag sets: a method that does not read it fuses as without the flag.
_PARAMETER_FLAGS = {
    "--norm": "norm",
    "--rrf-k": "k",
    "--phi": "phi",
    "--sigma": "sigma",
    "--gamma": "gamma",
    "--segments": "segments",
    "--window": "window",
}


def method_in_effect(args: argparse.Namespace) -> str:
    """The method a command fuses with: ``--method``, else a ``--model``'s own, else the default."""
    if args.method:
        return str(args.method)
    model = loaded_model(args)
    return DEFAULTS.method if model is None else model.method


def loaded_model(args: argparse.Namespace) -> FusionModel | None:
    """The model ``--model`` names, read once whatever the file is (a pipe reads once), then kept on
    ``args`` for the command; None without ``--model``, or for a path that is missing or a folder,
    which the command's path checks then refuse naming it."""
    path = getattr(args, "model", None)
    if not path or not os.path.exists(path) or os.path.isdir(path):
        return None
    if getattr(args, "_loaded_model", None) is None:
        args._loaded_model = FusionModel.load(path)
    model: FusionModel = args._loaded_model
    return model


def _read_by_method(flag: str, parameter: str, offered: Collection[str] | None = None) -> FlagRule:
    """``flag`` goes with the methods that read ``parameter`` (``--method`` left out: the default), of
    the methods ``offered`` (None: every one)."""
    return read_by_method(
        flag,
        parameter,
        method_in_effect,
        "--method",
        lambda m: ("--method", m),
        offered,
    )


def _search_setting(args: argparse.Namespace) -> tuple[bool, int] | None:
    """Whether the search expands, and into how many variants at most: the flags, else the
    environment (``FANFUSE_QUERY_EXPANSION``, ``FANFUSE_MAX_QUERY_VARIANTS``), as the search reads
    them. None where a value is refused: the search itself then says so, naming it."""
    # Imported here: only a search or the demo asks, and the run-file commands load no multi-query code.
    from fanfuse.cli.llm_options import expansion_switch
    from fanfuse.multiquery.config import MultiQueryConfig

    try:
        switch = expansion_switch(getattr(args, "expander", None))
        config = MultiQueryConfig.from_env(expansion=switch, max_variants=args.max_variants)
    except InputError:
        return None
    return config.expansion, config.max_variants


def _expansion_on(args: argparse.Namespace) -> bool:
    setting = _search_setting(args)
    return setting is None or setting[0]


def _expands(args: argparse.Namespace) -> bool:
    """Whether the search asks for variants: with one variant the question goes alone."""
    setting = _search_setting(args)
    return setting is None or (setting[0] and setting[1] != 1)


# Where a search expands: what an --expander says, else what the environment says.
_EXPANSION = (
    "query expansion (--expander heuristic or llm, or no --expander and FANFUSE_QUERY_EXPANSION not off)"
)


_DASK = FlagRule(
    ("--scheduler", "--partitions"), "--engine dask", lambda args: args.engine == "dask", ("--engine", "dask")
)
_LLM = FlagRule(
    tuple(LLM_FLAGS.values()),
    "--expander llm",
    lambda args: args.expander == "llm",
    ("--expander", "llm"),
)

RULES: dict[str, tuple[FlagRule, ...]] = {
    "fuse": (
        _DASK,
        FlagRule(
            ("--train-runs", "--train-qrels", "--save-model"),
            f"a trained --method ({', '.join(TRAINED_METHODS)})",
            lambda args: args.method in TRAINED_METHODS,
            ("--method", TRAINED_METHODS[0]),
        ),
        # Without --method, a model fuses with its own method.
        FlagRule(
            ("--model",),
            f"a trained --method ({', '.join(TRAINED_METHODS)}) or none (the model's)",
            lambda args: args.method is None or args.method in TRAINED_METHODS,
            (),
        ),
        *(_read_by_method(flag, parameter) for flag, parameter in _PARAMETER_FLAGS.items()),
        # A model given with --model keeps the sizes it was trained with, and is saved already.
        FlagRule(
            ("--segments", "--window", "--save-model"),
            "training (--train-runs and --train-qrels)",
            lambda args: args.train_runs is not None,
        ),
        FlagRule(
            ("--collection",),
            "--run-format mtrag",
            lambda args: args.run_format == "mtrag",
            ("--run-format", "mtrag"),
        ),
        FlagRule(
            ("--tag",),
            "TREC text output (--run-format trec, the default, to an output not named "
            f"*{' / *'.join(PARQUET_SUFFIXES)})",
            lambda args: args.run_format == "trec" and not names_parquet(args.output),
        ),
    ),
    "eval": (
        _DASK,
        FlagRule(
            ("--iterations", "--seed"),
            "--test fisher",
            lambda args: args.test == "fisher",
            ("--test", "fisher"),
        ),
        FlagRule(
            ("--baseline", "--test", "--correction", "--alpha"),
            "two runs or more (the runs it compares)",
            lambda args: len(args.runs) >= 2,
        ),
    ),
    "search": (
        _LLM,
        FlagRule(
            tuple(LLM_FLAGS.values()),
            "more than one query variant (query expansion, and --max-variants, "
            "else FANFUSE_MAX_QUERY_VARIANTS, above 1)",
            _expands,
        ),
        FlagRule(("--max-variants",), _EXPANSION, _expansion_on, ("--expander", "heuristic")),
        # A search fuses with no trained model.
        _read_by_method("--norm", "norm", METHODS),
        _read_by_method("--rrf-k", "k", METHODS),
        FlagRule(("--mmr-lambda",), "--rerank mmr", lambda args: args.rerank == "mmr", ("--rerank", "mmr")),
        # --json prints the whole result, provenance and branches included.
        FlagRule(("--explain",), "text output (without --json)", lambda args: not args.json),
    ),
    "serve": (_LLM,),
    # The demo's search has no --expander: the environment alone turns its expansion off.
    "demo": (
        FlagRule(("--max-variants",), "query expansion (FANFUSE_QUERY_EXPANSION not off)", _expansion_on),
    ),
}


def _searches(args: argparse.Namespace) -> bool:
    """Whether ``tune`` has more than one configuration to choose from, so that how it searches them
    (``--search``) matters: the method's parameters at the levels given, else at their defaults. True
    where a level is refused, or the runs are too few for any (the command itself then says so)."""
    from fanfuse.tune.space import given_levels, search_space

    try:
        return search_space(args.method, len(args.runs), given_levels(args)).grid_size(at_most=2) != 1
    except (FusionError, TypeError, ValueError):
        return True


@functools.cache
def _tune_rules() -> tuple[FlagRule, ...]:
    """``tune``'s level lists: each goes with the methods that have the parameter it searches; and
    ``--search`` with a search of more than one configuration."""
    # Imported here: `fanfuse.tune` loads only for the command that reads it.
    from fanfuse.tune.space import OPTIONS

    levels = tuple(_read_by_method(level_flag(option.keyword), option.parameter) for option in OPTIONS)
    searched = FlagRule(
        ("--search",),
        "more than one configuration to search (a --method with parameters, at more than one level)",
        _searches,
    )
    return (*levels, searched)


def rules_of(command: str) -> tuple[FlagRule, ...]:
    """The rules of ``command``'s flags."""
    return _tune_rules() if command == "tune" else RULES.get(command, ())


def level_flag(keyword: str) -> str:
    """The flag of one of ``tune``'s level lists: ``segment_counts`` is ``--segment-counts``."""
    return "--" + keyword.replace("_", "-")


def given_flags(parser: argparse.ArgumentParser, words: Sequence[str], flags: Sequence[str]) -> set[str]:
    """Which of ``flags`` the command's ``words`` give. argparse fills in a default for a flag left
    out unless the namespace has the attribute already, so the words are read again with each of
    them preset to None, which no given flag reads as (an appending flag starts its list anew)."""
    actions = {flag: action for action in parser._actions for flag in action.option_strings}
    preset = argparse.Namespace(**{actions[flag].dest: None for flag in flags})
    parsed, _ = parser.parse_known_args(words, preset)
    return {flag for flag in flags if getattr(parsed, actions[flag].dest) is not None}


def refuse_idle_flags(
    command: str,
    parser: argparse.ArgumentParser,
    words: Sequence[str],
    args: argparse.Namespace,
    rules: Sequence[FlagRule] | None = None,
) -> None:
    """InvalidSetting for the first flag of ``words`` that ``command`` would not read with ``args``
    (by ``rules``: the command's own where None)."""
    rules = rules_of(command) if rules is None else rules
    given = given_flags(parser, words, sorted({flag for rule in rules for flag in rule.names}))
    idle = first_idle(rules, given, args)
    if idle is not None:
        flag, rule = idle
        raise InvalidSetting(idle_message(flag, rule, f"drop {flag}"))
