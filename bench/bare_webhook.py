"""The floor of a Python webhook on this stack, for ``bench/webhook.py``: aiohttp on uvloop over TLS,
the review decoded with orjson and answered ``allowed`` with the uid echoed, nothing else.

What tfgang spends above this server per review is the cost of its own code (routing, parsing the
review, the lookup and the mutation, metrics, logging context), not of Python, HTTP or TLS.

Run: ``python bench/bare_webhook.py --port P --cert-dir DIR``.
"""

from __future__ import annotations

import argparse
import ssl
import sys

import orjson
from aiohttp import web


async def review(request: web.Request) -> web.Response:
    document = orjson.loads(await request.read())
    answer = {
        "apiVersion": document["apiVersion"],
        "kind": "AdmissionReview",
        "response": {"uid": document["request"]["uid"], "allowed": True},
    }
    return web.Response(body=orjson.dumps(answer), content_type="application/json")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert-dir", required=True)
    args = parser.parse_args()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(f"{args.cert_dir}/tls.crt", f"{args.cert_dir}/tls.key")
    app = web.Application(client_max_size=4 * 1024 * 1024)
    app.router.add_post("/mutate-pods", review)
    try:
        import uvloop
    except ImportError:
        loop = None
    else:
        loop = uvloop.new_event_loop()
    web.run_app(
        app, host="127.0.0.1", port=args.port, ssl_context=context, access_log=None, print=None, loop=loop
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
