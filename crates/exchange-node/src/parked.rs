//! A bounded channel whose receiver waits by parking, never by yielding.
//!
//! crossbeam's blocking `recv` spins, then calls `sched_yield` a few
//! times, then parks. On a machine with fewer cores than runnable
//! threads the yields hurt the core thread: a yield that finds another
//! thread runnable (a gateway worker, the load generator, the reporter)
//! hands it the CPU, and the core thread stays runnable behind it. A
//! batch that Raft sends then finds no sleeper to wake, so nothing
//! preempts in the core thread's favour: the batch waits until the other
//! thread blocks or its slice ends. A parked receiver is woken by the
//! send itself, and the kernel lets a woken order-path thread (short
//! slice, see [`crate::threads`]) run at once. On the two-core benchmark
//! machine the single node's closed-loop capacity at 8 × 4 in flight went
//! from 59-63k to 67-72k orders/s (BENCHMARKS.md, bench e2e).
//!
//! The wake-up is a Dekker handshake on `sleeping`: the receiver raises
//! it and then looks at the queue once more before parking; a sender
//! pushes and then looks at `sleeping`. The `SeqCst` fences order each
//! side's write before its read, so at least one of them sees the other:
//! either the receiver finds the message or the sender unparks it.
//! `Thread::unpark` keeps a token, so an unpark that lands before the
//! `park` is not lost; a spurious return from `park` only loops.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Thread;

use crossbeam_channel::{RecvError, SendError, TryRecvError, TrySendError};

struct Bell {
    sleeping: AtomicBool,
    /// The thread parked on the queue, or that last was: a receiver may
    /// move between threads, but is not `Sync`, so one receives at a
    /// time.
    receiver: Mutex<Option<Thread>>,
}

impl Bell {
    /// Wakes the receiver if it is (about to be) parked.
    fn ring(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) {
            let parked = self
                .receiver
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(thread) = parked {
                thread.unpark();
            }
        }
    }
}

/// The sending half; clones share the queue.
pub struct Sender<T> {
    // Fields drop in declaration order: the queue first (the last
    // sender's drop disconnects it), then the bell rings, so a receiver
    // it wakes sees the disconnection instead of parking for good.
    inner: crossbeam_channel::Sender<T>,
    bell: RingOnDrop,
}

/// A sender's share of the bell, rung when the sender goes.
#[derive(Clone)]
struct RingOnDrop(Arc<Bell>);

impl Drop for RingOnDrop {
    fn drop(&mut self) {
        self.0.ring();
    }
}

/// The receiving half: `Send`, not `Sync`.
pub struct Receiver<T> {
    inner: crossbeam_channel::Receiver<T>,
    bell: Arc<Bell>,
    not_sync: PhantomData<Cell<()>>,
}

/// A channel holding at most `capacity` messages.
pub fn bounded<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    let bell = Arc::new(Bell {
        sleeping: AtomicBool::new(false),
        receiver: Mutex::new(None),
    });
    (
        Sender {
            inner: tx,
            bell: RingOnDrop(bell.clone()),
        },
        Receiver {
            inner: rx,
            bell,
            not_sync: PhantomData,
        },
    )
}

impl<T> Sender<T> {
    /// Sends, waiting for room if the queue is full.
    pub fn send(&self, message: T) -> Result<(), SendError<T>> {
        self.inner.send(message)?;
        self.bell.0.ring();
        Ok(())
    }

    /// Messages waiting (the queue depth the metrics show).
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Sends if there is room now.
    pub fn try_send(&self, message: T) -> Result<(), TrySendError<T>> {
        self.inner.try_send(message)?;
        self.bell.0.ring();
        Ok(())
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            inner: self.inner.clone(),
            bell: self.bell.clone(),
        }
    }
}

impl<T> Receiver<T> {
    /// The next message if one is queued.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.inner.try_recv()
    }

    /// The next message, parking until one comes; an error once every
    /// sender is gone and the queue is empty.
    pub fn recv(&self) -> Result<T, RecvError> {
        loop {
            match self.inner.try_recv() {
                Ok(message) => return Ok(message),
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => {}
            }
            *self
                .bell
                .receiver
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(std::thread::current());
            self.bell.sleeping.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            let found = self.inner.try_recv();
            if let Err(TryRecvError::Empty) = found {
                std::thread::park();
            }
            self.bell.sleeping.store(false, Ordering::Relaxed);
            match found {
                Ok(message) => return Ok(message),
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Runs `work` on a thread and returns what it returns, failing the
    /// test if it takes more than 10 s: a lost wake-up parks for good.
    fn within<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> R {
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(work());
        });
        result
            .recv_timeout(Duration::from_secs(10))
            .expect("the receiver was never woken")
    }

    #[test]
    fn messages_arrive_in_order_across_parks() {
        let (tx, rx) = bounded::<u64>(4);
        let sender = std::thread::spawn(move || {
            for n in 0..2_000u64 {
                if n % 500 == 0 {
                    // Give the receiver time to park, so sends also meet
                    // a sleeper, not only a busy receiver.
                    std::thread::sleep(Duration::from_millis(2));
                }
                tx.send(n).unwrap();
            }
        });
        let got = within(move || {
            let mut got = Vec::new();
            while let Ok(n) = rx.recv() {
                got.push(n);
            }
            got
        });
        sender.join().unwrap();
        assert_eq!(got, (0..2_000).collect::<Vec<_>>());
    }

    #[test]
    fn a_parked_receiver_sees_the_last_sender_go() {
        let (tx, rx) = bounded::<u8>(1);
        let other = tx.clone();
        let (outcome_tx, outcome) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = outcome_tx.send(rx.recv());
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(other);
        assert!(
            outcome.recv_timeout(Duration::from_millis(50)).is_err(),
            "one sender is left, so the receiver still waits"
        );
        drop(tx);
        let last = outcome
            .recv_timeout(Duration::from_secs(10))
            .expect("the receiver was never woken");
        assert_eq!(last, Err(RecvError));
    }

    #[test]
    fn many_senders_lose_no_wakeup() {
        let (tx, rx) = bounded::<u32>(2);
        let senders: Vec<_> = (0..4u32)
            .map(|s| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for n in 0..5_000u32 {
                        tx.send(s * 10_000 + n).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        let count = within(move || {
            let mut count = 0;
            let mut last = [None::<u32>; 4];
            while let Ok(v) = rx.recv() {
                let (s, n) = ((v / 10_000) as usize, v % 10_000);
                assert!(
                    last[s].map_or(n == 0, |prev| n == prev + 1),
                    "per-sender order"
                );
                last[s] = Some(n);
                count += 1;
            }
            count
        });
        for sender in senders {
            sender.join().unwrap();
        }
        assert_eq!(count, 20_000);
    }

    #[test]
    fn try_send_wakes_a_parked_receiver_and_reports_a_full_queue() {
        let (tx, rx) = bounded::<u8>(1);
        let sender = std::thread::spawn(move || {
            // Long enough for the receiver to park first.
            std::thread::sleep(Duration::from_millis(20));
            tx.try_send(1).unwrap();
            tx
        });
        let (rx, first) = within(move || {
            let first = rx.recv();
            (rx, first)
        });
        assert_eq!(first, Ok(1));
        let tx = sender.join().unwrap();
        tx.try_send(2).unwrap();
        assert!(matches!(tx.try_send(3), Err(TrySendError::Full(3))));
        assert_eq!(rx.recv(), Ok(2));
        drop(rx);
        assert!(matches!(tx.try_send(4), Err(TrySendError::Disconnected(4))));
    }
}
