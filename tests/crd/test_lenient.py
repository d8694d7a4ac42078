"""Lenient reading for showing: what does not validate is left out where it stands, nothing more."""

from __future__ import annotations

import pytest

from bottleneck_operator.reports import PodBreakdown, ReportStatus
from bottleneck_operator.reports.lenient import Unreadable, lenient

POD = {"pod": "train-0", "node": "n1", "bottleneck": "IO", "confidence": 0.8}


def test_an_item_whose_required_class_is_missing_is_left_out_of_its_list() -> None:
    # A class name has no empty value to stand in, so the item goes; its neighbours stay.
    status = lenient(ReportStatus, {"bottleneck": "IO", "pods": [{"pod": "train-1"}, POD, 7]})

    assert status.pods == [PodBreakdown.model_validate(POD)] and status.bottleneck == "IO"
    with pytest.raises(Unreadable):
        lenient(PodBreakdown, {"pod": "train-1"})


def test_a_refused_optional_value_reads_as_its_default_and_a_number_as_a_number() -> None:
    status = lenient(ReportStatus, {"bottleneck": "Disk", "confidence": "0.7", "probabilities": {"IO": 0.7, "X": []}})

    assert status.bottleneck is None and status.confidence == 0.7 and status.probabilities == {"IO": 0.7}
    assert lenient(ReportStatus, {"pods": "none"}).pods is None
