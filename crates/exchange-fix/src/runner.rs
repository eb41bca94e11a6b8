//! One task per configured session, for the life of the server: it owns
//! the session state machine, the session's order cache and, while the
//! counterparty is connected, the socket.
//!
//! Ordering is what this task is for. The sequencer's broadcast delivers
//! every applied entry in log order; the reply to a request this session
//! enqueued is sent just before that entry's broadcast. So when the
//! broadcast brings entry N, the reply of the oldest pending request is
//! either already there with index N (the entry is ours: answer it with
//! the request's context) or not yet (it is someone else's: plain
//! execution reports). Answers given without the core (a refused message)
//! wait behind earlier pending requests, so a client sees answers in the
//! order it sent requests.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use exchange_node::sequencer::SubmitError;
use exchange_node::{Applied, Handle, LogEntry};
use exchange_types::{AccountId, Command, MassCancel, Stamped};
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::oneshot::error::TryRecvError;
use tokio::sync::{mpsc, oneshot, watch};

use crate::acceptor::{refuse, BoxedStream, Connection};
use crate::app::App;
use crate::continuity::{link_id, Hold};
use crate::frame::next_frame;
use crate::inbound::{self, Inbound, Request, Role, Submission};
use crate::message::{answer_routing, Message, Outgoing};
use crate::reports;
use crate::security_status::SecurityStatus;
use crate::session::{Action, Session, Settings, CREDENTIALS_REFUSED};
use crate::store::{FileStore, Store};
use crate::tags::{self, business_reject};
use crate::throttle::{Throttle, Verdict};
use crate::time::now_ns;

#[path = "runner_continuity.rs"]
mod continuity_glue;
#[path = "runner_seed.rs"]
mod seed;

/// How often the session's timers are looked at.
const TICK: Duration = Duration::from_millis(100);
/// A counterparty that does not read for this long is disconnected.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

pub struct SessionSpec {
    pub settings: Settings,
    pub role: Role,
    pub cancel_on_disconnect: bool,
    /// The session's application message rate.
    pub throttle: Throttle,
    /// This process's id for the session's store
    /// ([`crate::continuity::owner_id`]).
    pub owner: u64,
}

enum Pending {
    Core {
        reply: oneshot::Receiver<Arc<Applied>>,
        applied: Option<Arc<Applied>>,
        request: Request,
        /// The routing fields the answers carry (see `answer_routing`).
        routing: Vec<u8>,
    },
    Local(Outgoing),
    /// An order's state, read from the order cache when its turn comes, so
    /// that it reflects every request sent before it.
    Status {
        request: Message,
        routing: Vec<u8>,
    },
}

struct Live {
    reader: ReadHalf<BoxedStream>,
    writer: WriteHalf<BoxedStream>,
    buf: Vec<u8>,
    /// Whether this connection got as far as a Logon: only then does a
    /// disconnect cancel orders.
    logged_on: bool,
}

struct Runner {
    session: Session<FileStore>,
    app: App,
    /// Every instrument's status and this connection's subscriptions.
    security: SecurityStatus,
    handle: Handle,
    pending: VecDeque<Pending>,
    /// Entries up to this index are already in the seeded order cache.
    seeded: u64,
    cancel_on_disconnect: bool,
    name: String,
    /// The session's id in the log, and this process's store's.
    link: u64,
    owner: u64,
    hold: Hold,
    /// The first number of this process's own store after the session's
    /// latest logon anywhere: the reports stored from it on are what a
    /// takeover sends again.
    since: u64,
    /// A Logon waiting for the log to apply its logon entry.
    logging_on: Option<continuity_glue::LoggingOn>,
    /// The Logon was handled: read what followed it.
    resume_reading: bool,
}

fn accounts_of(role: &Role) -> Vec<AccountId> {
    match role {
        Role::Trading { account } => vec![*account],
        Role::DropCopy { accounts } => accounts.clone(),
    }
}

async fn read_some(live: &mut Option<Live>) -> std::io::Result<usize> {
    match live {
        Some(live) => live.reader.read_buf(&mut live.buf).await,
        None => std::future::pending().await,
    }
}

