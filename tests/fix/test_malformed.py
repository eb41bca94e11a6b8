"""What a correct FIX engine never sends, crafted byte by byte with
simplefix: bad checksums and body lengths, missing and unknown tags,
invalid values, wrong sequence numbers, bad CompIDs and SendingTimes,
garbage, wrong credentials. Each gets the answer FIX 4.4 prescribes: a
session Reject naming the tag, a Logout with the reason, or (for a garbled
message: wrong CheckSum or BodyLength, MsgType not third) silence without
counting it.
"""

import unittest

from harness import Exchange, RawClient, corrupt_checksum, order_fields, utc_now

EX = None


def setUpModule():
    global EX
    EX = Exchange()
    EX.start()
    EX.fund_accounts(13)


def tearDownModule():
    if EX:
        EX.stop()
        EX.destroy()


class Malformed(unittest.TestCase):
    def setUp(self):
        self.clients = []

    def tearDown(self):
        for client in self.clients:
            client.close()

    def raw(self, sender, **kwargs):
        client = RawClient(EX, sender, **kwargs)
        self.clients.append(client)
        return client

    def test_bad_checksum_is_ignored_and_not_counted(self):
        c = self.raw("RAW1")
        c.logon()
        garbled = c.build("D", order_fields("g1", 1, "0.1", "59000"), seq=2)
        c.send_raw(corrupt_checksum(garbled))
        c.expect_silence(1.0)
        # The same number again, intact: it was never counted.
        c.send("D", order_fields("g1", 1, "0.1", "59000"), seq=2)
        ack = c.receive_until(lambda m: m.get(35) == "8")
        self.assertEqual((ack[11], ack[150]), ("g1", "0"))

    def test_missing_required_tag_is_rejected_naming_the_tag(self):
        c = self.raw("RAW2")
        c.logon()
        c.send("D", [(11, "m1"), (55, "BTC-USD"), (54, 1), (60, utc_now()), (38, "0.1"), (44, "59000")])
        reject = c.receive()
        self.assertEqual((reject[35], reject[45], reject[371], reject[372], reject[373]), ("3", "2", "40", "D", "1"))
        # The session goes on and the rejected message was counted.
        c.send("1", [(112, "after-reject")])
        heartbeat = c.receive()
        self.assertEqual((heartbeat[35], heartbeat[112]), ("0", "after-reject"))

    def test_invalid_values_and_unknown_tags_are_session_rejects(self):
        c = self.raw("RAW3")
        c.logon()
        c.send("D", order_fields("v1", "Z", "0.1", "59000"))
        reject = c.receive()
        self.assertEqual((reject[35], reject[371], reject[373]), ("3", "54", "5"))
        c.send("D", order_fields("v2", 1, "0.1", "59000", extra=[(9999, "x")]))
        reject = c.receive()
        self.assertEqual((reject[371], reject[373]), ("9999", "0"))
        c.send("D", order_fields("v2", 1, "0.1", "59000", extra=[(262, "x")]))
        reject = c.receive()
        self.assertEqual((reject[371], reject[373]), ("262", "2"))
        c.send("D", order_fields("v3", 1, "0.1", "59000", extra=[(44, "1")]))
        reject = c.receive()
        self.assertEqual((reject[371], reject[373]), ("44", "13"))
        c.send("D", order_fields("v4", 1, "1e3", "59000"))
        reject = c.receive()
        self.assertEqual((reject[371], reject[373]), ("38", "6"))
        c.send("ZZ", [(58, "what")])
        reject = c.receive()
        self.assertEqual((reject[371], reject[373]), ("35", "11"))
        c.send("V", [(262, "md1")])
        business = c.receive()
        self.assertEqual((business[35], business[380], business[372]), ("j", "3", "V"))

    def test_sequence_gap_asks_for_a_resend_and_too_low_logs_out(self):
        c = self.raw("RAW4")
        c.logon()
        c.send("0", [], seq=5)
        request = c.receive()
        self.assertEqual((request[35], request[7], request[16]), ("2", "2", "0"))
        # Gap fill up to 6, then carry on in sequence.
        c.send("4", [(123, "Y"), (36, 6)], seq=2)
        c.send("1", [(112, "in-sequence")], seq=6)
        heartbeat = c.receive_until(lambda m: m.get(35) == "0")
        self.assertEqual(heartbeat[112], "in-sequence")
        # A possible duplicate below the expected number is ignored...
        c.send("0", [], seq=3, header=[(43, "Y"), (122, utc_now(-1))])
        c.expect_silence(0.5)
        # ...but a plain one ends the session, with the reason.
        c.send("0", [], seq=4)
        seen = c.expect_closed()
        logout = [m for m in seen if m.get(35) == "5"]
        self.assertTrue(logout, seen)
        self.assertIn("MsgSeqNum too low, expecting 7 but received 4", logout[0][58])

    def test_sequence_reset_in_reset_mode_moves_the_expected_number(self):
        c = self.raw("RAW5")
        c.logon()
        c.send("4", [(36, 20)], seq=999)
        c.send("1", [(112, "after-reset")], seq=20)
        self.assertEqual(c.receive_until(lambda m: m.get(35) == "0")[112], "after-reset")
        c.send("4", [(36, 3)], seq=21)
        reject = c.receive()
        self.assertEqual((reject[35], reject[371], reject[373]), ("3", "36", "5"))

    def test_resend_request_gets_gap_fills_and_poss_dup_copies(self):
        c = self.raw("RAW6")
        c.logon()
        c.send("D", order_fields("r1", 1, "0.1", "59000"))
        ack = c.receive_until(lambda m: m.get(35) == "8")
        self.assertEqual(ack[34], "2")
        c.send("2", [(7, 1), (16, 0)])
        gap_fill = c.receive()
        self.assertEqual((gap_fill[35], gap_fill[34], gap_fill[123], gap_fill[36], gap_fill[43]), ("4", "1", "Y", "2", "Y"))
        copy = c.receive()
        self.assertEqual((copy[35], copy[34], copy[11], copy[43], copy[122]), ("8", "2", "r1", "Y", ack[52]))

    def test_bad_body_length_and_misplaced_msg_type_are_ignored_and_not_counted(self):
        c = self.raw("RAW7")
        c.logon()
        good = c.build("1", [(112, "short")], seq=2)
        head, rest = good.split(b"\x019=", 1)
        length, body = rest.split(b"\x01", 1)
        c.send_raw(head + b"\x019=" + str(int(length) - 3).encode() + b"\x01" + body)
        c.expect_silence(1.0)
        # The next good message, past the ignored one, asks for a resend.
        c.send("1", [(112, "after-garbled")], seq=3)
        request = c.receive_until(lambda m: m.get(35) == "2")
        self.assertEqual((request[7], request[16]), ("2", "0"))
        c.send("4", [(123, "Y"), (36, 4)], seq=2)
        c.send("1", [(112, "in-sequence")], seq=4)
        heartbeat = c.receive_until(lambda m: m.get(35) == "0" and m.get(112) == "in-sequence")
        self.assertEqual(heartbeat[112], "in-sequence")

    def test_comp_id_and_sending_time_problems_reject_then_log_out(self):
        c = self.raw("RAW7")
        c.logon()
        c.send("0", [], sending_time=utc_now(-600))
        seen = c.expect_closed()
        self.assertEqual([m[35] for m in seen], ["3", "5"])
        self.assertEqual((seen[0][373], seen[0][371]), ("10", "52"))

    def test_refused_connections_get_a_logout_with_the_reason(self):
        cases = [
            # One answer for both, so that it does not say which sessions exist.
            (self.raw("NOBODY"), "unknown SenderCompID (49) and TargetCompID (56) or invalid Password (554)"),
            (self.raw("RAW1", password="wrong"), "unknown SenderCompID (49) and TargetCompID (56) or invalid Password (554)"),
        ]
        for client, reason in cases:
            client.send("A", [(98, 0), (108, 30), (554, client.password), (141, "Y")])
            seen = client.expect_closed()
            self.assertEqual(seen[-1][35], "5")
            self.assertIn(reason, seen[-1][58])
        garbage = self.raw("RAW1")
        garbage.send_raw(b"GET / HTTP/1.1\r\n\r\n")
        seen = garbage.expect_closed()
        self.assertIn("8=FIX.4.4", seen[-1][58])
        not_logon = self.raw("RAW1")
        not_logon.send("0", [])
        seen = not_logon.expect_closed()
        self.assertIn("first message must be a Logon", seen[-1][58])

    def test_heartbeats_and_test_requests_from_heartbeat_interval(self):
        c = self.raw("RAW2")
        c.logon(heartbeat=1)
        heartbeat = c.receive(timeout=3)
        self.assertEqual(heartbeat[35], "0")
        # Silent for 1.2 intervals: the exchange asks whether we are there.
        test_request = c.receive_until(lambda m: m.get(35) == "1", timeout=4)
        c.send("0", [(112, test_request[112])])
        # Silent for 2.4 intervals: it gives up with a reason.
        seen = c.expect_closed(timeout=6)
        self.assertIn("HeartBtInt", seen[-1].get(58, ""))

    def test_a_reset_logon_during_the_session_restarts_both_sides_at_one(self):
        c = self.raw("RAW9")
        c.logon()
        for n in range(3):
            c.send("1", [(112, f"t{n}")])
            c.receive()
        c.seq = 1
        c.send("A", [(98, 0), (108, 30), (554, c.password), (141, "Y")])
        reply = c.receive()
        self.assertEqual((reply[35], reply[34], reply[141]), ("A", "1", "Y"))
        c.send("1", [(112, "after-reset")])
        heartbeat = c.receive()
        self.assertEqual((heartbeat[35], heartbeat[34], heartbeat[112]), ("0", "2", "after-reset"))

    def test_a_too_low_possible_duplicate_needs_a_plausible_orig_sending_time(self):
        c = self.raw("RAW10")
        c.logon()
        c.send("0", [])
        c.send("0", [], seq=2, header=[(43, "Y")])
        reject = c.receive()
        self.assertEqual((reject[35], reject[373], reject[371]), ("3", "1", "122"))
        c.send("0", [], seq=2, header=[(43, "Y"), (122, utc_now(5))])
        seen = c.expect_closed()
        self.assertEqual([m[35] for m in seen], ["3", "5"])
        self.assertEqual((seen[0][373], seen[0][371]), ("10", "122"))

    def test_standard_fields_order_quantity_and_order_status(self):
        c = self.raw("RAW11")
        c.logon()
        parties = [(453, 1), (448, "DESK"), (447, "D"), (452, 3)]
        standard = [(1, 13), (21, 1), (48, "X1"), (22, "8"), (167, "FOR"), (58, "hi"), *parties]
        c.send("D", order_fields("s1", 1, "0.1", "59000", extra=standard))
        ack = c.receive()
        self.assertEqual((ack[35], ack[150], ack[11]), ("8", "0", "s1"))
        c.send("D", order_fields("s2", 1, "0.1", "59000", extra=[(167, "BOO")]))
        reject = c.receive()
        self.assertEqual((reject[35], reject[373], reject[371]), ("3", "5", "167"))
        c.send("D", order_fields("s3", 1, "0.1", "59000", extra=[(453, 2), (448, "DESK"), (452, 3)]))
        reject = c.receive()
        self.assertEqual((reject[35], reject[373], reject[371]), ("3", "16", "453"))
        c.send("D", [(11, "s4"), (55, "BTC-USD"), (54, 1), (60, utc_now()), (40, 2), (44, "59000")])
        refused = c.receive()
        self.assertEqual((refused[35], refused[150], refused[39]), ("8", "8", "8"))
        self.assertIn("OrderQty (38)", refused[58])
        c.send("H", [(11, "s1"), (55, "BTC-USD"), (54, 1), (790, "q1")])
        status = c.receive()
        self.assertEqual((status[35], status[150], status[39], status[37], status[790]), ("8", "I", "0", ack[37], "q1"))


if __name__ == "__main__":
    unittest.main()
