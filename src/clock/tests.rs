use super::{Clock, FixedClock, SharedClock, TokioClock};
use chrono::TimeDelta;
use std::sync::Arc;

#[test]
fn a_fixed_clock_moves_only_when_told() {
    let clock = FixedClock::at(super::test_epoch());
    assert_eq!(clock.now(), super::test_epoch());
    clock.advance(TimeDelta::minutes(5));
    assert_eq!(clock.now(), super::test_epoch() + TimeDelta::minutes(5));
    clock.set(super::test_epoch());
    assert_eq!(clock.now(), super::test_epoch());
}

#[test]
fn a_closure_is_a_clock() {
    let at = super::test_epoch();
    let clock: SharedClock = Arc::new(move || at);
    assert_eq!(clock.now(), at);
}

#[tokio::test(start_paused = true)]
async fn a_tokio_clock_follows_paused_time() {
    let clock = TokioClock::starting_at(super::test_epoch());
    assert_eq!(clock.now(), super::test_epoch());
    tokio::time::advance(std::time::Duration::from_secs(90)).await;
    assert_eq!(clock.now(), super::test_epoch() + TimeDelta::seconds(90));
}