pub async fn run(
    spec: SessionSpec,
    store: FileStore,
    handle: Handle,
    mut connections: mpsc::Receiver<Connection>,
    mut stopping: watch::Receiver<bool>,
) {
    let mut events = handle.subscribe();
    let mut runner = Runner::new(spec, store, handle);
    runner.seed().await;
    let mut live: Option<Live> = None;
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopped = *stopping.borrow();
    let mut accepting = true;
    while !(stopped && live.is_none()) {
        let mut actions = Vec::new();
        tokio::select! {
            applied = events.recv() => match applied {
                Ok(applied) => {
                    runner.on_applied(&applied, &mut actions);
                    runner.resume(&mut live, &mut actions);
                }
                Err(RecvError::Lagged(missed)) => {
                    runner.lagged(missed, &mut live, &mut actions).await;
                }
                Err(RecvError::Closed) => break,
            },
            connection = connections.recv(), if accepting && !stopped => match connection {
                Some(connection) if live.is_none() => {
                    live = Some(runner.attach(connection, &mut actions));
                }
                Some(connection) => runner.refuse_second(connection),
                // The acceptor stopped; the shutdown signal follows.
                None => accepting = false,
            },
            read = read_some(&mut live) => match read {
                Ok(n) if n > 0 => {
                    if let Some(conn) = live.as_mut() {
                        runner.on_bytes(conn, &mut actions);
                    }
                }
                _ => actions.push(Action::Disconnect(
                    "the counterparty closed the connection".into(),
                )),
            },
            _ = tick.tick() => {
                runner.check_logon(&mut actions);
                runner.resume(&mut live, &mut actions);
                runner.session.on_tick(now_ns(), &mut actions);
                runner.reserve_if_low();
            }
            _ = stopping.changed(), if !stopped => {
                stopped = true;
                runner.session.logout(now_ns(), "the exchange is shutting down", &mut actions);
            }
        }
        runner.perform(actions, &mut live).await;
    }
}

impl Runner {
    fn new(spec: SessionSpec, store: FileStore, handle: Handle) -> Runner {
        let name = format!(
            "{}->{}",
            spec.settings.their_comp_id, spec.settings.our_comp_id
        );
        let link = link_id(&spec.settings.their_comp_id, &spec.settings.our_comp_id);
        Runner {
            link,
            owner: spec.owner,
            hold: Hold::default(),
            since: store.next_sender_seq(),
            logging_on: None,
            resume_reading: false,
            session: Session::new(spec.settings, store).with_throttle(spec.throttle),
            app: App::new(spec.role),
            security: SecurityStatus::default(),
            handle,
            pending: VecDeque::new(),
            seeded: 0,
            cancel_on_disconnect: spec.cancel_on_disconnect,
            name,
        }
    }

    fn attach(&mut self, connection: Connection, actions: &mut Vec<Action>) -> Live {
        let Connection {
            stream,
            first,
            rest,
        } = connection;
        let (reader, writer) = tokio::io::split(stream);
        let now = now_ns();
        self.session.connected(now);
        let mut live = Live {
            reader,
            writer,
            buf: rest,
            logged_on: false,
        };
        if let Some(first) = self.log_logon(first) {
            self.session.on_message(now, first, actions);
            self.on_bytes(&mut live, actions);
        }
        live
    }

    /// A connection for a session already logged on: only a counterparty
    /// that proves the credentials learns that the session is in use.
    fn refuse_second(&self, connection: Connection) {
        let text = if self.session.credentials_ok(&connection.first) {
            "logon refused: this session is already logged on"
        } else {
            CREDENTIALS_REFUSED
        };
        tokio::spawn(async move { refuse(connection.stream, Some(&connection.first), text).await });
    }

    /// The event stream went on without this task: the reports of the
    /// entries missed are lost, the order cache is read again.
    async fn lagged(&mut self, missed: u64, live: &mut Option<Live>, actions: &mut Vec<Action>) {
        self.logon_unrecorded(actions);
        self.resume(live, actions);
        tracing::error!(
            session = %self.name,
            missed,
            "FIX session fell behind the event stream; reports were lost"
        );
        self.seed().await;
    }

