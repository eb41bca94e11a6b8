"""Shared fixtures for the FIX conformance tests.

Starts the real `exchange serve` binary (EXCHANGE_BIN) with a config that
defines FIX sessions, funds accounts through the admin API, and offers two
kinds of counterparty:

- QuickFIX (the `quickfix` Python binding), an independent FIX engine, as a
  real initiator with its own session layer and message store;
- a raw socket client built on `simplefix`, to send what a correct engine
  never would (bad checksums, missing tags, wrong sequence numbers).

Every wait is bounded; a test that does not get an answer fails.
"""

import datetime
import gc
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

try:
    import quickfix as fix
    import simplefix
except ImportError as error:  # pragma: no cover - the message is the point
    raise SystemExit(
        f"FIX tests need the quickfix and simplefix packages ({error}); "
        "install them with: pip install -r tests/fix/requirements.txt"
    )

ADMIN_TOKEN = "fix-test-admin-token-of-at-least-32-bytes"
WAIT = 10.0
COMP_ID = "EXCHANGE"

# Sessions and the accounts they trade for. Accounts are created in this
# order, so account ids are 1, 2, ... as listed.
TRADERS = {"CLIENT1": 1, "CLIENT2": 2}
RAW_SESSIONS = {f"RAW{n}": 2 + n for n in range(1, 12)}
DROP_COPY = "DROP1"
PASSWORDS = {name: f"pw-{name.lower()}" for name in [*TRADERS, *RAW_SESSIONS, DROP_COPY]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def utc_now(offset_seconds=0.0):
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset_seconds)
    return moment.strftime("%Y%m%d-%H:%M:%S.%f")[:-3]


def dictionary_path():
    """FIX44.xml as installed by the quickfix package."""
    candidates = [
        os.path.join(sys.prefix, "share", "quickfix", "FIX44.xml"),
        os.path.join(os.path.dirname(fix.__file__), "..", "..", "..", "share", "quickfix", "FIX44.xml"),
    ]
    for path in candidates:
        if os.path.exists(path):
            return os.path.abspath(path)
    raise SystemExit(f"FIX44.xml not found in {candidates}")


