"""Starts MCP Hangar with its own ResponseTruncator registered in its mutator pipeline.

Hangar 2.34.4 ships a ResponseTruncator (application/mutators/response_truncator.py) but
registers it nowhere, so the batch executor's MutatorPipeline is always empty and finding 1
of the surface inventory (the truncator reads payload["result"], a key the executor's payload
does not have) cannot be seen from outside. This launcher wires it the way a deployment
turning the mutator on would: every MutatorPipeline Hangar builds gets one ResponseTruncator,
with max_bytes from RELAYCHECK_TRUNCATOR_MAX_BYTES. Nothing else of Hangar changes; the rest
of the argv goes to Hangar's own command line.

Before Hangar starts, the truncator is tried on a payload of the shape its unit tests use
({"result": ...}): it must cut that one, so that an uncut result seen later through
hangar_call is the payload mismatch and not a truncator that never cuts. A failed check
exits 3 with the reason on stderr.
"""

import contextlib
import os
import sys

from mcp_hangar.application.mutators.response_truncator import ResponseTruncator
from mcp_hangar.application.services.mutator_pipeline import MutatorPipeline
from mcp_hangar.domain.contracts.mutator import MutationContext

MAX_BYTES = int(os.environ.get("RELAYCHECK_TRUNCATOR_MAX_BYTES", "20000"))


def cuts_a_wrapper_payload() -> bool:
    payload = {"result": {"content": [{"type": "text", "text": "x" * (2 * MAX_BYTES)}]}}
    context = MutationContext(
        method="tools/call", direction="response", payload=payload, correlation_id="launcher-check"
    )
    return ResponseTruncator(max_bytes=MAX_BYTES).mutate(context).changed


def wire_truncator() -> None:
    built = MutatorPipeline.__init__

    def with_truncator(self) -> None:
        built(self)
        self.register(ResponseTruncator(max_bytes=MAX_BYTES))

    MutatorPipeline.__init__ = with_truncator


def report_first_response() -> None:
    """Says on stderr, once, that the truncator ran on a call's response and what it was
    handed, so an uncut result in the run is seen to be the truncator's doing, not a pipeline
    the launcher failed to reach."""
    mutate = ResponseTruncator.mutate
    reported = []

    def mutate_and_report(self, context):
        result = mutate(self, context)
        if context.direction == "response" and not reported:
            reported.append(True)
            keys = sorted(context.payload) if isinstance(context.payload, dict) else type(context.payload).__name__
            print(
                f"hangar-truncator-wired: the ResponseTruncator ran on a {context.method} response,"
                f" payload keys {keys}, changed: {result.changed}",
                file=sys.stderr,
                flush=True,
            )
        return result

    ResponseTruncator.mutate = mutate_and_report


if __name__ == "__main__":
    # Hangar's logging is not set up yet and would print the check's event on stdout.
    with contextlib.redirect_stdout(sys.stderr):
        cut = cuts_a_wrapper_payload()
    if not cut:
        print("hangar-truncator-wired: the ResponseTruncator did not cut a wrapper payload", file=sys.stderr)
        sys.exit(3)
    wire_truncator()
    report_first_response()
    # Imported only now: importing Hangar's server builds its batch executor, and with it the
    # pipeline, which must already be the wired one.
    from mcp_hangar.server.cli import cli_main

    print(f"hangar-truncator-wired: ResponseTruncator(max_bytes={MAX_BYTES}) in every MutatorPipeline", file=sys.stderr)
    sys.argv[0] = "mcp-hangar"
    sys.exit(cli_main())
