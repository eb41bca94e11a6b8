//! The checks at the end of a run, once every replica converged.

use exchange_replication::sim::Machine;

use super::machine::Record;
use super::{Report, World};

impl World {
    /// Panics, naming the seed, on any violation; else what the run did.
    pub(super) fn check(&self, seed: u64) -> Report {
        let machines = self.cluster.machines();
        let (first_id, first) = machines[0];
        for (id, machine) in &machines {
            assert_eq!(
                machine.digest(),
                first.digest(),
                "seed {seed}: node {id}'s state differs from node {first_id}'s"
            );
            assert!(
                machine.record == first.record,
                "seed {seed}: node {id} applied other commands than node {first_id}"
            );
        }
        for process in self.gateways.iter().filter_map(|g| g.process.as_ref()) {
            assert!(
                process.clients.is_empty(),
                "seed {seed}: clients of session {} still wait after the faults ended",
                process.inflight.session
            );
        }
        self.check_answers(seed, &first.record);
        self.check_sessions(seed, &first.record);
        let ledger = &self.ledger;
        assert!(
            ledger.acked.len() >= super::world::MIN_ACKED,
            "seed {seed}: only {} commands acknowledged; the run proves little",
            ledger.acked.len()
        );
        Report {
            acked: ledger.acked.len(),
            refused: ledger.refused.len(),
            unknown: ledger.unknown.len(),
            gateway_crashes: ledger.gateway_crashes,
            renewals: ledger.renewals,
            stale: first.record.stale,
            duplicates: first.record.duplicates,
            last_index: first.applied(),
            trace_len: self.cluster.trace.len(),
        }
    }

    /// Each command a client heard applied is, at the index it heard;
    /// none it heard not applied is.
    fn check_answers(&self, seed: u64, record: &Record) {
        let ledger = &self.ledger;
        for (command, index) in &ledger.acked {
            let applied = record.applied.get(command).map(|(at, _)| *at);
            assert_eq!(
                applied,
                Some(*index),
                "seed {seed}: command {command} was acknowledged at index {index}"
            );
        }
        for (command, why) in &ledger.refused {
            assert!(
                !record.applied.contains_key(command),
                "seed {seed}: command {command} was answered {why} and applied at {:?}",
                record.applied.get(command)
            );
        }
    }

    /// A command is applied in the session it was sent in, and never after
    /// a later session of its gateway opened.
    fn check_sessions(&self, seed: u64, record: &Record) {
        let ledger = &self.ledger;
        for (command, (index, session)) in &record.applied {
            assert_eq!(
                ledger.sent.get(command),
                Some(session),
                "seed {seed}: command {command} applied in session {session}, not its own"
            );
            let gateway = ledger.gateway_of(*session);
            let sessions = &ledger.sessions[&gateway];
            let later = sessions
                .iter()
                .skip_while(|s| *s != session)
                .skip(1)
                .filter_map(|s| record.opens.get(s))
                .min();
            if let Some(opened) = later {
                assert!(
                    index < opened,
                    "seed {seed}: command {command} of session {session} applied at {index}, \
                     after a later session of its gateway opened at {opened}"
                );
            }
        }
    }
}