    /// Reads what followed a Logon once the log has applied it.
    fn resume(&mut self, live: &mut Option<Live>, actions: &mut Vec<Action>) {
        if std::mem::take(&mut self.resume_reading) {
            if let Some(conn) = live.as_mut() {
                self.on_bytes(conn, actions);
            }
        }
    }

    /// Frames and handles every whole message in the read buffer.
    fn on_bytes(&mut self, conn: &mut Live, actions: &mut Vec<Action>) {
        let mut used = 0;
        // Until its logon entry is applied, the Logon waits, and so does
        // what follows it.
        while self.session.is_connected() && self.logging_on.is_none() {
            match next_frame(&conn.buf[used..]) {
                Ok(Some((frame, n))) => {
                    used += n;
                    self.session.on_frame(now_ns(), frame, actions);
                }
                Ok(None) => break,
                Err(error) => {
                    self.session.on_frame_error(now_ns(), &error, actions);
                    break;
                }
            }
        }
        conn.buf.drain(..used.min(conn.buf.len()));
    }

    fn on_applied(&mut self, applied: &Applied, actions: &mut Vec<Action>) {
        let now = now_ns();
        for message in self
            .security
            .on_applied(applied.index, &applied.events, now)
        {
            self.session.send_app(now, message, actions);
        }
        if let Some(fix) = applied.fix.as_ref().filter(|f| f.link() == self.link) {
            self.on_fix(fix, actions);
        }
        if applied.index <= self.seeded {
            return;
        }
        let own = self.take_own(applied.index, actions);
        // A copy of a message the log applied already answers nothing: the
        // reports of the first one were made when it was applied.
        let copy = applied.fix.as_ref().is_some_and(|f| f.refused());
        let (request, routing) = match &own {
            Some((request, routing)) if !copy => (Some(request), &routing[..]),
            Some((_, routing)) => (None, &routing[..]),
            None => (None, &[][..]),
        };
        // Every report of this session's own entry answers its request:
        // they all carry the request's routing.
        for message in self
            .app
            .on_applied(applied.index, &applied.events, request, now)
        {
            self.session.send_app(now, message.routed(routing), actions);
        }
        self.flush_local(actions);
        self.reserve_if_low();
    }

    /// The request whose entry is `index`, if it is the oldest pending one.
    fn take_own(&mut self, index: u64, actions: &mut Vec<Action>) -> Option<(Request, Vec<u8>)> {
        loop {
            let Some(Pending::Core { reply, applied, .. }) = self.pending.front_mut() else {
                return None;
            };
            if applied.is_none() {
                let unapplied = match reply.try_recv() {
                    Ok(got) => match SubmitError::unapplied(&got) {
                        None => {
                            *applied = Some(got);
                            None
                        }
                        Some(error) => Some(error.to_string()),
                    },
                    Err(TryRecvError::Empty) => return None,
                    Err(TryRecvError::Closed) => {
                        Some("the exchange stopped before applying this".to_string())
                    }
                };
                if let Some(why) = unapplied {
                    self.answer_unapplied(&why, actions);
                    continue;
                }
            }
            let got = applied.as_ref().map_or(0, |a| a.index);
            if got > index {
                return None;
            }
            let Some(Pending::Core {
                request, routing, ..
            }) = self.pending.pop_front()
            else {
                return None;
            };
            if got == index {
                return Some((request, routing));
            }
            // Only a lost broadcast (a lag, already logged) gets here.
            tracing::warn!(
                session = %self.name,
                got,
                index,
                "the answer to a FIX request was lost"
            );
            self.flush_local(actions);
        }
    }

    /// Answers the oldest pending request, which was not applied.
    fn answer_unapplied(&mut self, why: &str, actions: &mut Vec<Action>) {
        if let Some(Pending::Core {
            request, routing, ..
        }) = self.pending.pop_front()
        {
            let answer = self
                .app
                .unavailable(&request, why, now_ns())
                .routed(&routing);
            self.session.send_app(now_ns(), answer, actions);
        }
        self.flush_local(actions);
    }

