"""The exchange's FIX gateway against QuickFIX, an independent FIX engine,
as the initiator: logon, orders, fills, replaces, cancels, mass cancel,
drop copy, disconnect and resend, cancel on disconnect, security status
with its updates, wrong credentials.

QuickFIX validates every message it receives against the standard FIX 4.4
dictionary and answers a non-conformant one with a session Reject, which
these tests watch for.
"""

import os
import unittest

from harness import DROP_COPY, Exchange, QuickFixClient, order_fields, utc_now

EX = None


def setUpModule():
    global EX
    EX = Exchange()
    EX.start()
    EX.fund_accounts(10)


def tearDownModule():
    if EX:
        EX.stop()
        EX.destroy()


class QuickFixSessions(unittest.TestCase):
    def setUp(self):
        self.clients = []

    def tearDown(self):
        for client in self.clients:
            client.stop()
        for client in self.clients:
            rejects = [m for m in drain(client.admin_messages) if m.get(35) == "3"]
            self.assertEqual(rejects, [], f"{client.sender} rejected messages of the exchange")

    def client(self, sender, **kwargs):
        client = QuickFixClient(EX, sender, **kwargs)
        self.clients.append(client)
        return client

    def test_orders_fills_replace_cancel_and_mass_cancel(self):
        buyer, seller, drop = self.client("CLIENT1"), self.client("CLIENT2"), self.client(DROP_COPY)
        for client in (buyer, seller, drop):
            client.start()

        buyer.send("D", order_fields("b1", 1, "1", "60000"))
        ack = buyer.next_app(lambda m: m.get(11) == "b1")
        self.assertEqual((ack[35], ack[150], ack[39], ack[151], ack[14], ack[1]), ("8", "0", "0", "1", "0", "1"))
        order_id = ack[37]

        seller.send("D", order_fields("s1", 2, "0.4", "60000"))
        self.assertEqual(seller.next_app(lambda m: m.get(11) == "s1")[150], "0")
        taker = seller.next_app(lambda m: m.get(11) == "s1" and m.get(150) == "F")
        self.assertEqual((taker[39], taker[32], taker[31], taker[14], taker[851]), ("2", "0.4", "60000", "0.4", "2"))
        maker = buyer.next_app(lambda m: m.get(11) == "b1" and m.get(150) == "F")
        self.assertEqual((maker[37], maker[39], maker[14], maker[151], maker[6], maker[851]),
                         (order_id, "1", "0.4", "0.6", "60000", "1"))
        self.assertEqual(maker[527], taker[527], "both sides name the same trade")
        for cl_ord_id in ("b1", "s1"):
            copy = drop.next_app(lambda m, c=cl_ord_id: m.get(11) == c and m.get(150) == "F")
            self.assertIn(copy[1], ("1", "2"))

        buyer.send("G", [(41, "b1"), (11, "b2"), (55, "BTC-USD"), (54, 1), (60, utc_now()), (38, "2"), (40, 2), (44, "59990")])
        replaced = buyer.next_app(lambda m: m.get(11) == "b2" and m.get(150) == "5")
        self.assertEqual((replaced[11], replaced[41], replaced[38], replaced[44], replaced[14], replaced[151], replaced[39]),
                         ("b2", "b1", "2", "59990", "0.4", "1.6", "1"))

        buyer.send("F", [(41, "b2"), (11, "x1"), (55, "BTC-USD"), (54, 1), (60, utc_now())])
        canceled = buyer.next_app(lambda m: m.get(11) == "x1")
        self.assertEqual((canceled[11], canceled[41], canceled[39], canceled[151], canceled[14]), ("x1", "b2", "4", "0", "0.4"))

        buyer.send("F", [(41, "b2"), (11, "x2"), (55, "BTC-USD"), (54, 1), (60, utc_now())])
        too_late = buyer.next_app(lambda m: m.get(11) == "x2")
        self.assertEqual((too_late[11], too_late[41], too_late[39], too_late[434], too_late[102], too_late[37]),
                         ("x2", "b2", "4", "1", "0", order_id))
        self.assertTrue(too_late[58].startswith("order_not_open"), too_late[58])

        buyer.send("D", order_fields("big", 1, "100000", "60000"))
        refused = buyer.next_app(lambda m: m.get(11) == "big")
        self.assertEqual((refused[150], refused[39], refused[103], refused[37]), ("8", "8", "3", "NONE"))
        self.assertTrue(refused[58].startswith("insufficient_funds"), refused[58])

        for cl_ord_id, price in (("m1", "59000"), ("m2", "58000")):
            buyer.send("D", order_fields(cl_ord_id, 1, "0.1", price))
            self.assertEqual(buyer.next_app(lambda m, c=cl_ord_id: m.get(11) == c)[150], "0")
        buyer.send("q", [(11, "mc1"), (530, 7), (60, utc_now())])
        report = buyer.next_app(lambda m: m.get(35) == "r" and m.get(11) == "mc1")
        self.assertEqual((report[11], report[531], report[533]), ("mc1", "7", "2"))
        affected = [value for tag, value in report["_fields"] if tag == 41]
        self.assertEqual(sorted(affected), ["m1", "m2"])
        for cl_ord_id in ("m1", "m2"):
            gone = buyer.next_app(lambda m, c=cl_ord_id: m.get(11) == c and m.get(150) == "4")
            self.assertEqual(gone[58], "mass_cancel")

    def test_reports_made_while_away_come_back_by_resend(self):
        resting, aggressor = self.client("CLIENT2"), self.client("CLIENT1")
        resting.start()
        aggressor.start()
        resting.send("D", order_fields("away1", 2, "0.25", "60100"))
        self.assertEqual(resting.next_app(lambda m: m.get(11) == "away1")[150], "0")

        resting.stop()
        resting.logouts.get(timeout=10)
        aggressor.send("D", order_fields("hit1", 1, "0.25", "60100", extra=[(59, 3)]))
        self.assertEqual(aggressor.next_app(lambda m: m.get(11) == "hit1" and m.get(150) == "F")[39], "2")

        # The fill happened while CLIENT2 was away: it is stored under its
        # sequence number, and QuickFIX (same store, new process state)
        # asks for it after logging on again.
        resting = self.client("CLIENT2")
        resting.start()
        fill = resting.next_app(lambda m: m.get(11) == "away1" and m.get(150) == "F")
        self.assertEqual((fill[39], fill[43]), ("2", "Y"))
        self.assertIn(122, fill, "a resent message carries OrigSendingTime")

    def test_cancel_on_disconnect(self):
        trader, drop = self.client("CLIENT1"), self.client(DROP_COPY)
        trader.start()
        drop.start()
        trader.send("D", order_fields("cod1", 1, "0.1", "57000"))
        self.assertEqual(trader.next_app(lambda m: m.get(11) == "cod1")[150], "0")
        trader.stop()
        trader.logouts.get(timeout=10)
        canceled = drop.next_app(lambda m: m.get(11) == "cod1" and m.get(150) == "4")
        self.assertEqual((canceled[1], canceled[58]), ("1", "mass_cancel"))

    def test_security_status_answers_and_follows_a_halt(self):
        # ETH-USD: the other tests trade BTC-USD, and a resume reopens
        # the instrument through an auction.
        watcher = self.client("CLIENT2")
        watcher.start()
        watcher.send("e", [(324, "ss1"), (55, "ETH-USD"), (263, 1)])
        status = watcher.next_app(lambda m: m.get(35) == "f" and m.get(324) == "ss1")
        self.assertEqual((status[55], status[325], status[326], status[625]), ("ETH-USD", "N", "17", "3"))

        EX.admin("/admin/instruments/ETH-USD/halt")
        halted = watcher.next_app(lambda m: m.get(35) == "f" and m.get(325) == "Y")
        self.assertEqual((halted[324], halted[55], halted[326]), ("ss1", "ETH-USD", "2"))
        self.assertNotIn(625, halted, "a halt is no trading session")
        EX.admin("/admin/instruments/ETH-USD/resume")
        resumed = watcher.next_app(lambda m: m.get(35) == "f" and m.get(325) == "Y")
        self.assertEqual((resumed[324], resumed[326]), ("ss1", "3"))

        # The operator's reference price is pushed in LastPx (31), a field
        # the FIX 4.4 dictionary allows on SecurityStatus.
        EX.admin("/admin/instruments/ETH-USD/reference_price", {"price": "2999.5"})
        reference = watcher.next_app(lambda m: m.get(35) == "f" and m.get(31) == "2999.5")
        self.assertEqual((reference[324], reference[55], reference[325]), ("ss1", "ETH-USD", "Y"))

        watcher.send("e", [(324, "ss2"), (55, "NONE-USD"), (263, 0)])
        unknown = watcher.next_app(lambda m: m.get(35) == "f" and m.get(324) == "ss2")
        self.assertEqual((unknown[55], unknown[326]), ("NONE-USD", "20"))
        self.assertTrue(unknown[58].startswith("unknown_instrument"), unknown[58])

    def test_wrong_password_gets_a_logout_with_the_reason(self):
        intruder = self.client("RAW8", password="not-the-password", store_dir=os.path.join(EX.dir, "intruder"))
        intruder.start(expect_logon=False)
        logout = intruder.next_admin(lambda m: m.get(35) == "5")
        self.assertIn("invalid Password (554)", logout.get(58, ""))
        self.assertTrue(intruder.logons.empty(), "a wrong password must not log on")


def drain(source):
    items = []
    while not source.empty():
        items.append(source.get_nowait())
    return items


if __name__ == "__main__":
    unittest.main()
