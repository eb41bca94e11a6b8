"""The web trading screen and the operator dashboard in headless Chromium.

Run by crates/exchange/tests/web_ui.rs, which starts `exchange serve --demo`
and passes, in the environment:

  EXCHANGE_URL          http://127.0.0.1:PORT
  EXCHANGE_ADMIN_TOKEN  the admin bearer token
  EXCHANGE_API_KEY      a demo account's API key
  EXCHANGE_API_SECRET   and its secret
  SCREENSHOT_DIR        where to write one screenshot per page and width
  CHROMIUM              the browser binary (default /usr/bin/chromium)

Every page must load and run without a console error or an uncaught
exception; the only console errors tolerated are the browser's own notes
about the HTTP error statuses a test provokes on purpose.
"""

import datetime
import json
import os
import re
import time
import unittest
import urllib.error
import urllib.request

from playwright.sync_api import sync_playwright

URL = os.environ["EXCHANGE_URL"]
ADMIN_TOKEN = os.environ["EXCHANGE_ADMIN_TOKEN"]
API_KEY = os.environ["EXCHANGE_API_KEY"]
API_SECRET = os.environ["EXCHANGE_API_SECRET"]
SHOTS = os.environ["SCREENSHOT_DIR"]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

# Generous: the machine running the tests may be slow and busy, and the
# demo trades every 0.3 to 2 seconds.
WAIT_MS = 45_000
DESKTOP = {"width": 1440, "height": 1000}
PHONE = {"width": 390, "height": 844}


def get_json(path):
    with urllib.request.urlopen(URL + path, timeout=20) as response:
        return json.load(response)


def below_the_book(fraction):
    """A BTC-USD buy price on the tick, `fraction` below the best bid, whose
    shortest decimal form (the server's) has two decimals: "58000.37"."""
    book = get_json("/v1/markets/BTC-USD/book?depth=1")
    best = float(book["bids"][0][0])
    return f"{int(best * (1 - fraction))}.37"


def above_the_book(fraction):
    """A BTC-USD price on the tick, `fraction` above the best ask, with two
    decimals in its shortest form."""
    book = get_json("/v1/markets/BTC-USD/book?depth=1")
    best = float(book["asks"][0][0])
    return f"{int(best * (1 + fraction))}.37"


def stop_distance():
    """How far from the market a test stop may be: inside the collar (its
    limit price must be accepted), far enough that the demo's walk does
    not reach it during a test."""
    btc = next(i for i in get_json("/v1/instruments")["instruments"] if i["symbol"] == "BTC-USD")
    collar = btc.get("collar_bps", 0) / 10_000
    return min(0.03, collar / 3) if collar else 0.03


