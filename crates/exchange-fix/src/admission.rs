//! Slots for connections that have not logged on yet: a bound for all of
//! them together, and a smaller one for each source, so that one address
//! holding idle connections cannot take the slots every other
//! counterparty needs to log on. A session that has logged on holds no
//! slot, so nothing here can ever displace it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use exchange_node::source::source_of;

/// Where a connection comes from, as the per-source bound counts it
/// ([`source_of`]: an IPv4 address, or an IPv6 /64), the same grouping as
/// the HTTP gateway's connection limit and failure budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Source(IpAddr);

impl Source {
    pub fn of(addr: IpAddr) -> Source {
        Source(source_of(addr))
    }
}

/// Why a connection got no slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// Every slot is taken.
    All,
    /// Its source holds its whole share.
    Source,
}

#[derive(Default)]
struct Counts {
    total: usize,
    /// Only sources holding at least one slot: at most `max_total` entries.
    by_source: HashMap<Source, usize>,
}

/// The pre-logon slots; cheap to clone into each connection's task.
#[derive(Clone)]
pub struct Admission {
    max_total: usize,
    max_per_source: usize,
    counts: Arc<Mutex<Counts>>,
}

impl Admission {
    pub fn new(max_total: usize, max_per_source: usize) -> Admission {
        Admission {
            max_total: max_total.max(1),
            max_per_source: max_per_source.max(1),
            counts: Arc::default(),
        }
    }

    /// A slot for a connection from `peer`, held until the slot is dropped.
    pub fn admit(&self, peer: IpAddr) -> Result<Slot, Full> {
        let source = Source::of(peer);
        // A poisoned lock only means a task panicked mid-update; the
        // counts are updated in one step, so they are still right.
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let held = counts.by_source.get(&source).copied().unwrap_or(0);
        if held >= self.max_per_source {
            return Err(Full::Source);
        }
        if counts.total >= self.max_total {
            return Err(Full::All);
        }
        counts.total += 1;
        counts.by_source.insert(source, held + 1);
        Ok(Slot {
            source,
            counts: self.counts.clone(),
        })
    }

    /// Slots held now, by everyone and by `peer`'s source.
    pub fn held(&self, peer: IpAddr) -> (usize, usize) {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let mine = counts.by_source.get(&Source::of(peer)).copied();
        (counts.total, mine.unwrap_or(0))
    }
}

/// One connection's pre-logon slot; given back when dropped.
pub struct Slot {
    source: Source,
    counts: Arc<Mutex<Counts>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.total = counts.total.saturating_sub(1);
        if let Some(held) = counts.by_source.get_mut(&self.source) {
            *held -= 1;
            if *held == 0 {
                counts.by_source.remove(&self.source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    #[test]
    fn sources_group_ipv6_by_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(
            Source::of(ip("::ffff:10.0.0.1")),
            Source::of(ip("10.0.0.1"))
        );
        assert_eq!(
            Source::of(ip("2001:db8:1:2::1")),
            Source::of(ip("2001:db8:1:2:ffff::9"))
        );
        assert_ne!(
            Source::of(ip("2001:db8:1:2::1")),
            Source::of(ip("2001:db8:1:3::1"))
        );
        assert_ne!(Source::of(ip("10.0.0.1")), Source::of(ip("10.0.0.2")));
    }

    #[test]
    fn one_source_gets_its_share_and_others_still_get_slots() {
        let admission = Admission::new(4, 2);
        let a = ip("10.0.0.1");
        let held: Vec<Slot> = (0..2).map(|_| admission.admit(a).expect("slot")).collect();
        assert_eq!(admission.admit(a).err(), Some(Full::Source));
        // The same host over a mapped address is the same source.
        assert_eq!(
            admission.admit(ip("::ffff:10.0.0.1")).err(),
            Some(Full::Source)
        );
        let b = admission.admit(ip("10.0.0.2")).expect("another source");
        let c = admission.admit(ip("10.0.0.3")).expect("another source");
        assert_eq!(admission.admit(ip("10.0.0.4")).err(), Some(Full::All));
        assert_eq!(admission.held(a), (4, 2));
        drop(held);
        assert_eq!(admission.held(a), (2, 0));
        let _again = admission.admit(a).expect("slots come back");
        drop((b, c));
        assert_eq!(admission.held(ip("10.0.0.2")), (1, 0));
    }
}