    fn flush_local(&mut self, actions: &mut Vec<Action>) {
        while let Some(Pending::Local(_) | Pending::Status { .. }) = self.pending.front() {
            let answer = match self.pending.pop_front() {
                Some(Pending::Local(message)) => message,
                Some(Pending::Status { request, routing }) => {
                    self.app.order_status(&request, now_ns()).routed(&routing)
                }
                _ => continue,
            };
            self.session.send_app(now_ns(), answer, actions);
        }
    }

    fn answer_status(&mut self, request: Message, routing: Vec<u8>, actions: &mut Vec<Action>) {
        self.pending.push_back(Pending::Status { request, routing });
        if self.pending.len() == 1 {
            self.flush_local(actions);
        }
    }

    /// Whether an order entry resent with PossResend (97) repeats a
    /// ClOrdID this session already sent: an order it already has, or one
    /// still on its way to the core.
    fn already_sent(&self, message: &Message) -> bool {
        if !message.flag(tags::POSS_RESEND) || !matches!(message.msg_type(), Some(b"D" | b"G")) {
            return false;
        }
        let Some(cl_ord_id) = message.text(tags::CL_ORD_ID) else {
            return false;
        };
        self.app.knows_cl_ord_id(cl_ord_id)
            || self.pending.iter().any(|p| match p {
                Pending::Core {
                    request: Request::Place(echo),
                    ..
                } => echo.cl_ord_id == cl_ord_id,
                Pending::Core {
                    request: Request::Replace(echo),
                    ..
                } => echo.cl_ord_id == cl_ord_id,
                _ => false,
            })
    }

    fn answer_now(&mut self, message: Outgoing, actions: &mut Vec<Action>) {
        if self.pending.is_empty() {
            self.session.send_app(now_ns(), message, actions);
        } else {
            self.pending.push_back(Pending::Local(message));
        }
    }

    fn deliver(&mut self, message: Message, actions: &mut Vec<Action>) {
        let now = now_ns();
        let routing = answer_routing(&message);
        match self.session.throttle().take(now) {
            Verdict::Pass => {}
            Verdict::Refuse => return self.throttled(&message, routing, actions),
            Verdict::LogOut => {
                tracing::warn!(
                    session = %self.name,
                    "FIX session logged out: message rate far above the limit"
                );
                self.throttled(&message, routing, actions);
                let text = "logged out: message rate far above the limit";
                return self.session.logout(now, text, actions);
            }
        }
        if self.already_sent(&message) {
            // Taken once already: its state is the answer, not a second order.
            return self.answer_status(message, routing, actions);
        }
        match inbound::translate(&message, &self.app.role, now) {
            Inbound::Submit(submission) => {
                let Submission { command, request } = *submission;
                // The core's first stage, run here: a malformed order is
                // answered as the core would answer it, without the log.
                if let Command::Place(place) = &command {
                    if let Err(reason) = exchange_types::validate::place(place) {
                        let answer = self.app.refused_at_edge(&request, reason, now);
                        return self.answer_now(answer.routed(&routing), actions);
                    }
                }
                let entry = self.numbered(
                    message.seq_num(),
                    LogEntry::Core(Stamped { ts: 0, command }),
                );
                match self.handle.enqueue_entry(entry) {
                    Ok(reply) => self.pending.push_back(Pending::Core {
                        reply,
                        applied: None,
                        request,
                        routing,
                    }),
                    Err(error) => {
                        let answer = self.app.unavailable(&request, &error.to_string(), now);
                        self.answer_now(answer.routed(&routing), actions);
                    }
                }
            }
            Inbound::Reply(answer) => self.answer_now(answer.routed(&routing), actions),
            Inbound::Reject(problem) => self.session.reject(now, &message, &problem, actions),
            Inbound::Status => self.answer_status(message, routing, actions),
            // Public data, not an answer about orders: it need not wait
            // behind them, and goes out in order with the pushes.
            Inbound::SecurityStatus => {
                if let Some(answer) = self.security.request(&message, now) {
                    self.session.send_app(now, answer.routed(&routing), actions);
                }
            }
        }
    }

