"""The token bucket allows a burst, then one token per 1/qps seconds, queueing reservations fairly."""

from __future__ import annotations

import pytest

from kube.ratelimit import TokenBucket


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_reservations_queue_up_at_the_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)


def test_tokens_refill_over_time_up_to_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=2, burst=2, clock=clock)
    assert bucket.try_acquire() and bucket.try_acquire()
    assert not bucket.try_acquire()
    clock.now += 0.5
    assert bucket.try_acquire()
    assert not bucket.try_acquire()
    clock.now += 100
    assert bucket.available == pytest.approx(2.0)


def test_unlimited_bucket_never_waits() -> None:
    bucket = TokenBucket(qps=0, burst=1, clock=FakeClock())
    assert all(bucket.reserve() == 0.0 for _ in range(1000))


def test_bad_burst_is_refused() -> None:
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(qps=1, burst=0)


async def test_acquire_takes_a_token_even_when_it_has_to_wait() -> None:
    clock = FakeClock()  # frozen: no token ever refills, so the second acquire is a reservation
    bucket = TokenBucket(qps=100, burst=1, clock=clock)
    await bucket.acquire()
    assert bucket.available == pytest.approx(0.0)
    await bucket.acquire()  # sleeps the reserved 10 ms, then returns
    assert bucket.available == pytest.approx(-1.0)
