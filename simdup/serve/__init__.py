"""``simdup serve``: near-duplicate checks over HTTP, at ingest time, against an index.

A crawler or an ingestion pipeline asks, for each new document, "have I seen something
like this?", and adds it if not. The server keeps one index open (no process start-up per
query) and answers in JSON. The package is built in floors:
:mod:`~simdup.serve.contract` (what a request may carry and what an answer holds),
:mod:`~simdup.serve.openapi` (the description of it), :mod:`~simdup.serve.service` (the
index behind the server: connections, one writer, keys planned again as it grows),
:mod:`~simdup.serve.app` (the Starlette application) and :mod:`~simdup.serve.server`
(uvicorn, the address and token rules, a clean stop).

It needs the ``serve`` extra (``pip install 'simdup[serve]'``): Starlette and uvicorn.
"""