    /// Refuses a message over the session's rate, as FIX 4.4 refuses such
    /// a message: an order with a rejected ExecutionReport, a cancel or
    /// replace with an OrderCancelReject, a mass cancel with its report,
    /// anything else with a BusinessMessageReject (380=0, other). Nothing
    /// reaches the core.
    fn throttled(&mut self, message: &Message, routing: Vec<u8>, actions: &mut Vec<Action>) {
        let now = now_ns();
        let text = self.session.throttle().refusal();
        let answer = match inbound::translate(message, &self.app.role, now) {
            Inbound::Submit(submission) => self.app.unavailable(&submission.request, &text, now),
            // Refused anyway, by the same cheap checks.
            Inbound::Reply(answer) => answer,
            Inbound::Reject(problem) => {
                return self.session.reject(now, message, &problem, actions)
            }
            Inbound::Status | Inbound::SecurityStatus => reports::business_reject(
                message.seq_num().unwrap_or(0),
                message.text(tags::MSG_TYPE).unwrap_or_default(),
                message
                    .text(tags::CL_ORD_ID)
                    .or(message.text(tags::SECURITY_STATUS_REQ_ID)),
                business_reject::OTHER,
                &text,
            ),
        };
        self.answer_now(answer.routed(&routing), actions);
    }

    /// Carries out the session's actions: delivers application messages,
    /// writes what is to be sent in one write, and closes when told to.
    async fn perform(&mut self, actions: Vec<Action>, live: &mut Option<Live>) {
        let mut queue: VecDeque<Action> = actions.into();
        let mut bytes = Vec::new();
        let mut close = None;
        while let Some(action) = queue.pop_front() {
            match action {
                Action::Send(message) => bytes.extend_from_slice(&message),
                Action::Deliver(message) => {
                    let mut more = Vec::new();
                    self.deliver(message, &mut more);
                    queue.extend(more);
                }
                Action::LoggedOn => {
                    tracing::info!(session = %self.name, "FIX session logged on");
                    if let Some(conn) = live.as_mut() {
                        if !conn.logged_on {
                            self.protect(true);
                        }
                        conn.logged_on = true;
                    }
                }
                Action::SequenceReset => self.record_reset(),
                Action::Disconnect(reason) => close = Some(reason),
            }
        }
        let Some(conn) = live.as_mut() else { return };
        if !bytes.is_empty() {
            match tokio::time::timeout(WRITE_TIMEOUT, conn.writer.write_all(&bytes)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => close = close.or(Some("the connection failed".into())),
                Err(_) => close = close.or(Some("the counterparty stopped reading".into())),
            }
        }
        if let Some(reason) = close {
            tracing::info!(session = %self.name, %reason, "FIX session disconnected");
            if let Some(mut conn) = live.take() {
                self.logging_on = None;
                let _ = conn.writer.shutdown().await;
                self.session.disconnected();
                self.security.disconnected();
                if conn.logged_on {
                    self.cancel_on_disconnect();
                    self.protect(false);
                }
            }
        }
    }

    /// Registers a logged-on connection of a session with
    /// `cancel_on_disconnect` with the cluster, which keeps it if the
    /// whole gateway dies.
    fn protect(&self, on: bool) {
        let (true, Role::Trading { account }) = (self.cancel_on_disconnect, &self.app.role) else {
            return;
        };
        if let Err(error) = self.handle.protect_account(*account, on) {
            tracing::warn!(
                session = %self.name,
                %error,
                "cancel-on-disconnect could not be registered"
            );
        }
    }

    fn cancel_on_disconnect(&self) {
        let (true, Role::Trading { account }) = (self.cancel_on_disconnect, &self.app.role) else {
            return;
        };
        let command = Command::MassCancel(MassCancel {
            account: *account,
            symbol: None,
        });
        if let Err(error) = self
            .handle
            .submit_detached(LogEntry::Core(Stamped { ts: 0, command }))
        {
            tracing::warn!(
                session = %self.name,
                %error,
                "cancel-on-disconnect could not be submitted"
            );
        }
    }
}
