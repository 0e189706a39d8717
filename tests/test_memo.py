"""cdcnorm.canonical.memo.Memo: computed once per key, bounded, and an error is not remembered."""

from __future__ import annotations

import pytest

from cdcnorm.canonical.memo import Memo


def test_a_key_is_computed_once_and_the_memo_stays_bounded():
    calls = []
    memo = Memo(lambda k: calls.append(k) or k * 2, limit=3)
    assert [memo[1], memo[1], memo[2]] == [2, 2, 4] and calls == [1, 2]
    for k in range(3, 10):
        assert memo[k] == k * 2
    assert len(memo) <= 3 and memo.get(100) is None and 100 not in memo  # `get` never computes


def test_an_error_is_raised_and_not_remembered():
    memo = Memo(lambda k: 1 // k)
    with pytest.raises(ZeroDivisionError):
        memo[0]
    assert 0 not in memo and memo[1] == 1
