"""The webhook's own cost per review, in CPU instructions counted by callgrind: the seed's worker
review (``tests/fixtures/admissionreviews/mutate-seed-worker-0.json``) through the admission app,
warm, in one process, no HTTP or TLS; beside it the bare aiohttp handler's work
(``bench/bare_webhook.py``: decode, answer ``allowed``, encode) and each stage of ours alone.

Instructions, unlike times, do not move with the machine's load, so a cut of a few thousand
instructions shows from one run. Every stage runs ``--reviews`` times inside an
``itertools.starmap`` that nothing else here uses: callgrind collects only inside
``starmap_next`` (``--toggle-collect``) and writes each stage's count when the next stage's loop
is made (``--dump-before``), so warm-ups, imports and set-up are never counted.

Run: ``python bench/review_cost.py`` (about a minute; needs ``valgrind``: ``bash bench/setup``).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SEED_WORKER = REPO / "tests" / "fixtures" / "admissionreviews" / "mutate-seed-worker-0.json"
WARM_UP = 200
# Stage name -> what the report calls it. "app" is the whole review as the server hands it over.
STAGES = {
    "app": "the whole review through `AdmissionApp.respond` (what tfgang adds to HTTP and TLS)",
    "bare": "the bare aiohttp handler's work (decode, answer `allowed`, encode)",
    "decode": "orjson decodes the body",
    "depth": "the nesting-depth check",
    "parse": "`parse_review`",
    "decide": "the pod decision (`admit_pod`: lookup, ownerReference, memo)",
    "  target": "of which the checks before the lookup (`pod_target`)",
    "  mutate": "of which the decision given the job (`mutate_pod`)",
    "answer": "the answer encoded and wrapped in a `web.Response`",
    "log context": "the review's log fields bound and unbound (`log_fields`)",
    "metrics": "the review counted (in-flight gauge, decision and request counters, latency histogram)",
}
# Stages that are parts of another one, not of the whole review's sum.
PARTS = ("  target", "  mutate")


def _finish(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """The result of a coroutine that never suspends (the lookup is a dict read here)."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise RuntimeError("the review suspended: the stages must not wait for I/O")


def stage_functions() -> dict[str, Callable[[], object]]:
    import orjson
    from aiohttp import web
    from prometheus_client import CollectorRegistry

    from kube.logs import bind_log_fields_of, configure_json_logging, reset_log_fields
    from tfjob.settings import Settings
    from webhook.admission import admit_pod
    from webhook.app import MUTATE_PODS_PATH, _ReviewLogFields, build_app
    from webhook.bounds import check_depth
    from webhook.cache import StaticJobs
    from webhook.job_memo import MutationMemo
    from webhook.metrics import WebhookMetrics
    from webhook.mutate_pod import mutate_pod, pod_target
    from webhook.review import build_response, parse_review

    # As the webhook runs by default: INFO, so the per-review DEBUG lines are filtered.
    configure_json_logging(logging.INFO, stream=open(os.devnull, "w"))  # noqa: SIM115 - for the process's life
    case = orjson.loads(SEED_WORKER.read_bytes())
    body = orjson.dumps(case["review"])
    jobs = StaticJobs(case["tfjobs"])
    settings = Settings()
    app = build_app(jobs, settings, WebhookMetrics(CollectorRegistry()))
    metrics = WebhookMetrics(CollectorRegistry())
    in_flight = metrics.in_flight(MUTATE_PODS_PATH)
    memo = MutationMemo()
    document = orjson.loads(body)
    review = parse_review(document)
    decision = _finish(admit_pod(review, jobs, settings, memo))
    target = pod_target(review)
    job = _finish(jobs.get(target.namespace, target.job_name))  # type: ignore[union-attr]

    def whole() -> object:
        response = _finish(app.respond("POST", MUTATE_PODS_PATH, "application/json", body))
        assert response.status == 200
        return response

    def bare() -> object:  # bench/bare_webhook.py's handler, past request.read()
        received = orjson.loads(body)
        answer = {
            "apiVersion": received["apiVersion"],
            "kind": "AdmissionReview",
            "response": {"uid": received["request"]["uid"], "allowed": True},
        }
        return web.Response(body=orjson.dumps(answer), content_type="application/json")

    def answer() -> object:
        return web.Response(
            status=200, body=orjson.dumps(build_response(review, decision)), content_type="application/json"
        )

    def context() -> None:
        reset_log_fields(bind_log_fields_of(_ReviewLogFields(review)))

    def counted() -> None:
        in_flight.count += 1
        in_flight.count -= 1
        metrics.count_decision(MUTATE_PODS_PATH, review.operation, decision.allowed, decision.reason)
        metrics.observe_request(MUTATE_PODS_PATH, "allowed", 0.0004)

    return {
        "app": whole,
        "bare": bare,
        "decode": lambda: orjson.loads(body),
        "depth": lambda: check_depth(document),
        "parse": lambda: parse_review(document),
        "decide": lambda: _finish(admit_pod(review, jobs, settings, memo)),
        "  target": lambda: pod_target(review),
        "  mutate": lambda: mutate_pod(target, job, settings, memo),  # type: ignore[arg-type]
        "answer": answer,
        "log context": context,
        "metrics": counted,
    }


