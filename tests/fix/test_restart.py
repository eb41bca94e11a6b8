"""Sequence numbers and order state survive a restart of the exchange,
even one by SIGKILL: QuickFIX logs on again without any reset, and reports
on orders placed before the restart carry the right cumulative quantity
and average price.
"""

import unittest

from harness import Exchange, QuickFixClient, order_fields, utc_now

EX = None


def setUpModule():
    global EX
    EX = Exchange()
    EX.start()
    EX.fund_accounts(2)


def tearDownModule():
    if EX:
        EX.stop()
        EX.destroy()


class Restart(unittest.TestCase):
    def test_sequence_numbers_and_orders_survive_a_kill(self):
        # CLIENT2 rests an order (CLIENT1 cancels on disconnect, so it only
        # takes, with IOC orders).
        resting, taker = QuickFixClient(EX, "CLIENT2"), QuickFixClient(EX, "CLIENT1")
        try:
            resting.start()
            taker.start()
            resting.send("D", order_fields("keep1", 2, "1", "60000"))
            self.assertEqual(resting.next_app(lambda m: m.get(11) == "keep1")[150], "0")
            taker.send("D", order_fields("part1", 1, "0.3", "60000", extra=[(59, 3)]))
            self.assertEqual(resting.next_app(lambda m: m.get(11) == "keep1" and m.get(150) == "F")[14], "0.3")
            taker.next_app(lambda m: m.get(11) == "part1" and m.get(150) == "F")
            before = resting.next_admin(lambda m: m.get(35) == "A")
        finally:
            resting.stop()
            taker.stop()

        EX.process.kill()
        EX.process.wait()
        EX.start()

        resting, taker = QuickFixClient(EX, "CLIENT2"), QuickFixClient(EX, "CLIENT1")
        try:
            resting.start()
            taker.start()
            logon = resting.next_admin(lambda m: m.get(35) == "A")
            self.assertGreater(int(logon[34]), int(before[34]), "the exchange kept its outgoing sequence number")
            self.assertNotIn(141, logon, "no sequence reset")
            taker.send("D", order_fields("part2", 1, "0.2", "60000", extra=[(59, 3)]))
            fill = resting.next_app(lambda m: m.get(11) == "keep1" and m.get(150) == "F")
            self.assertEqual((fill[14], fill[151], fill[6], fill[39]), ("0.5", "0.5", "60000", "1"))
            resting.send("F", [(41, "keep1"), (11, "kx"), (55, "BTC-USD"), (54, 2), (60, utc_now())])
            canceled = resting.next_app(lambda m: m.get(11) == "kx")
            self.assertEqual((canceled[150], canceled[41], canceled[14]), ("4", "keep1", "0.5"))
        finally:
            resting.stop()
            taker.stop()


if __name__ == "__main__":
    unittest.main()