class Exchange:
    """A running `exchange serve` with FIX sessions configured."""

    def __init__(self):
        self.binary = os.environ.get("EXCHANGE_BIN")
        if not self.binary or not os.path.exists(self.binary):
            raise SystemExit("set EXCHANGE_BIN to the exchange binary (cargo build -p exchange)")
        self.dir = tempfile.mkdtemp(prefix="fix-tests-")
        self.data_dir = os.path.join(self.dir, "data")
        self.http_port = free_port()
        self.fix_port = free_port()
        self.config = os.path.join(self.dir, "config.toml")
        with open(self.config, "w") as out:
            out.write(f'[fix]\nlisten = "127.0.0.1:{self.fix_port}"\n')
            for name, account in [*TRADERS.items(), *RAW_SESSIONS.items()]:
                cancel = "true" if name == "CLIENT1" else "false"
                out.write(
                    f'[[fix.sessions]]\nsender_comp_id = "{name}"\npassword = "{PASSWORDS[name]}"\n'
                    f"account = {account}\ncancel_on_disconnect = {cancel}\n"
                )
            out.write(
                f'[[fix.sessions]]\nsender_comp_id = "{DROP_COPY}"\npassword = "{PASSWORDS[DROP_COPY]}"\n'
                "drop_copy_accounts = [1, 2]\n"
            )
        self.process = None
        self.log_path = os.path.join(self.dir, "server.log")

    def start(self):
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                [self.binary, "serve", "--data-dir", self.data_dir, "--listen", f"127.0.0.1:{self.http_port}",
                 "--config", self.config],
                stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn"),
                     "EXCHANGE_ADMIN_TOKEN": ADMIN_TOKEN},
            )
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"exchange exited during start-up:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/ready", timeout=1) as r:
                    if r.status == 200 and f"fix gateway listening on 127.0.0.1:{self.fix_port}" in self.log():
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"exchange not ready in time:\n{self.log()}")

    def stop(self):
        """SIGTERM and wait: the clean shutdown path (FIX sessions log out)."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError(f"exchange ignored SIGTERM:\n{self.log()}")
        self.process = None

    def destroy(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if os.environ.get("FIX_TESTS_KEEP"):
            print(f"kept {self.dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def admin(self, path, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}{path}", data=data, method="POST",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=WAIT) as response:
            return json.loads(response.read() or b"null")

    def fund_accounts(self, count):
        for expected in range(1, count + 1):
            account = self.admin("/admin/accounts")["account_id"]
            assert account == expected, f"account ids must start at 1 (got {account})"
            for asset, amount in [("USD", "100000000"), ("BTC", "10000")]:
                self.admin("/admin/deposits", {"account_id": account, "asset": asset, "amount": amount})


class QuickFixClient(fix.Application):
    """A QuickFIX initiator for one session, recording what it receives."""

    def __init__(self, exchange, sender, password=None, heartbeat=2, store_dir=None):
        super().__init__()
        self.exchange = exchange
        self.sender = sender
        self.password = PASSWORDS.get(sender) if password is None else password
        self.app_messages = queue.Queue()
        self.admin_messages = queue.Queue()
        self.logons = queue.Queue()
        self.logouts = queue.Queue()
        self.session_id = None
        # One store per session, kept across clients: a FIX engine keeps its
        # sequence numbers, and the exchange holds it to them.
        self.store_dir = store_dir or os.path.join(exchange.dir, f"quickfix-{sender}")
        os.makedirs(self.store_dir, exist_ok=True)
        settings_path = os.path.join(self.store_dir, "settings.cfg")
        with open(settings_path, "w") as out:
            out.write(
                "[DEFAULT]\nConnectionType=initiator\nReconnectInterval=1\nNonStopSession=Y\n"
                f"FileStorePath={self.store_dir}/store\nFileLogPath={self.store_dir}/log\n"
                f"UseDataDictionary=Y\nDataDictionary={dictionary_path()}\n"
                "ValidateUserDefinedFields=N\n"
                f"HeartBtInt={heartbeat}\nSocketConnectHost=127.0.0.1\nSocketConnectPort={exchange.fix_port}\n"
                f"[SESSION]\nBeginString=FIX.4.4\nSenderCompID={sender}\nTargetCompID={COMP_ID}\n"
            )
        settings = fix.SessionSettings(settings_path)
        self.initiator = fix.SocketInitiator(self, fix.FileStoreFactory(settings), settings, fix.FileLogFactory(settings))

    # QuickFIX callbacks (run on QuickFIX's threads).
    def onCreate(self, session_id):
        self.session_id = session_id

    def onLogon(self, session_id):
        self.logons.put(time.time())

    def onLogout(self, session_id):
        self.logouts.put(time.time())

    def toAdmin(self, message, session_id):
        msg_type = fix.MsgType()
        message.getHeader().getField(msg_type)
        if msg_type.getValue() == fix.MsgType_Logon and self.password:
            message.setField(fix.Password(self.password))

    def fromAdmin(self, message, session_id):
        self.admin_messages.put(parse(message.toString()))

    def toApp(self, message, session_id):
        pass

    def fromApp(self, message, session_id):
        self.app_messages.put(parse(message.toString()))

    # Test-side helpers.
    def start(self, expect_logon=True):
        self.initiator.start()
        if expect_logon:
            self.wait_logon()

    def wait_logon(self):
        try:
            self.logons.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"{self.sender}: no logon\n{self.exchange.log()[-3000:]}")

    def stop(self):
        # Destroying the initiator unregisters its session: QuickFIX keeps
        # one session object per SessionID in a process-wide registry, and a
        # later client of the same session must not find the old one there.
        if self.initiator is not None:
            self.initiator.stop()
            self.initiator = None
            gc.collect()

    def send(self, msg_type, fields):
        message = fix.Message()
        message.getHeader().setField(fix.BeginString(fix.BeginString_FIX44))
        message.getHeader().setField(fix.MsgType(msg_type))
        for tag, value in fields:
            message.setField(tag, str(value))
        if not fix.Session.sendToTarget(message, self.session_id):
            raise AssertionError(f"{self.sender}: QuickFIX refused to send {msg_type}")

    def next_app(self, predicate=lambda m: True, timeout=WAIT):
        """The next application message matching `predicate` (others are kept)."""
        return next_matching(self.app_messages, predicate, timeout, f"{self.sender} application message")

    def next_admin(self, predicate=lambda m: True, timeout=WAIT):
        return next_matching(self.admin_messages, predicate, timeout, f"{self.sender} admin message")


def next_matching(source, predicate, timeout, what):
    skipped = []
    deadline = time.time() + timeout
    try:
        while True:
            remaining = deadline - time.time()
            if remaining <= 0:
                raise AssertionError(f"no matching {what} in {timeout}s; saw {skipped}")
            try:
                message = source.get(timeout=remaining)
            except queue.Empty:
                raise AssertionError(f"no matching {what} in {timeout}s; saw {skipped}")
            if predicate(message):
                return message
            skipped.append(message)
    finally:
        for message in skipped:
            source.put(message)


def parse(text):
    """A FIX message as a dict of tag -> value (first occurrence) plus
    '_fields', the ordered list of (tag, value)."""
    fields = []
    for part in text.split("\x01"):
        if "=" in part:
            tag, value = part.split("=", 1)
            fields.append((int(tag), value))
    message = {}
    for tag, value in fields:
        message.setdefault(tag, value)
    message["_fields"] = fields
    return message


def order_fields(cl_ord_id, side, qty, price=None, symbol="BTC-USD", ord_type="2", extra=()):
    fields = [(11, cl_ord_id), (55, symbol), (54, side), (60, utc_now()), (38, qty), (40, ord_type)]
    if price is not None:
        fields.append((44, price))
    return fields + list(extra)


class RawClient:
    """A FIX client on a plain socket: every byte is the test's choice."""

    def __init__(self, exchange, sender, password=None):
        self.sender = sender
        self.password = PASSWORDS.get(sender) if password is None else password
        self.sock = socket.create_connection(("127.0.0.1", exchange.fix_port), timeout=WAIT)
        self.parser = simplefix.FixParser()
        self.seq = 1
        self.closed = False

    def build(self, msg_type, fields, seq=None, sending_time=None, header=()):
        message = simplefix.FixMessage()
        message.append_pair(8, "FIX.4.4")
        message.append_pair(35, msg_type)
        message.append_pair(49, self.sender)
        message.append_pair(56, COMP_ID)
        message.append_pair(34, self.seq if seq is None else seq)
        for tag, value in header:
            message.append_pair(tag, value)
        message.append_pair(52, sending_time or utc_now())
        for tag, value in fields:
            message.append_pair(tag, value)
        if seq is None:
            self.seq += 1
        return message.encode()

    def send(self, msg_type, fields, **kwargs):
        self.sock.sendall(self.build(msg_type, fields, **kwargs))

    def send_raw(self, data):
        self.sock.sendall(data)

    def logon(self, reset=True, heartbeat=30):
        fields = [(98, 0), (108, heartbeat), (554, self.password)]
        if reset:
            fields.append((141, "Y"))
        self.send("A", fields)
        reply = self.receive()
        assert reply.get(35) == "A", f"expected a Logon, got {reply}"
        return reply

    def receive(self, timeout=WAIT):
        deadline = time.time() + timeout
        while True:
            message = self.parser.get_message()
            if message is not None:
                return parse(message.encode().decode(errors="replace"))
            remaining = deadline - time.time()
            if remaining <= 0:
                raise AssertionError(f"{self.sender}: nothing received in {timeout}s")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise AssertionError(f"{self.sender}: nothing received in {timeout}s")
            if not data:
                self.closed = True
                raise ConnectionError(f"{self.sender}: the exchange closed the connection")
            self.parser.append_buffer(data)

    def receive_until(self, predicate, timeout=WAIT):
        deadline = time.time() + timeout
        seen = []
        while True:
            message = self.receive(max(0.01, deadline - time.time()))
            if predicate(message):
                return message
            seen.append(message)
            if time.time() > deadline:
                raise AssertionError(f"{self.sender}: no matching message; saw {seen}")

    def expect_silence(self, seconds):
        """Nothing arrives for `seconds` (the connection stays open)."""
        try:
            message = self.receive(seconds)
        except AssertionError:
            return
        raise AssertionError(f"{self.sender}: expected silence, got {message}")

    def expect_closed(self, timeout=WAIT):
        """Reads until the exchange closes the connection; returns what came."""
        seen = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                seen.append(self.receive(max(0.01, deadline - time.time())))
            except ConnectionError:
                return seen
        raise AssertionError(f"{self.sender}: the connection stayed open; saw {seen}")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def checksum_of(data):
    return sum(data) % 256


def corrupt_checksum(data):
    """The same message with a wrong CheckSum value."""
    head, _, _ = data.rpartition(b"10=")
    good = checksum_of(head)
    return head + b"10=%03d\x01" % ((good + 1) % 256)


__all__ = [
    "Exchange", "QuickFixClient", "RawClient", "TRADERS", "RAW_SESSIONS", "DROP_COPY", "PASSWORDS", "WAIT",
    "fix", "order_fields", "utc_now", "corrupt_checksum", "threading",
]
