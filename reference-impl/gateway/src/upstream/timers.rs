//! Timers kept between an upstream's requests, in the `accel` build; the default build bounds
//! each request with `tokio::time::timeout`, which these timers bound exactly as (the tests).

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::Poll;
use std::time::{Duration, Instant};

/// `timeout` after `started`, or (past what an `Instant` holds) the far future
/// `tokio::time::timeout` takes then: about 30 years.
fn deadline(started: Instant, timeout: Duration) -> tokio::time::Instant {
    let started = tokio::time::Instant::from_std(started);
    started
        .checked_add(timeout)
        .unwrap_or_else(|| started + Duration::from_secs(86400 * 365 * 30))
}

/// Timers kept between an upstream's requests. A timer armed afresh for each request (as
/// `tokio::time::timeout` arms one) is earlier than anything else in the runtime's timer
/// wheel whenever no other timer is armed, the usual case between two small calls, and then
/// the runtime wakes its own driver to re-arm: an eventfd write and one more `epoll_wait`
/// round per call. A kept timer moved to a later deadline only has its date changed in place;
/// the wheel finds the new date when the old one comes, at most about once per timeout.
#[derive(Default)]
pub(super) struct Timers(Mutex<Vec<Pin<Box<tokio::time::Sleep>>>>);

/// Timers kept at most: as many as requests were once in flight together, up to this.
const TIMERS_KEPT: usize = 64;

impl Timers {
    /// `fut`'s output, or `None` if `timeout` after `started` passes first: the future is
    /// polled first, then its deadline, as `tokio::time::timeout` does.
    pub(super) async fn within<F: Future>(
        &self,
        started: Instant,
        timeout: Duration,
        fut: F,
    ) -> Option<F::Output> {
        let mut timer = self.take(deadline(started, timeout));
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(out));
            }
            timer.sleep().poll(cx).map(|()| None)
        })
        .await
    }

    fn take(&self, deadline: tokio::time::Instant) -> Kept<'_> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let sleep = match kept {
            Some(mut sleep) => {
                sleep.as_mut().reset(deadline);
                sleep
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        };
        Kept {
            timers: self,
            sleep: Some(sleep),
        }
    }
}

/// A timer lent to one request; it goes back when the request ends, answered or not.
struct Kept<'a> {
    timers: &'a Timers,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Kept<'_> {
    fn sleep(&mut self) -> Pin<&mut tokio::time::Sleep> {
        self.sleep
            .as_mut()
            .expect("a lent timer is only taken back on drop")
            .as_mut()
    }
}

impl Drop for Kept<'_> {
    fn drop(&mut self) {
        let Some(sleep) = self.sleep.take() else {
            return;
        };
        let mut kept = self.timers.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < TIMERS_KEPT {
            kept.push(sleep);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::time::{Duration, Instant};

    use super::Timers;

    /// Both ways of bounding `fut` by `timeout`: a kept timer and `tokio::time::timeout`.
    async fn both<F: Future>(
        timers: &Timers,
        timeout: Duration,
        fut: impl Fn() -> F,
    ) -> (Option<F::Output>, Option<F::Output>) {
        let kept = timers.within(Instant::now(), timeout, fut()).await;
        let plain = tokio::time::timeout(timeout, fut()).await.ok();
        (kept, plain)
    }

    /// An answer ready at once wins even against a deadline already passed; one that never
    /// comes times out; one that comes before its deadline wins, also on a timer kept from a
    /// request that timed out, moved to a later deadline; a timeout past what an `Instant`
    /// holds never fires.
    #[tokio::test]
    async fn a_kept_timer_bounds_as_tokio_timeout_does() {
        let timers = Timers::default();
        let (kept, plain) = both(&timers, Duration::ZERO, || async { 7 }).await;
        assert_eq!((kept, plain), (Some(7), Some(7)));
        let (kept, plain) = both(
            &timers,
            Duration::from_millis(20),
            std::future::pending::<u8>,
        )
        .await;
        assert_eq!((kept, plain), (None, None));
        let late = || async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            3
        };
        let (kept, plain) = both(&timers, Duration::from_secs(5), late).await;
        assert_eq!((kept, plain), (Some(3), Some(3)));
        let (kept, plain) = both(&timers, Duration::MAX, late).await;
        assert_eq!((kept, plain), (Some(3), Some(3)));
        let (kept, plain) = both(&timers, Duration::from_millis(10), late).await;
        assert_eq!((kept, plain), (None, None));
    }
}