def measure_inside(reviews: int) -> None:
    """Run under callgrind: each stage warm, then ``reviews`` times inside its own starmap."""
    functions = stage_functions()
    for name in STAGES:
        function = functions[name]
        for _ in range(WARM_UP):
            function()
        print(f"stage {name}", flush=True)
        # The starmap is made here: callgrind dumps what the stage before collected.
        collections.deque(itertools.starmap(function, itertools.repeat((), reviews)), maxlen=0)


def run_callgrind(reviews: int) -> dict[str, float]:
    """Instructions per review of each stage."""
    from tools import tool  # this folder, on the path when run as a script
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        command = [
            tool("valgrind"), "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=starmap_next",
            "--dump-before=itertools_starmap", f"--callgrind-out-file={out}",
            # -P: this folder (bench/webhook.py) would shadow the webhook package.
            sys.executable, "-P", __file__, "--inside", "--reviews", str(reviews),
        ]  # fmt: skip
        environment = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO)}
        finished = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
        if finished.returncode != 0:
            raise RuntimeError(f"callgrind failed:\n{finished.stderr[-3000:]}")
        # One dump per starmap made (the first holds nothing: collection starts inside starmaps),
        # then the last stage's at exit.
        dumps = sorted(Path(scratch).glob("callgrind.out*"), key=_dump_number)
        counts = [_instructions(path) for path in dumps]
    collected = counts[1:]
    if len(collected) != len(STAGES):
        raise RuntimeError(f"expected {len(STAGES)} stage counts from callgrind, got {counts}")
    return {name: count / reviews for name, count in zip(STAGES, collected, strict=True)}


def _dump_number(path: Path) -> int:
    # callgrind.out (the final dump) comes last; callgrind.out.N in the order written.
    suffix = path.name.rpartition(".")[2]
    return int(suffix) if suffix.isdigit() else sys.maxsize


def _instructions(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    return 0


def render(per_review: dict[str, float], reviews: int) -> str:
    app, bare = per_review["app"], per_review["bare"]
    stages = sum(per_review[name] for name in STAGES if name not in ("app", "bare", *PARTS))
    rows = "\n".join(f"| {STAGES[name]} | {per_review[name] / 1000:,.1f}k |" for name in STAGES)
    return (
        f"Instructions per seed-worker review (callgrind, {reviews} warm reviews per stage):\n\n"
        f"| stage | instructions |\n|---|---|\n{rows}\n"
        f"| the rest of `respond` (timing, the decision's log line, checks) | "
        f"{(app - stages) / 1000:,.1f}k |\n\n"
        f"tfgang's review {app / 1000:,.1f}k against the bare handler's {bare / 1000:,.1f}k "
        f"({app / bare:.2f}x).\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=1000)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        measure_inside(args.reviews)
        return 0
    print(render(run_callgrind(args.reviews), args.reviews))
    return 0


if __name__ == "__main__":
    sys.exit(main())
