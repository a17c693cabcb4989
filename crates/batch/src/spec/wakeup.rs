//! [`wakeup_agrees`]: which `next_wakeup` answers the contract allows beside the reference's.

use super::Rules;
use crate::store::Timestamp;

/// How a store's `next_wakeup` answer is one the docs allow, if it is, given the reference's
/// `expected` (earliest lease end, or retry time still to come), its `passed` retry times,
/// and whether `claims_out`: the expected time; or a retry time that has come of a job a
/// claim now finds (no later than the expected one, as the earliest); or, as `rules` allow,
/// a lease end on the store's own clock or a fallback poll time.
pub(crate) fn wakeup_agrees(
    expected: Option<Timestamp>,
    passed: &[Timestamp],
    got: Option<Timestamp>,
    now: Timestamp,
    claims_out: bool,
    rules: &Rules,
) -> Option<&'static str> {
    if got == expected {
        return Some("as the reference");
    }
    let at = got?;
    if passed.contains(&at) && expected.is_none_or(|e| at <= e) {
        return Some("a retry time that has come");
    }
    // The store converts its lease ends from a clock the reference cannot follow: while a
    // claim is out, any time up to a lease ahead, and no later than the reference's.
    if let Some(lease) = rules.lease_on_store_clock
        && claims_out
        && at >= now
        && at <= now.saturating_add(lease)
        && expected.is_none_or(|e| at <= e)
    {
        return Some("a lease end on the store's clock");
    }
    if let Some(poll) = rules.fallback_poll
        && at > now
        && at <= now.saturating_add(poll)
        && expected.is_none_or(|e| at < e)
    {
        return Some("the fallback poll");
    }
    None
}

/// The leeway of [`wakeup_agrees`], checked on its own: our PostgreSQL spec, the only one
/// with such a leeway, runs only with a server, and a leeway too wide would let it pass
/// anything. A store may give a lease end on its own clock up to a lease ahead while a claim
/// is out, or its poll up to the poll interval ahead, never later than the reference's own
/// wake-up; an exact store gets neither.
#[cfg(test)]
#[test]
fn wakeup_agrees_within_what_the_docs_allow() {
    use std::time::Duration;

    const LEASE_END: Option<&str> = Some("a lease end on the store's clock");
    const POLL: Option<&str> = Some("the fallback poll");
    let now = Timestamp::from_micros(1_700_000_000_000_000);
    let ahead = |secs| now.saturating_add(Duration::from_secs(secs));
    let exact = Rules::owned();
    let shared = Rules::shared()
        .fallback_poll(Duration::from_secs(10))
        .lease_on_store_clock(Duration::from_secs(60));
    let agrees = |got, expected, claims_out, rules| {
        wakeup_agrees(expected, &[], Some(got), now, claims_out, &rules)
    };
    // The reference's own wake-up, and a retry time that has come, for every store.
    for rules in [exact, shared] {
        assert_eq!(
            agrees(ahead(99), Some(ahead(99)), false, rules),
            Some("as the reference")
        );
        let passed = [ahead(1)];
        let retry = wakeup_agrees(Some(ahead(5)), &passed, Some(ahead(1)), now, false, &rules);
        assert_eq!(retry, Some("a retry time that has come"));
    }
    // A lease end: while a claim is out, from now up to a lease ahead.
    assert_eq!(agrees(now, None, true, shared), LEASE_END);
    assert_eq!(agrees(ahead(60), None, true, shared), LEASE_END);
    assert_eq!(agrees(ahead(61), None, true, shared), None);
    assert_eq!(agrees(ahead(30), None, false, shared), None, "no claim out");
    assert_eq!(agrees(ahead(30), Some(ahead(20)), true, shared), None);
    // The poll: after now, up to the poll interval ahead, before the reference's wake-up.
    assert_eq!(agrees(ahead(10), None, false, shared), POLL);
    assert_eq!(agrees(ahead(9), Some(ahead(10)), false, shared), POLL);
    assert_eq!(agrees(ahead(11), None, false, shared), None);
    assert_eq!(agrees(now, None, false, shared), None);
    assert_eq!(agrees(ahead(10), Some(ahead(9)), false, shared), None);
    // An exact store: nothing but the reference's wake-up and a retry time that has come.
    for (got, claims_out) in [(now, true), (ahead(10), false), (ahead(60), true)] {
        assert_eq!(agrees(got, None, claims_out, exact), None);
    }
}
