//! The methods of [`Handle`](super::Handle): what the gateways, the
//! readers and the operators ask of a running node (submit a command,
//! query the state, the replication status, membership changes).

use super::*;

impl Handle {
    /// False once the journal or core thread has stopped on an error: the
    /// node can no longer accept commands.
    pub fn is_healthy(&self) -> bool {
        !self.failed.load(Ordering::Acquire)
    }

    /// Sequences an entry and waits until it is durable and applied.
    pub async fn submit(&self, entry: LogEntry) -> Result<Arc<Applied>, SubmitError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(Submission {
            entry,
            reply: Reply::new(tx),
        })?;
        let applied = rx.await.map_err(|_| SubmitError::Stopped)?;
        match SubmitError::unapplied(&applied) {
            Some(error) => Err(error),
            None => Ok(applied),
        }
    }

    /// Queues an entry and returns at once with the receiver of its
    /// outcome (see [`SubmitError::unapplied`]). Entries queued by one
    /// caller are sequenced in the order of these calls, which is what
    /// keeps one connection's commands in order.
    pub fn enqueue_entry(
        &self,
        entry: LogEntry,
    ) -> Result<oneshot::Receiver<Arc<Applied>>, SubmitError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(Submission {
            entry,
            reply: Reply::new(tx),
        })?;
        Ok(rx)
    }

    /// Sequences an entry without waiting for it (used for commands whose
    /// sender has gone, such as cancel-on-disconnect).
    pub fn submit_detached(&self, entry: LogEntry) -> Result<(), SubmitError> {
        self.enqueue(Submission { entry, reply: None })
    }

    /// Tells the cluster that a client connection of this gateway that
    /// asked for cancel-on-disconnect opened (`on`) or closed for
    /// `account`, so that the cluster cancels the account's orders if the
    /// whole gateway dies ([`crate::sessions`]). Only a gateway in front
    /// of the replicas has a session to register it in; elsewhere this
    /// does nothing (a replica serving clients itself dies with its
    /// clients' connections). Queue it in the connection's order: after
    /// its cancel when the connection closes.
    pub fn protect_account(&self, account: AccountId, on: bool) -> Result<(), SubmitError> {
        if !self.forwards {
            return Ok(());
        }
        self.submit_detached(LogEntry::SessionProtect { ts: 0, account, on })
    }

    /// This node's replication state (role, term, leader, commit and
    /// applied indices).
    pub fn replication_status(&self) -> ReplicationStatus {
        self.cluster.status()
    }

    /// The nodes' HTTP addresses, named to clients that write to a
    /// follower.
    pub fn set_leader_urls(&self, urls: std::collections::BTreeMap<u64, String>) {
        self.cluster.set_urls(urls);
    }

    /// Proposes adding or removing a voter (on the leader). Returns once
    /// the change is proposed; it takes effect when it commits (watch
    /// [`Handle::replication_status`]).
    pub async fn change_membership(
        &self,
        change: exchange_replication::Membership,
        raft_addr: Option<exchange_replication::transport::PeerAddr>,
    ) -> Result<(), MembershipError> {
        let (reply, answer) = oneshot::channel();
        self.control
            .try_send(RaftControl::Membership {
                change,
                raft_addr,
                reply,
            })
            .map_err(|_| MembershipError::Stopped)?;
        answer.await.map_err(|_| MembershipError::Stopped)?
    }

    /// Asks the leader's Raft thread to hand leadership to `to` (or the
    /// most up-to-date other voter); answers with the voter it goes to.
    /// The transfer itself completes, or times out, afterwards.
    pub async fn transfer_leader(&self, to: Option<u64>) -> Result<u64, MembershipError> {
        let (reply, answer) = oneshot::channel();
        self.control
            .try_send(RaftControl::TransferLeader { to, reply })
            .map_err(|_| MembershipError::Stopped)?;
        answer.await.map_err(|_| MembershipError::Stopped)?
    }

    /// The nodes' HTTP addresses as configured.
    pub fn leader_urls(&self) -> std::collections::BTreeMap<u64, String> {
        self.cluster.urls()
    }

    /// See [`ClusterShared::caught_up`].
    pub fn caught_up(&self) -> bool {
        self.cluster.caught_up()
    }

    /// See [`ClusterShared::tier`].
    pub fn tier(&self) -> &'static str {
        self.cluster.tier()
    }

    /// See [`ClusterShared::settled`].
    pub fn settled(&self) -> bool {
        self.cluster.settled()
    }

    /// See [`ClusterShared::leader_since_ms`].
    pub fn leader_since_ms(&self) -> u64 {
        self.cluster.leader_since_ms()
    }

    /// Whether this node currently leads (and so takes writes).
    pub fn is_leader(&self) -> bool {
        self.cluster.is_leader()
    }

    /// `NoSpace` while this replica waits for disk space: a write would
    /// only queue behind the one that waits.
    pub fn check_disk(&self) -> Result<(), SubmitError> {
        if self.cluster.nospace() {
            return Err(SubmitError::NoSpace);
        }
        Ok(())
    }

    /// At a stop: a write waiting for disk space fails at its next try,
    /// as any disk error does, instead of holding the stop up.
    pub fn stop_disk_retries(&self) {
        self.cluster.stop_disk_retries();
    }

    /// The alarms up on this node (`nospace`), by name.
    pub fn alarms(&self) -> Vec<String> {
        self.cluster.alarms()
    }

    /// `exchange_alarm{alarm="nospace"}`: 1 while the alarm is up.
    pub fn write_alarm_metrics(&self, page: &mut crate::prometheus::Exposition) {
        self.cluster.write_alarm_metrics(page);
    }

    /// `NotLeader`, naming the leader, unless this node leads.
    pub fn check_leader(&self) -> Result<(), SubmitError> {
        if self.forwards || self.cluster.is_leader() {
            return Ok(());
        }
        let leader = self.cluster.leader_id();
        Err(SubmitError::NotLeader {
            leader,
            leader_url: leader.and_then(|id| self.cluster.leader_url(id)),
        })
    }

    fn enqueue(&self, submission: Submission) -> Result<(), SubmitError> {
        self.check_disk()?;
        self.check_leader()?;
        match self.submit.try_send(submission) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.metrics.overloaded.fetch_add(1, Ordering::Relaxed);
                Err(SubmitError::Overloaded)
            }
            Err(TrySendError::Disconnected(_)) => Err(SubmitError::Stopped),
        }
    }

    /// Queues a read for the core thread (see [`crate::reads`]).
    pub(crate) fn send_read(&self, read: Read) -> Result<(), SubmitError> {
        match self.core.try_send(CoreMsg::Read(read)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.metrics.overloaded.fetch_add(1, Ordering::Relaxed);
                Err(SubmitError::Overloaded)
            }
            Err(TrySendError::Disconnected(_)) => Err(SubmitError::Stopped),
        }
    }

    pub(crate) fn credentials(&self) -> &SharedCredentials {
        &self.credentials
    }

    /// The Raft index the core has applied: every committed entry up to
    /// it is in this node's state (and its journal, unless compacted).
    pub fn applied_raft_index(&self) -> u64 {
        self.cluster.raft_applied()
    }

    /// Waits until the core has applied past Raft index `above`, or for
    /// `timeout`, from a blocking thread; returns the index applied then.
    pub fn wait_applied_raft(&self, above: u64, timeout: std::time::Duration) -> u64 {
        self.cluster.wait_raft_applied(above, timeout)
    }

    /// Every applied entry with its events, in log order.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Applied>> {
        self.events.subscribe()
    }
}
