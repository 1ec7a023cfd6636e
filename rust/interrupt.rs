//! Stopping long work early. The caller installs a poll on its own thread with [`run_polling`] (the
//! Python binding asks the interpreter whether a signal handler raised, see `python/mod.rs`); long
//! loops on that thread call [`checkpoint`], which polls at most every [`POLL_INTERVAL`] and turns a "stop" into
//! [`FusionError::Interrupted`]. Threads the work spawns stop when the loop that feeds them does.
//!
//! A loop whose steps are tiny (one sign flip of a few queries) counts its work with a [`Ticker`],
//! which calls [`checkpoint`] once per [`WORK_PER_CHECK`] units: a loop's running time is bounded by
//! its input or its iteration count, never by a check left out, so every loop that a caller's number
//! or file can make long takes one.
//!
//! A poll per thread rather than a process-wide signal handler: the host (Python) owns the signal
//! handlers, and only its main thread can run them.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::FusionError;

/// How often [`checkpoint`] polls: well under the second a user waits after Ctrl-C, rare enough that
/// taking the GIL for the poll costs nothing measurable.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

struct Poller {
    poll: Box<dyn Fn() -> bool>,
    next: Instant,
    stopped: bool,
    /// Set with `stopped`, for the threads the work spawns (see [`follow`]).
    shared: Arc<AtomicBool>,
}

thread_local! {
    static POLLER: RefCell<Option<Poller>> = const { RefCell::new(None) };
}

/// Runs `work` with `poll` installed for this thread: [`checkpoint`] calls it, and once it returns
/// true every later checkpoint of `work` fails. The previous poll (if any) is restored afterwards.
pub fn run_polling<T>(poll: Box<dyn Fn() -> bool>, work: impl FnOnce() -> T) -> T {
    struct Restore(Option<Poller>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            POLLER.with(|p| *p.borrow_mut() = previous);
        }
    }
    let installed =
        Poller { poll, next: Instant::now() + POLL_INTERVAL, stopped: false, shared: Arc::new(AtomicBool::new(false)) };
    let _restore = Restore(POLLER.with(|p| p.borrow_mut().replace(installed)));
    work()
}

/// Fails with [`FusionError::Interrupted`] once the poll installed on this thread asked to stop;
/// without one it never fails. Cheap enough to call once per query group.
pub fn checkpoint() -> Result<(), FusionError> {
    // Ok: the poller, due to poll; Err: whether it already asked to stop (false without one).
    let due = POLLER.with(|p| {
        let mut slot = p.borrow_mut();
        match slot.as_ref() {
            Some(poller) if !poller.stopped && Instant::now() >= poller.next => slot.take().ok_or(false),
            poller => Err(poller.is_some_and(|poller| poller.stopped)),
        }
    });
    let stop = match due {
        // The poll runs the host's code (a signal handler, a progress callback), which may call the
        // core again on this thread: the poller is out of its slot meanwhile, so that call installs
        // and restores its own instead of finding this one borrowed.
        Ok(mut poller) => {
            poller.stopped = (poller.poll)();
            poller.next = Instant::now() + POLL_INTERVAL;
            poller.shared.store(poller.stopped, Ordering::Relaxed);
            let stopped = poller.stopped;
            POLLER.with(|p| *p.borrow_mut() = Some(poller));
            stopped
        }
        Err(stopped) => stopped,
    };
    if stop {
        Err(FusionError::Interrupted)
    } else {
        Ok(())
    }
}

/// The stop of this thread's work, to hand to the threads it spawns; never set where no poll is installed.
#[must_use]
pub fn stop_signal() -> Arc<AtomicBool> {
    POLLER.with(|p| p.borrow().as_ref().map_or_else(|| Arc::new(AtomicBool::new(false)), |p| Arc::clone(&p.shared)))
}

/// Runs `work` on a thread the polling thread spawned, so that its [`checkpoint`]s fail once the
/// polling thread saw a stop ([`stop_signal`] of that thread), as its own do.
pub fn follow<T>(stop: Arc<AtomicBool>, work: impl FnOnce() -> T) -> T {
    run_polling(Box::new(move || stop.load(Ordering::Relaxed)), work)
}

/// Units of work (additions, hits, lines) between two checks of a [`Ticker`]: some tens of
/// microseconds, so the check costs nothing measurable and a stop is still seen within the interval.
pub const WORK_PER_CHECK: u64 = 1 << 16;

/// Calls [`checkpoint`] once per [`WORK_PER_CHECK`] units of work counted with [`Ticker::tick`].
#[derive(Debug, Default)]
pub struct Ticker {
    work: u64,
}

