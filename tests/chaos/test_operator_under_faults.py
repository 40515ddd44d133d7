"""The operator on the sandbox under the faults a cluster meets at 3 a.m.: its controller killed
at random moments, the API server away and its history compacted, the webhook away under
``failurePolicy: Fail``, the leader killed, the webhook's certificates rotated. Each test runs one
scenario of ``scenarios.py`` and checks its figures: every job Succeeded, none ever Failed, no
object made twice, no request failed."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from sandbox.cluster import LocalCluster

from .scenarios import (
    LEADER_FLAGS,
    LEASE_SECONDS,
    ChaosCluster,
    SandboxCluster,
    api_outage,
    certificate_rotation,
    cluster_options,
    kill_storm,
    leader_failover,
    webhook_outage,
)

pytestmark = pytest.mark.timeout(300)


# The scenarios take a ChaosCluster: a kube-apiserver fixture can parametrise these two later.
@pytest.fixture
async def cluster() -> AsyncIterator[ChaosCluster]:
    async with LocalCluster(cluster_options()) as running:
        yield SandboxCluster(running)


@pytest.fixture
async def leader_cluster() -> AsyncIterator[ChaosCluster]:
    async with LocalCluster(cluster_options(controller_flags=LEADER_FLAGS)) as running:
        yield SandboxCluster(running)


async def test_controller_killed_at_random_moments_loses_and_duplicates_nothing(
    cluster: ChaosCluster,
) -> None:
    figures = await kill_storm(cluster, random.Random(1), jobs=20, kills=5)
    assert figures.kills == 5
    assert (figures.succeeded, figures.ever_failed, figures.duplicates) == (20, 0, 0), figures


async def test_an_api_outage_and_a_410_storm_mid_job_are_ridden_out(cluster: ChaosCluster) -> None:
    figures = await api_outage(cluster, random.Random(2), jobs=6, outage=5.0, storms=3)
    assert (figures.succeeded, figures.ever_failed, figures.duplicates) == (6, 0, 0), figures


async def test_with_the_webhook_away_the_job_waits_and_runs_once_it_is_back(cluster: ChaosCluster) -> None:
    figures = await webhook_outage(cluster, random.Random(3), away=5.0)
    assert (figures.succeeded, figures.ever_failed, figures.duplicates) == (1, 0, 0), figures
    assert figures.recovery_seconds is not None and figures.recovery_seconds < 30


async def test_certificate_rotation_while_reviews_flow_fails_no_request(cluster: ChaosCluster) -> None:
    figures = await certificate_rotation(cluster, random.Random(4), rotations=2)
    assert figures.requests > 20 and figures.failed_requests == 0, figures


async def test_the_standby_takes_over_from_a_killed_leader_and_never_writes_beside_it(
    leader_cluster: ChaosCluster,
) -> None:
    figures = await leader_failover(leader_cluster, random.Random(5), jobs=4)
    assert (figures.succeeded, figures.ever_failed, figures.duplicates) == (4, 0, 0), figures
    assert figures.takeover_seconds is not None
    # The Lease expires LEASE_SECONDS after the last renewal; the standby polls every 0.5 s.
    assert figures.takeover_seconds < LEASE_SECONDS + 4, figures