class Page:
    """A page with its console errors and uncaught exceptions recorded."""

    def __init__(self, browser, path, viewport):
        # The pages' CSP forbids eval; the test's own probes need it.
        self.context = browser.new_context(viewport=viewport, bypass_csp=True)
        self.page = self.context.new_page()
        self.page.set_default_timeout(WAIT_MS)
        self.errors = []
        self.page.on(
            "console",
            lambda m: m.type == "error" and self.errors.append(m.text),
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.goto(URL + path)

    def assert_clean(self, test, allowed=()):
        unexpected = [e for e in self.errors if not any(re.search(a, e) for a in allowed)]
        test.assertEqual(unexpected, [], "console errors or uncaught exceptions")

    def shot(self, name):
        path = os.path.join(SHOTS, name)
        self.page.screenshot(path=path, full_page=True)
        print(f"screenshot: {path}", flush=True)

    def close(self):
        self.context.close()


class WebUi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(SHOTS, exist_ok=True)
        cls.playwright = sync_playwright().start()
        cls.browser = cls.playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"]
        )

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.playwright.stop()

    def open(self, path="/", viewport=DESKTOP):
        page = Page(self.browser, path, viewport)
        self.addCleanup(page.close)
        return page

    def connect(self, page):
        p = page.page
        p.fill("#c-key", API_KEY)
        p.fill("#c-secret", API_SECRET)
        p.click("#c-save")
        p.wait_for_function(
            "document.getElementById('c-msg').textContent.includes('connected: account')"
        )
        p.wait_for_selector("#balances tr[data-asset=USD]")

    def wait_live(self, page):
        page.page.wait_for_function(
            "document.getElementById('book-status').textContent === 'live'"
        )

    def place_limit(self, page, side, price, qty):
        """Places through the form with the keyboard; returns the order id."""
        p = page.page
        p.check(f"input[name=side][value={side}]")
        p.select_option("#o-type", "limit")
        p.fill("#o-price", "")
        p.focus("#o-price")
        p.keyboard.type(price)
        p.keyboard.press("Tab")
        p.keyboard.type(qty)
        p.keyboard.press("Enter")
        p.wait_for_function(
            "/^(Order \\d+|Rejected)/.test(document.getElementById('o-msg').textContent)"
        )
        text = p.inner_text("#o-msg")
        match = re.match(r"Order (\d+) new", text)
        self.assertIsNotNone(match, f"the order was not accepted: {text}")
        return match.group(1)

    def submit_order(self, page):
        """Submits the form as filled; returns the accepted order's id."""
        p = page.page
        p.evaluate("document.getElementById('o-msg').textContent = ''")
        p.click("#o-submit")
        p.wait_for_function(
            "/^(Order \\d+|Rejected)/.test(document.getElementById('o-msg').textContent)"
        )
        text = p.inner_text("#o-msg")
        match = re.match(r"Order (\d+) new", text)
        self.assertIsNotNone(match, f"the order was not accepted: {text}")
        return match.group(1)

    def book_level(self, page, side, price):
        box = "bids" if side == "buy" else "asks"
        return page.page.locator(f"#{box} button.row[data-price='{price}']")

    # ---------------------------------------------------------------

    def test_book_and_trades_move(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        symbols = p.eval_on_selector_all("#symbol option", "os => os.map(o => o.value)")
        # The crypto pairs, then the demo's equities.
        self.assertEqual(symbols, ["BTC-USD", "ETH-USD", "NRDL-EUR", "VLTA-EUR", "ACME-USD"])
        self.assertGreaterEqual(p.locator("#asks button.row").count(), 1)
        self.assertGreaterEqual(p.locator("#bids button.row").count(), 1)
        first = p.evaluate("window.exchangeUi.feed.book.sequence")
        p.wait_for_function(
            f"window.exchangeUi.feed.book.sequence > {first} && "
            "document.getElementById('book-status').textContent === 'live'"
        )
        p.wait_for_selector("#tape tr[data-trade-id]")
        newest = int(p.get_attribute("#tape tr[data-trade-id]", "data-trade-id"))
        p.wait_for_function(
            "Number(document.querySelector('#tape tr[data-trade-id]').dataset.tradeId) > "
            f"{newest}"
        )
        p.wait_for_function("document.getElementById('t-last').textContent !== '—'")
        # The channel's book is the exchange's: the best bid is below the
        # best ask and every quantity is positive.
        # Nothing was missed on a healthy connection.
        self.assertEqual(p.evaluate("window.exchangeUi.feed.resyncs"), 0)
        self.assertEqual(p.inner_text("#book-resyncs"), "resyncs 0")
        bid = float(p.get_attribute("#bids button.row >> nth=0", "data-price"))
        ask = float(p.get_attribute("#asks button.row >> nth=0", "data-price"))
        self.assertLess(bid, ask)
        # Another instrument and another candle interval.
        p.select_option("#symbol", "ETH-USD")
        p.wait_for_function(
            "window.exchangeUi.feed.book.symbol === 'ETH-USD' && "
            "document.getElementById('book-status').textContent === 'live'"
        )
        eth_bid = float(p.get_attribute("#bids button.row >> nth=0", "data-price"))
        self.assertLess(eth_bid, 10_000, "the ETH book replaced the BTC one")
        p.click("#intervals label:has-text('5m')")
        p.wait_for_function("window.exchangeUi.state.interval === '5m'")
        p.select_option("#symbol", "BTC-USD")
        self.wait_live(page)
        page.assert_clean(self)

    def test_browser_signature_matches_the_servers(self):
        page = self.open()
        signature = page.page.evaluate(
            "import('/ui/sign.js').then(m => m.sign('abc', '1700000000', 'GET', '/v1/ws', ''))"
        )
        self.assertEqual(
            signature, "4aa5ece134aec15d804f514fbcf9e83be02671e815c0bda8513af2cba693f2e2"
        )
        page.assert_clean(self)

    def test_limit_order_appears_then_cancel_removes_it(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        self.connect(page)
        price = below_the_book(0.03)
        order_id = self.place_limit(page, "buy", price, "0.0137")
        row = p.locator(f"#orders tr[data-order-id='{order_id}']")
        row.wait_for()
        self.assertIn(price, row.inner_text())
        self.assertIn("0.0137", row.inner_text())
        level = self.book_level(page, "buy", price)
        level.wait_for()
        self.assertIn("0.0137", level.inner_text())
        p.wait_for_selector(f"#bids button.row.mine[data-price='{price}']")
        page.shot("trading-desktop.png")

        row.locator("button[data-action=cancel]").click()
        row.wait_for(state="detached")
        level.wait_for(state="detached")
        page.assert_clean(self)

    def test_amend_moves_the_order(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        self.connect(page)
        price = below_the_book(0.04)
        order_id = self.place_limit(page, "buy", price, "0.0211")
        row = p.locator(f"#orders tr[data-order-id='{order_id}']")
        row.wait_for()
        row.locator("button[data-action=amend]").click()
        p.wait_for_selector("#amend[open]")
        new_price = below_the_book(0.05)
        p.fill("#a-price", new_price)
        p.fill("#a-qty", "0.0311")
        p.press("#a-qty", "Enter")
        p.wait_for_selector("#amend", state="hidden")
        p.wait_for_function(
            f"(() => {{ const r = document.querySelector(\"#orders tr[data-order-id='{order_id}']\");"
            f" return r && r.textContent.includes('{new_price}') && r.textContent.includes('0.0311'); }})()"
        )
        self.book_level(page, "buy", new_price).wait_for()
        self.book_level(page, "buy", price).wait_for(state="detached")
        row.locator("button[data-action=cancel]").click()
        row.wait_for(state="detached")
        page.assert_clean(self)

    def test_bad_price_shows_the_reject(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        self.connect(page)
        p.fill("#o-price", "60000.005")
        p.fill("#o-qty", "0.01")
        p.press("#o-qty", "Enter")
        p.wait_for_function("document.getElementById('o-msg').textContent.startsWith('Rejected')")
        message = p.inner_text("#o-msg")
        self.assertIn("price_not_on_tick", message)
        self.assertIn("tick", message.split("price_not_on_tick:", 1)[1])
        self.assertIn("error", p.get_attribute("#o-msg", "class"))
        # A quantity off the lot is refused with its own reason.
        p.fill("#o-price", "50000")
        p.fill("#o-qty", "0.00001")
        p.press("#o-qty", "Enter")
        p.wait_for_function(
            "document.getElementById('o-msg').textContent.includes('quantity_not_on_lot')"
        )
        # The browser notes each refused request (status 422) itself.
        page.assert_clean(self, allowed=[r"status of 422"])

    def test_unauthenticated_order_entry_says_what_to_do(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        # The keyboard reaches the order form right after the header.
        p.focus("#symbol")
        for _ in range(3):
            p.keyboard.press("Tab")
            if p.evaluate("document.activeElement.name") == "side":
                break
        self.assertEqual(p.evaluate("document.activeElement.name"), "side")
        p.fill("#o-price", "50000")
        p.fill("#o-qty", "0.01")
        p.press("#o-qty", "Enter")
        p.wait_for_function("document.getElementById('o-msg').textContent.includes('API key')")
        self.assertEqual(p.evaluate("document.activeElement.id"), "c-key")
        p.fill("#c-key", API_KEY)
        p.fill("#c-secret", "0" * 64)
        p.press("#c-secret", "Enter")
        p.wait_for_function(
            "document.getElementById('c-msg').textContent.includes('invalid_signature')"
        )
        page.assert_clean(self, allowed=[r"status of 401"])

    def test_a_missed_book_update_is_detected_and_resynced(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        p.evaluate("window.exchangeUi.feed.dropNextUpdate = true")
        p.wait_for_function("window.exchangeUi.feed.resyncs >= 1", timeout=90_000)
        p.wait_for_function(
            "document.getElementById('book-resyncs').textContent === 'resyncs 1'"
        )
        self.wait_live(page)
        # The resynced book is whole again: it keeps following updates.
        seq = p.evaluate("window.exchangeUi.feed.book.sequence")
        p.wait_for_function(f"window.exchangeUi.feed.book.sequence > {seq}")
        self.assertEqual(p.evaluate("window.exchangeUi.feed.resyncs"), 1)
        page.assert_clean(self)

    def test_form_shows_only_the_inputs_of_the_order_type(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        visible = lambda selector: p.locator(selector).is_visible()
        # A limit GTC: price, quantity, display quantity, pair; no stop.
        self.assertEqual(
            [visible(s) for s in ["#o-price", "#o-qty", "#o-display", "#o-oco", "#o-stop", "#o-expire", "#o-funds"]],
            [True, True, True, True, False, False, False],
        )
        p.select_option("#o-type", "stop")
        self.assertEqual([visible(s) for s in ["#o-price", "#o-stop", "#o-display"]], [False, True, False])
        p.select_option("#o-trigger", "trailing_bps")
        self.assertIn("bps", p.inner_text("#o-stop-label"))
        p.select_option("#o-type", "stop_limit")
        self.assertEqual([visible(s) for s in ["#o-price", "#o-stop", "#o-min-qty"]], [True, True, False])
        # A market-to-limit order takes its price from the book; a minimum applies on entry.
        p.select_option("#o-type", "market_to_limit")
        self.assertEqual(
            [visible(s) for s in ["#o-price", "#o-stop", "#o-min-qty", "#o-post"]],
            [False, False, True, False],
        )
        # A market buy may be sized by the quote it spends instead.
        p.select_option("#o-type", "market")
        self.assertTrue(p.locator("#o-tif option[value=gtc]").is_disabled())
        p.check("#o-by-funds")
        self.assertEqual([visible(s) for s in ["#o-qty", "#o-funds", "#o-oco"]], [False, True, False])
        p.check("input[name=side][value=sell]")
        self.assertEqual([visible(s) for s in ["#o-by-funds", "#o-qty", "#o-funds"]], [False, True, False])
        p.select_option("#o-type", "limit")
        p.select_option("#o-tif", "gtd")
        self.assertEqual([visible(s) for s in ["#o-expire", "#o-display"]], [True, False])
        page.assert_clean(self)

    def test_stop_limit_and_iceberg_from_the_form(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        self.connect(page)
        distance = stop_distance()

        # A buy stop-limit above the market: it waits for the last price.
        stop = above_the_book(distance)
        limit = above_the_book(distance * 1.2)
        p.check("input[name=side][value=buy]")
        p.select_option("#o-type", "stop_limit")
        p.select_option("#o-tif", "gtc")
        p.select_option("#o-trigger", "stop_price")
        p.fill("#o-stop", stop)
        p.fill("#o-price", limit)
        p.fill("#o-qty", "0.0123")
        stop_id = self.submit_order(page)
        stop_row = p.locator(f"#orders tr[data-order-id='{stop_id}']")
        stop_row.wait_for()
        self.assertEqual(stop_row.get_attribute("data-type"), "stop_limit")
        self.assertEqual(stop_row.locator("td[data-col=stop]").inner_text(), stop)
        self.assertIn(limit, stop_row.inner_text())
        self.assertEqual(stop_row.locator("td[data-col=status]").inner_text(), "waiting for trigger")
        # Not on the book until it triggers.
        self.assertEqual(self.book_level(page, "buy", limit).count(), 0)

        # An iceberg: the book shows only its display quantity.
        price = below_the_book(0.03)
        p.select_option("#o-type", "limit")
        p.fill("#o-price", price)
        p.fill("#o-qty", "0.0500")
        p.fill("#o-display", "0.0100")
        iceberg_id = self.submit_order(page)
        p.fill("#o-display", "")
        iceberg_row = p.locator(f"#orders tr[data-order-id='{iceberg_id}']")
        iceberg_row.wait_for()
        self.assertEqual(iceberg_row.locator("td[data-col=qty]").inner_text().split(), ["0.0500", "shows", "0.0100"])
        self.assertEqual(iceberg_row.locator("td[data-col=stop]").inner_text(), "")
        level = self.book_level(page, "buy", price)
        level.wait_for()
        self.assertIn("0.0100", level.inner_text())
        self.assertNotIn("0.0500", level.inner_text())

        # A good-till-date order shows its expiry.
        expiry = datetime.datetime.now().replace(microsecond=0) + datetime.timedelta(hours=1)
        gtd_price = below_the_book(0.035)
        p.select_option("#o-tif", "gtd")
        p.fill("#o-expire", expiry.isoformat())
        p.fill("#o-price", gtd_price)
        p.fill("#o-qty", "0.0100")
        gtd_id = self.submit_order(page)
        gtd_row = p.locator(f"#orders tr[data-order-id='{gtd_id}']")
        gtd_row.wait_for()
        # (The date is shown too when the expiry is not today.)
        self.assertRegex(
            gtd_row.locator("td[data-col=tif]").text_content(),
            rf"^gtd until (\S+ )?{expiry.strftime('%H:%M:%S')}$",
        )
        p.select_option("#o-tif", "gtc")

        # Canceling the stop removes it; the others stay until canceled.
        stop_row.locator("button[data-action=cancel]").click()
        stop_row.wait_for(state="detached")
        iceberg_row.wait_for()
        for row in [iceberg_row, gtd_row]:
            row.locator("button[data-action=cancel]").click()
            row.wait_for(state="detached")
        level.wait_for(state="detached")
        page.assert_clean(self)

    def test_hidden_limit_order_from_the_ticket(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        self.connect(page)
        visible = lambda selector: p.locator(selector).is_visible()
        # Offered for limit orders only, never with IOC or FOK, and never
        # together with a display quantity (an iceberg).
        p.select_option("#o-type", "market")
        self.assertFalse(visible("#o-hidden"))
        p.select_option("#o-type", "limit")
        p.select_option("#o-tif", "ioc")
        self.assertTrue(p.locator("#o-hidden").is_disabled())
        p.select_option("#o-tif", "gtc")
        p.fill("#o-display", "0.0100")
        self.assertTrue(p.locator("#o-hidden").is_disabled())
        p.fill("#o-display", "")
        p.check("#o-hidden")
        self.assertTrue(p.locator("#o-display").is_disabled())

        # Placed hidden: accepted, in the open orders marked hidden, and
        # on no level of the book while the book moves on.
        price = below_the_book(0.03)
        p.check("input[name=side][value=buy]")
        p.fill("#o-price", price)
        p.fill("#o-qty", "0.0137")
        order_id = self.submit_order(page)
        row = p.locator(f"#orders tr[data-order-id='{order_id}']")
        row.wait_for()
        self.assertIn(price, row.inner_text())
        self.assertEqual(row.locator("span[data-col=hidden]").inner_text(), "hidden")
        sequence = p.evaluate("window.exchangeUi.feed.book.sequence")
        p.wait_for_function(
            f"window.exchangeUi.feed.book.sequence > {sequence} && "
            "document.getElementById('book-status').textContent === 'live'"
        )
        self.assertEqual(self.book_level(page, "buy", price).count(), 0)
        book = get_json("/v1/markets/BTC-USD/book?depth=1000")
        self.assertNotIn(price, [level[0] for level in book["bids"]])

        row.locator("button[data-action=cancel]").click()
        row.wait_for(state="detached")
        p.uncheck("#o-hidden")
        self.assertFalse(p.locator("#o-display").is_disabled())
        page.assert_clean(self)

    def test_midpoint_order_from_the_ticket(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        self.connect(page)
        visible = lambda selector: p.locator(selector).is_visible()
        # An optional limit and a minimum; no pair, no display quantity.
        p.select_option("#o-type", "midpoint")
        self.assertEqual(
            [visible(s) for s in ["#o-price", "#o-min-qty", "#o-oco", "#o-display", "#o-stop"]],
            [True, True, False, False, False],
        )
        self.assertEqual(p.get_attribute("#o-price", "placeholder"), "limit (optional)")

        # A buy limited below the best bid rests unseen: accepted, in the
        # open orders as a midpoint order, and on no level of the book.
        price = below_the_book(0.04)
        p.check("input[name=side][value=buy]")
        p.select_option("#o-tif", "gtc")
        p.fill("#o-price", price)
        p.fill("#o-qty", "0.0141")
        order_id = self.submit_order(page)
        row = p.locator(f"#orders tr[data-order-id='{order_id}']")
        row.wait_for()
        self.assertEqual(row.get_attribute("data-type"), "midpoint")
        self.assertIn(price, row.inner_text())
        book = get_json("/v1/markets/BTC-USD/book?depth=1000")
        self.assertNotIn(price, [level[0] for level in book["bids"]])
        self.assertEqual(self.book_level(page, "buy", price).count(), 0)

        row.locator("button[data-action=cancel]").click()
        row.wait_for(state="detached")
        p.select_option("#o-type", "limit")
        p.fill("#o-price", "")
        page.assert_clean(self)

    def test_phase_badge(self):
        page = self.open()
        p = page.page
        self.wait_live(page)
        badge = p.locator("#phase")
        # The crypto pairs trade all day: BTC-USD, shown first, is continuous.
        p.wait_for_function("document.getElementById('phase').dataset.phase === 'continuous'")
        self.assertTrue(badge.is_visible())
        self.assertEqual(badge.text_content(), "continuous")
        self.assertIn("phase-continuous", badge.get_attribute("class"))
        self.assertFalse(p.locator("#indicative").is_visible())
        ops = self.open("/ops")
        rows = ops.page.locator("#instruments tr[data-symbol]")
        ops.page.wait_for_selector("#instruments tr[data-symbol='ETH-USD']")
        self.assertEqual(rows.count(), 5)
        btc = ops.page.locator("#instruments tr[data-symbol='BTC-USD']")
        self.assertEqual(btc.locator("td[data-col=status]").inner_text(), "trading")
        self.assertRegex(btc.locator("td[data-col=reference]").inner_text(), r"^([0-9.]+|—)$")
        ops.page.wait_for_selector("#instruments tr[data-symbol='BTC-USD'] [data-phase=continuous]")
        page.assert_clean(self)
        ops.assert_clean(self)

    def test_ops_dashboard_shows_the_leader(self):
        page = self.open("/ops")
        p = page.page
        p.fill("#token", ADMIN_TOKEN)
        p.press("#token", "Enter")
        p.wait_for_function("document.getElementById('role').textContent === 'leader'")
        p.wait_for_function(
            "Number(document.getElementById('applied').textContent.replace(/,/g, '')) > 0"
        )
        p.wait_for_function("document.getElementById('ack-p50').textContent !== '—'")
        self.assertEqual(p.inner_text("#node-id"), "1")
        # serve --demo writes the reporting store: its lag in entries and seconds.
        self.assertRegex(p.inner_text("#reporting"), r"^[0-9][0-9,]* entries, [0-9]+\.[0-9]{3} s$")
        self.assertRegex(p.inner_text("#hash"), r"^[0-9a-f]{64}$")
        self.assertEqual(p.locator("#nodes tr").count(), 1)
        # Let the charts gather a few seconds.
        p.wait_for_function("document.getElementById('uptime').textContent !== '—'")
        time.sleep(3)
        page.shot("ops-desktop.png")
        page.assert_clean(self)

    def test_ops_refuses_a_wrong_token(self):
        page = self.open("/ops")
        p = page.page
        p.fill("#token", "wrong")
        p.press("#token", "Enter")
        p.wait_for_function(
            "document.getElementById('ops-msg').textContent.includes('invalid_token')"
        )
        self.assertEqual(p.inner_text("#role"), "—")
        page.assert_clean(self, allowed=[r"status of 401"])

    def test_phone_width_layout(self):
        page = self.open("/", PHONE)
        p = page.page
        self.wait_live(page)
        self.connect(page)
        p.wait_for_selector("#tape tr[data-trade-id]")
        width = p.evaluate("document.documentElement.scrollWidth")
        self.assertLessEqual(width, PHONE["width"], "the page scrolls sideways")
        # One column: order entry first, then the book, every panel full width.
        entry = p.locator("#entry-panel").bounding_box()
        book = p.locator("#book-panel").bounding_box()
        self.assertLess(entry["y"], book["y"])
        for panel in ["#entry-panel", "#book-panel", "#chart-panel", "#orders-panel"]:
            box = p.locator(panel).bounding_box()
            self.assertGreater(box["width"], PHONE["width"] * 0.9, panel)
        page.shot("trading-phone.png")
        page.assert_clean(self)

        ops = self.open("/ops", PHONE)
        ops.page.fill("#token", ADMIN_TOKEN)
        ops.page.press("#token", "Enter")
        ops.page.wait_for_function("document.getElementById('role').textContent === 'leader'")
        width = ops.page.evaluate("document.documentElement.scrollWidth")
        self.assertLessEqual(width, PHONE["width"], "the dashboard scrolls sideways")
        time.sleep(2)
        ops.shot("ops-phone.png")
        ops.assert_clean(self)


if __name__ == "__main__":
    unittest.main()