impl Ticker {
    #[must_use]
    pub const fn new() -> Self {
        Self { work: 0 }
    }

    /// Counts `units` of work done; fails with [`FusionError::Interrupted`] once a stop was asked for.
    pub fn tick(&mut self, units: usize) -> Result<(), FusionError> {
        self.work += units.max(1) as u64;
        if self.work < WORK_PER_CHECK {
            return Ok(());
        }
        self.work = 0;
        checkpoint()
    }
}

/// Like [`checkpoint`], but polls now whatever the interval: for a last poll before work that cannot
/// be taken back (replacing an output file).
pub fn poll_now() -> Result<(), FusionError> {
    POLLER.with(|p| {
        if let Some(poller) = p.borrow_mut().as_mut() {
            poller.next = Instant::now();
        }
    });
    checkpoint()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn without_a_poll_nothing_is_interrupted() {
        assert_eq!(checkpoint(), Ok(()));
    }

    #[test]
    fn a_stop_is_seen_within_one_interval_and_sticks_until_the_work_ends() {
        let stop = Arc::new(AtomicBool::new(false));
        let polled = Rc::new(std::cell::Cell::new(0_u32));
        let (flag, count) = (Arc::clone(&stop), Rc::clone(&polled));
        let outcome = run_polling(
            Box::new(move || {
                count.set(count.get() + 1);
                flag.load(Ordering::Relaxed)
            }),
            || {
                assert_eq!(checkpoint(), Ok(()), "the first poll is one interval away");
                stop.store(true, Ordering::Relaxed);
                let started = Instant::now();
                while checkpoint().is_ok() {
                    assert!(started.elapsed() < POLL_INTERVAL * 20, "the stop was never seen");
                }
                let polls = polled.get();
                assert_eq!(checkpoint(), Err(FusionError::Interrupted));
                assert_eq!(polled.get(), polls, "no poll after the stop");
                "stopped"
            },
        );
        assert_eq!(outcome, "stopped");
        assert_eq!(checkpoint(), Ok(()), "the poll is removed with the work");
    }

    #[test]
    fn a_spawned_thread_that_follows_stops_with_the_polling_thread() {
        let outcome = run_polling(Box::new(|| true), || {
            let stop = stop_signal();
            std::thread::scope(|scope| {
                let follower = scope.spawn(|| {
                    follow(stop, || -> Result<(), FusionError> {
                        loop {
                            checkpoint()?;
                            std::thread::sleep(POLL_INTERVAL / 10);
                        }
                    })
                });
                std::thread::sleep(POLL_INTERVAL * 2);
                assert_eq!(checkpoint(), Err(FusionError::Interrupted));
                follower.join().expect("no panic")
            })
        });
        assert_eq!(outcome, Err::<(), _>(FusionError::Interrupted));
    }

    #[test]
    fn a_poll_may_run_work_that_polls_on_the_same_thread() {
        let nested = Rc::new(std::cell::Cell::new(0_u32));
        let count = Rc::clone(&nested);
        let outcome = run_polling(
            Box::new(move || {
                // What a progress callback or a signal handler that calls the core does.
                let inner = run_polling(Box::new(|| false), || {
                    std::thread::sleep(POLL_INTERVAL * 2);
                    checkpoint()
                });
                count.set(count.get() + 1);
                inner.is_err()
            }),
            || {
                std::thread::sleep(POLL_INTERVAL * 2);
                checkpoint()?;
                std::thread::sleep(POLL_INTERVAL * 2);
                checkpoint()
            },
        );
        assert_eq!(outcome, Ok(()));
        assert_eq!(nested.get(), 2, "each checkpoint of the outer work polled once");
        assert_eq!(checkpoint(), Ok(()), "the outer poll is removed with the work");
    }

    #[test]
    fn a_ticker_checks_once_per_work_quantum_and_sees_the_stop() {
        let polled = Rc::new(std::cell::Cell::new(0_u32));
        let count = Rc::clone(&polled);
        let outcome = run_polling(
            Box::new(move || {
                count.set(count.get() + 1);
                true
            }),
            || {
                let mut ticker = Ticker::new();
                // Work below one quantum never reaches the poll, however long it takes.
                std::thread::sleep(POLL_INTERVAL * 2);
                for _ in 0..(WORK_PER_CHECK / 8 - 1) {
                    ticker.tick(8)?;
                }
                assert_eq!(polled.get(), 0);
                ticker.tick(8)
            },
        );
        assert_eq!(outcome, Err(FusionError::Interrupted));
        assert_eq!(polled.get(), 1);
    }
}
