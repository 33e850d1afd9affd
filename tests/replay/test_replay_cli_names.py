"""The replay command's choices (kept light for `mtagent --help`) match the real implementations."""

from mtagent.replay import names
from mtagent.replay.formats import FORMATS
from mtagent.replay.strategies import REGISTRY


def test_format_names_match_the_converters():
    assert names.FORMAT_NAMES == FORMATS


def test_every_strategy_name_builds_a_strategy_and_peers_are_strategies():
    assert set(names.PEERS) <= set(names.STRATEGY_NAMES)
    assert set(REGISTRY) == set(names.STRATEGY_NAMES)
