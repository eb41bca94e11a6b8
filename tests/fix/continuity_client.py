"""A QuickFIX counterparty at one gateway of a tiered venue, driven by
crates/exchange/tests/tiers_fix_continuity.rs (not a test of its own).

    continuity_client.py first PORT STORE_DIR
        logs on at the gateway on PORT, places c1 to c3, reads their
        reports and logs out;
    continuity_client.py second PORT STORE_DIR
        logs on at another gateway with the same store, so with QuickFIX's
        next sequence numbers, lets QuickFIX recover the gap (the reports
        of the first gateway's time come again), then places c4.

Each prints one JSON line: the application messages received, with their
MsgSeqNum (34), ClOrdID (11), ExecID (17), ExecType (150) and PossDupFlag
(43), and the session Rejects (35=3) QuickFIX sent or received.
"""

import json
import queue
import sys
import time
import types

from harness import WAIT, QuickFixClient, order_fields, parse

SENDER = "BANK1"


class Counterparty(QuickFixClient):
    """Also records the session Rejects QuickFIX itself sends: what it
    found wrong in the exchange's messages."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent_rejects = queue.Queue()

    def toAdmin(self, message, session_id):
        super().toAdmin(message, session_id)
        sent = parse(message.toString())
        if sent.get(35) == "3":
            self.sent_rejects.put(sent.get(58))


def summary(message):
    return {str(tag): message.get(tag) for tag in (34, 11, 17, 150, 43, 122)}


def drain(source):
    messages = []
    while True:
        try:
            messages.append(source.get_nowait())
        except queue.Empty:
            return messages


def redelivered(client, wanted):
    """Application messages until every ClOrdID in `wanted` came with
    PossDupFlag."""
    seen = []
    deadline = time.time() + WAIT
    while not wanted <= {m.get(11) for m in seen if m.get(43) == "Y"}:
        remaining = deadline - time.time()
        if remaining <= 0:
            raise AssertionError(f"no redelivery of {wanted}; got {seen}")
        seen.append(client.app_messages.get(timeout=remaining))
    return seen


def main():
    phase, port, store = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    venue = types.SimpleNamespace(dir=store, fix_port=port, log=lambda: "")
    client = Counterparty(venue, SENDER, password=f"pw-{SENDER}", heartbeat=30, store_dir=store)
    client.start()
    received = []
    if phase == "first":
        for n in (1, 2, 3):
            client.send("D", order_fields(f"c{n}", 1, "0.01", "59000"))
            received.append(client.next_app(lambda m, n=n: m.get(11) == f"c{n}"))
    else:
        received.extend(redelivered(client, {"c1", "c2", "c3"}))
        client.send("D", order_fields("c4", 1, "0.01", "59000"))
        received.append(client.next_app(lambda m: m.get(11) == "c4" and m.get(43) is None))
    received.extend(drain(client.app_messages))
    client.stop()
    admin = drain(client.admin_messages)
    rejects = [m.get(58) for m in admin if m.get(35) == "3"] + drain(client.sent_rejects)
    print(json.dumps({"received": [summary(m) for m in received], "rejects": rejects}))


if __name__ == "__main__":
    main()
