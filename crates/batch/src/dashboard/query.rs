//! Reading what a request names: a job id in the path, and the query strings of the list,
//! the job page and the list's event stream. Every malformed value is
//! [`Error::BadRequest`] with a message naming it; nothing here panics.
//!
//! Unknown query keys are ignored; an empty value (`status=`) means "not given"; for a key
//! given twice, the last counts. A `limit` of any size is accepted and clamped later (see
//! [`crate::page`]); only a `limit` that is not a number is refused.

use super::error::Error;
use crate::job::{JobId, JobStatus};
use crate::page::{JobsQuery, MAX_PAGE, TargetKind, TargetsQuery};

/// A job id from the path: decimal digits only.
pub(crate) fn job_id(raw: &str) -> Result<JobId, Error> {
    number(raw)
        .and_then(|n| u64::try_from(n).ok())
        .map(JobId::new)
        .ok_or_else(|| Error::BadRequest(format!("malformed job id `{}`", shorten(raw))))
}

/// The list's query: `status`, `before`, `limit`.
pub(crate) fn jobs(query: Option<&str>) -> Result<JobsQuery, Error> {
    let mut out = JobsQuery::new();
    for (key, value) in pairs(query)? {
        match key.as_str() {
            "status" => {
                out.status = Some(JobStatus::parse(&value).ok_or_else(|| {
                    Error::BadRequest(format!(
                        "unknown status `{}`: one of queued, running, done, failed, partial, \
                         cancelled",
                        shorten(&value)
                    ))
                })?);
            }
            "before" => out.before = Some(cursor(&value, "before").map(JobId::new)?),
            "limit" => out.limit = Some(limit(&value)?),
            _ => {}
        }
    }
    Ok(out)
}

/// The job page's query: `state`, `after`, `limit`.
pub(crate) fn targets(query: Option<&str>) -> Result<TargetsQuery, Error> {
    let mut out = TargetsQuery::new();
    for (key, value) in pairs(query)? {
        match key.as_str() {
            "state" => {
                out.state = Some(match value.as_str() {
                    "pending" => TargetKind::Pending,
                    "done" => TargetKind::Done,
                    "failed" => TargetKind::Failed,
                    _ => {
                        return Err(Error::BadRequest(format!(
                            "unknown state `{}`: one of pending, done, failed",
                            shorten(&value)
                        )));
                    }
                });
            }
            "after" => {
                let after = cursor(&value, "after")?;
                out.after = Some(usize::try_from(after).map_err(|_| {
                    Error::BadRequest(format!("malformed cursor after=`{}`", shorten(&value)))
                })?);
            }
            "limit" => out.limit = Some(limit(&value)?),
            _ => {}
        }
    }
    Ok(out)
}

/// The list stream's query: `ids`, comma-separated, 1 to [`MAX_PAGE`] of them.
pub(crate) fn ids(query: Option<&str>) -> Result<Vec<JobId>, Error> {
    let mut ids = Vec::new();
    for (key, value) in pairs(query)? {
        if key == "ids" {
            ids = value.split(',').map(job_id).collect::<Result<_, _>>()?;
        }
    }
    if ids.is_empty() {
        return Err(Error::BadRequest("`ids` names no job".into()));
    }
    if ids.len() > MAX_PAGE {
        return Err(Error::BadRequest(format!(
            "`ids` names {} jobs, at most {MAX_PAGE}",
            ids.len()
        )));
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// Decimal digits as a number; `None` for anything else (empty, a sign, a space, too big).
fn number(raw: &str) -> Option<u128> {
    if raw.is_empty() || raw.len() > 30 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

fn cursor(value: &str, key: &str) -> Result<u64, Error> {
    number(value)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| Error::BadRequest(format!("malformed cursor {key}=`{}`", shorten(value))))
}

/// A `limit`: any run of digits (saturating: a huge one is clamped later, not refused).
fn limit(value: &str) -> Result<usize, Error> {
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        Ok(value.parse().unwrap_or(usize::MAX))
    } else {
        Err(Error::BadRequest(format!(
            "malformed limit `{}`: a number",
            shorten(value)
        )))
    }
}

/// The decoded `key=value` pairs of a query string, empty values left out.
fn pairs(query: Option<&str>) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (key, value) = (decode(key)?, decode(value)?);
        if !value.is_empty() {
            out.push((key, value));
        }
    }
    Ok(out)
}

/// Percent-decoding (and `+` as a space) of a query component.
fn decode(raw: &str) -> Result<String, Error> {
    let bad = || Error::BadRequest("malformed percent-encoding in the query".into());
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).ok_or_else(bad)?;
                let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

/// A value as quoted in a message: at most 40 characters of it.
fn shorten(value: &str) -> String {
    let mut short: String = value.chars().take(40).collect();
    if short.len() < value.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_digits_only() {
        assert_eq!(job_id("42").unwrap(), JobId::new(42));
        for bad in [
            "",
            "-1",
            "+1",
            " 1",
            "1x",
            "0x10",
            "99999999999999999999999",
        ] {
            assert!(matches!(job_id(bad), Err(Error::BadRequest(_))), "{bad}");
        }
    }

    #[test]
    fn a_huge_limit_is_accepted_and_clamped() {
        let query = jobs(Some("limit=1000000000000000000000000000000000")).unwrap();
        assert_eq!(query.page_len(), MAX_PAGE);
        assert!(jobs(Some("limit=ten")).is_err());
    }

    #[test]
    fn filters_and_cursors_parse_or_say_why_not() {
        let query = jobs(Some("status=running&before=7&limit=3&other=x")).unwrap();
        assert_eq!(query.status, Some(JobStatus::Running));
        assert_eq!(query.before, Some(JobId::new(7)));
        assert_eq!(jobs(Some("status=")).unwrap(), JobsQuery::new());
        let Err(Error::BadRequest(message)) = jobs(Some("status=%3Cscript%3E")) else {
            panic!("an unknown status is refused");
        };
        assert!(message.contains("<script>"), "{message}");
        assert!(jobs(Some("before=%zz")).is_err());
        let query = targets(Some("state=failed&after=9")).unwrap();
        assert_eq!(query.state, Some(TargetKind::Failed));
        assert_eq!(query.after, Some(9));
        assert!(targets(Some("state=lost")).is_err());
        assert!(targets(Some("after=-1")).is_err());
    }

    #[test]
    fn ids_are_bounded_and_deduplicated() {
        assert_eq!(
            ids(Some("ids=3,1,3")).unwrap(),
            vec![JobId::new(1), JobId::new(3)]
        );
        assert!(ids(None).is_err());
        assert!(ids(Some("ids=1,,2")).is_err());
        let many: Vec<String> = (0..=MAX_PAGE).map(|i| i.to_string()).collect();
        assert!(ids(Some(&format!("ids={}", many.join(",")))).is_err());
    }
}
