//! The replica's alarms as its readers see them (health, status,
//! metrics, the write path): `nospace` while the Raft thread waits for
//! disk space (see `exchange_replication::DiskAlarm` and
//! docs/replication.md).

use std::sync::Arc;

use exchange_replication::DiskAlarm;

use super::ClusterShared;
use crate::prometheus::{Exposition, Kind};

/// The alarm a replica raises while a write its Raft state needs fails
/// for lack of disk space (see `exchange_replication::DiskAlarm`).
pub const NOSPACE: &str = "nospace";

impl ClusterShared {
    pub(crate) fn set_disk_alarm(&self, alarm: Arc<DiskAlarm>) {
        let _ = self.disk.set(alarm);
    }

    /// Whether this replica waits for disk space (the `nospace` alarm):
    /// it takes no writes until its pending write goes through.
    pub fn nospace(&self) -> bool {
        self.disk.get().is_some_and(|alarm| alarm.is_raised())
    }

    /// The alarms up now, by name.
    pub fn alarms(&self) -> Vec<String> {
        if self.nospace() {
            vec![NOSPACE.to_string()]
        } else {
            Vec::new()
        }
    }

    /// At a stop: a write waiting for space fails instead, so the stop
    /// does not wait for the disk.
    pub(crate) fn stop_disk_retries(&self) {
        if let Some(alarm) = self.disk.get() {
            alarm.stop_retrying();
        }
    }

    /// `exchange_alarm{alarm="nospace"}`: 1 while the alarm is up.
    pub(crate) fn write_alarm_metrics(&self, page: &mut Exposition) {
        page.family(
            "exchange_alarm",
            Kind::Gauge,
            "1 while the named alarm is up on this replica (nospace: its disk is full).",
        )
        .sample(&[("alarm", NOSPACE)], u64::from(self.nospace()));
    }
}
