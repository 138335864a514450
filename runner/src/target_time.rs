//! How long a case waited on its target, so a benchmark can tell the harness's own time per case
//! from the target's. The runner owns it: a run notes the time whether or not a benchmark is
//! built in to read it.
//!
//! The runner notes the time its call spent in the target's hands (the round trip and any
//! follow-ups) with [`note_target_time`]; outside [`measured`] that is a no-op, so runs pay
//! nothing for it. A task-local rather than a field on the result: the figure is only wanted by
//! the benchmark, and results are written to reports.

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

tokio::task_local! {
    static TARGET_TIME: Cell<Option<Duration>>;
}

/// Adds `spent` to the target time of the case being measured, if one is.
pub fn note_target_time(spent: Duration) {
    let _ = TARGET_TIME.try_with(|cell| cell.set(Some(cell.get().unwrap_or_default() + spent)));
}

/// Runs `work` and returns its output with the target time noted while it ran (`None` when
/// nothing was noted: the case never reached its target).
pub async fn measured<F: Future>(work: F) -> (F::Output, Option<Duration>) {
    TARGET_TIME
        .scope(Cell::new(None), async {
            let output = work.await;
            (output, TARGET_TIME.with(Cell::get))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn noted_time_is_summed_inside_and_ignored_outside() {
        note_target_time(Duration::from_millis(5));
        let ((), noted) = measured(async {
            note_target_time(Duration::from_millis(2));
            note_target_time(Duration::from_millis(3));
        })
        .await;
        assert_eq!(noted, Some(Duration::from_millis(5)));
        let ((), none) = measured(async {}).await;
        assert_eq!(none, None);
    }
}
