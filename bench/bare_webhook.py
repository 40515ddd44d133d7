"""The floor of a Python webhook on this stack, for ``bench/webhook.py``: aiohttp's low-level
``web.Server`` (as ``tfgang-webhook`` serves) on uvloop over TLS, the review decoded with orjson and
answered ``allowed`` with the uid echoed, nothing else.

What tfgang spends above this server per review is the cost of its own code (the accept loop and
header deadline, the body's bounds, parsing the review, the lookup and the mutation, metrics,
logging context), not of Python, HTTP or TLS.

Run: ``python bench/bare_webhook.py --port P --cert-dir DIR``.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys

import orjson
from aiohttp import web


async def review(request: web.BaseRequest) -> web.Response:
    document = orjson.loads(await request.read())
    answer = {
        "apiVersion": document["apiVersion"],
        "kind": "AdmissionReview",
        "response": {"uid": document["request"]["uid"], "allowed": True},
    }
    return web.Response(body=orjson.dumps(answer), content_type="application/json")


async def serve(port: int, context: ssl.SSLContext) -> None:
    server = web.Server(review, access_log=None)
    listening = await asyncio.get_running_loop().create_server(server, "127.0.0.1", port, ssl=context)
    async with listening:
        await listening.serve_forever()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert-dir", required=True)
    args = parser.parse_args()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(f"{args.cert_dir}/tls.crt", f"{args.cert_dir}/tls.key")
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(args.port, context))
    else:
        uvloop.run(serve(args.port, context))
    return 0


if __name__ == "__main__":
    sys.exit(main())
