"""click parameter types and options shared by cli.py and terminal.py."""

from __future__ import annotations

import math

import click


class FiniteFloat(click.FloatRange):
    """A float option that refuses nan and ±inf: click's FloatRange lets nan through (every
    comparison with nan is false), and a nan floor, rate or timeout silently breaks the work."""

    name = "number"

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"must be a finite number, got {value!r}", param, ctx)
        if self.max == 1 and 1 < number <= 100:  # a share typed as a percentage: --keep 90
            self.fail(f"{value} is not a share from 0 to 1: for {number:g}% give"
                      f" {number / 100:g}", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        """No range in --help for an unbounded number (click would show `x<=None`)."""
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()


class Whole(click.IntRange):
    """A whole-number option from `least` up to the library's MOST (search/scorers.py): a
    larger one is bad usage naming the option (exit 2), not the library's BadSpec naming its
    Python field (per_doc) with exit 1."""

    def __init__(self, least: int = 0):
        super().__init__(min=least)

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        from .search.scorers import MOST

        if number > MOST:
            self.fail(f"{number} is larger than {MOST:,}, the largest it takes", param, ctx)
        return number


def check_question(question: str, hint: str) -> str:
    """`question`, unless the library refuses it (corpus `asked`: one wording for every front
    end): then bad usage naming the argument `hint` (exit 2)."""
    from .corpus import asked
    from .corpus.specs import BadSpec

    try:
        asked(question)
    except BadSpec as e:
        raise click.BadParameter(str(e), param_hint=hint) from None
    return question


def _filters_option(ctx, param, value) -> tuple:
    """--filter values parsed once; a malformed one is bad usage (exit 2)."""
    from .search.filters import BadFilter, parse_filters

    try:
        return parse_filters(value)
    except BadFilter as e:
        raise click.BadParameter(str(e), ctx, param) from None


filter_option = click.option(
    "--filter", "filters", multiple=True, metavar="FIELD=V", callback=_filters_option,
    help="Rank only documents whose field (url, title, or metadata such as category, tags,"
         " author, date) matches: FIELD=a,b (one of), !=, >=, <=, ^= (prefix); repeatable, all"
         " must hold.")
