"""The reasons given with null values, in one place (``docs/labels.md`` lists them)."""

from __future__ import annotations

NO_RULE = "no decision rule"
NO_HUMAN = "no human texts"
NO_AI = "no AI texts"
NO_SPLIT_FIT = "threshold not fitted: the protocol has no calibration split"
IN_SAMPLE = "in-sample oracle operating point"
FROM_CALIBRATION = "calibration split"
NO_COMPARISONS = "the protocol declares no [comparisons] and no [[gaps]]"
