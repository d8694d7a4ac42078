"""A pod's signals as one block: a mapping like a dict of arrays, whose rows are views of the block."""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.contract.window import SignalBlock


def test_a_block_reads_as_the_mapping_it_was_built_from() -> None:
    signals = {"gpu_util": np.array([0.5, np.nan, 0.7]), "power_w": np.array([100.0, 120.0, 90.0])}
    block = SignalBlock.of(signals)
    assert list(block) == ["gpu_util", "power_w"] and len(block) == 2
    assert "gpu_util" in block and "sm_active" not in block and block.get("sm_active") is None
    for name, values in signals.items():
        np.testing.assert_array_equal(block[name], values)
    assert block.array.shape == (2, 3) and block.array.flags.c_contiguous
    assert np.shares_memory(block["power_w"], block.array)  # a row is a view, not a copy
    with pytest.raises(KeyError):
        block["sm_active"]


def test_an_empty_block_keeps_the_window_length() -> None:
    block = SignalBlock.of({}, 5)
    assert len(block) == 0 and block.array.shape == (0, 5)


@pytest.mark.parametrize(
    ("names", "array"),
    [
        (["a", "b"], np.zeros((3, 4))),  # rows and names differ
        (["a"], np.zeros(4)),  # not 2-D
        (["a", "a"], np.zeros((2, 4))),  # a name twice
    ],
)
def test_inconsistent_blocks_are_refused(names: list[str], array: np.ndarray) -> None:
    with pytest.raises(ValueError):
        SignalBlock(names, array)


def test_series_of_different_lengths_do_not_stack() -> None:
    with pytest.raises(ValueError):
        SignalBlock.of({"a": np.zeros(3), "b": np.zeros(4)})
